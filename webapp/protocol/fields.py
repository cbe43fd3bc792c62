"""The optional fields of a URL: lastmod in W3C Datetime (§1.4), changefreq and priority
(§1.5, §1.6), and the extensions' rules (§4: images, alternates by hreflang)."""

from __future__ import annotations

import functools
import math
import re
from datetime import UTC, date, datetime, timedelta, timezone

from webapp.errors import RuleText, ShownUrl, rule_text
from webapp.protocol.common import CHANGEFREQS, MAX_IMAGES_PER_URL, ProtocolError


# --- lastmod in W3C Datetime (§1.4) ------------------------------------------------------------

_W3C = re.compile(
    r"(\d{4})(?:-(\d{2})(?:-(\d{2})"
    r"(?:[Tt ](\d{2}):(\d{2})(?::(\d{2})(?:\.\d+)?)?\s*([Zz]|[+-]\d{2}:?\d{2})?)?)?)?"
)
LASTMOD_RULE = rule_text("is not a W3C Datetime; use YYYY-MM-DD or YYYY-MM-DDThh:mm:ss+hh:mm "
                         "(YYYY, YYYY-MM and times without seconds are accepted too)")
# A date a person or a file gives (lastmod, a news article's publication date) says when
# something happened, so it cannot be ahead of now; a day of slack covers every time zone's
# reading of a date or a time written without a zone (UTC-12 to UTC+14).
AHEAD_SLACK = timedelta(days=1)
AHEAD_RULE = rule_text("must not be more than a day in the future (the day allows for every "
                       "time zone)")


def _cache_text(maxsize: int):
    """Remember a rule's answers for text: imported files repeat the same values many times."""

    def decorate(rule):
        cached = functools.lru_cache(maxsize)(rule)

        @functools.wraps(rule)
        def normalize(raw):
            return cached(raw) if isinstance(raw, str) else rule(raw)

        return normalize

    return decorate


@_cache_text(65536)
def normalize_lastmod(raw: str | date | None) -> str | None:
    """W3C Datetime in, `YYYY-MM-DD` or `YYYY-MM-DDThh:mm:ss+00:00` out.

    Every W3C form is accepted. `YYYY` and `YYYY-MM` become the first day of the period; a time
    is converted to UTC and fractions of a second are dropped. A time without a zone is taken as
    UTC, because W3C Datetime requires a zone and UTC is the only reading that needs no guess.
    """
    if raw is None:
        return None
    if isinstance(raw, datetime):
        return _utc_text(raw if raw.tzinfo else raw.replace(tzinfo=UTC), raw)
    if isinstance(raw, date):
        return raw.isoformat()
    text = raw.strip()
    if not text:
        return None
    match = _W3C.fullmatch(text)
    if match is None:
        raise ProtocolError("lastmod", raw, LASTMOD_RULE)
    year, month, day, hour, minute, second, zone = match.groups()
    try:
        day_value = date(int(year), int(month or 1), int(day or 1))
        if hour is None:
            return day_value.isoformat()
        offset = timedelta(0)
        if zone and zone not in "Zz":
            sign = -1 if zone[0] == "-" else 1
            hours, minutes = int(zone[1:3]), int(zone[-2:])
            if hours > 14 or minutes > 59:
                raise ValueError("offset out of range")
            offset = sign * timedelta(hours=hours, minutes=minutes)
        moment = datetime(day_value.year, day_value.month, day_value.day,
                          int(hour), int(minute), int(second or 0), tzinfo=timezone(offset))
    except ValueError:
        raise ProtocolError("lastmod", raw, rule_text(
            "is not a real date and time (month 01-12, a day that exists, hour 00-23)")) from None
    return _utc_text(moment, raw)


def latest_accepted(now: datetime | None = None) -> str:
    """The latest normalised date text `not_ahead` accepts at `now` (default: the clock)."""
    now = datetime.now(UTC) if now is None else now.astimezone(UTC)
    return _utc_text(now + AHEAD_SLACK, now)


def not_ahead(field: str, raw: object, value: str | None, latest: str | None = None) -> str | None:
    """A normalised date (`YYYY-MM-DD`, or a time in UTC) that is at most a day ahead of now
    (`latest`: latest_accepted's text, for a run of many), or ProtocolError naming the field.
    A day alone is read as its start, so today's date anywhere on Earth passes."""
    if value is None:
        return None
    moment = value if len(value) > 10 else f"{value}T00:00:00+00:00"
    if moment > (latest or latest_accepted()):  # one format, so text order is time order
        raise ProtocolError(field, raw, AHEAD_RULE)
    return value


def check_lastmod(raw: str | date | None) -> str | None:
    """A lastmod as given (a form, the command line, a file, the API): W3C Datetime, normalised
    (normalize_lastmod), and not more than a day ahead of now. Dates this app finds itself
    (verification's, a generation's) are normalised only."""
    return not_ahead("lastmod", raw, normalize_lastmod(raw))


def _utc_text(moment: datetime, raw: object) -> str:
    try:
        utc = moment.astimezone(UTC)
    except OverflowError:
        raise ProtocolError("lastmod", raw, rule_text(
            "falls outside the years 0001 to 9999 in UTC")) from None
    # isoformat pads the year to four digits where strftime("%Y") does not.
    return utc.replace(microsecond=0, tzinfo=None).isoformat() + "+00:00"


# --- changefreq and priority (§1.5, §1.6) -------------------------------------------------------


_CHANGEFREQ_EXACT = {value: value for value in CHANGEFREQS} | {"": None}


def normalize_changefreq(raw: str | None) -> str | None:
    """One of the seven values, lower case; empty means none."""
    if raw in _CHANGEFREQ_EXACT:
        return _CHANGEFREQ_EXACT[raw]
    if raw is None or not raw.strip():
        return None
    value = raw.strip().lower()
    if value not in CHANGEFREQS:
        raise ProtocolError("changefreq", raw, rule_text("must be one of %(choices)s",
                                                          choices=", ".join(CHANGEFREQS)))
    return value


_DECIMAL = re.compile(r"\d*\.?\d*")


@_cache_text(4096)
def normalize_priority(raw: str | float | None) -> float | None:
    """A decimal from 0.0 to 1.0 with at most three decimal places; empty means none."""
    if raw is None:
        return None
    if isinstance(raw, str):
        text = raw.strip()
        if not text:
            return None
        if not _DECIMAL.fullmatch(text) or text == ".":
            raise ProtocolError("priority", raw, rule_text(
                "must be a decimal number from 0.0 to 1.0"))
        value = float(text)
    else:
        value = float(raw)
    if math.isnan(value) or not 0.0 <= value <= 1.0:
        raise ProtocolError("priority", raw, rule_text(
            "must be from 0.0 to 1.0 (0.5 is the default)"))
    if round(value, 3) != value:
        raise ProtocolError("priority", raw, rule_text("may have at most three decimal places"))
    return value


def format_priority(value: float) -> str:
    """`0.8`, `1.0`, `0.65`: one decimal place where that is exact, else as few as needed."""
    if round(value, 1) == value:
        return f"{value:.1f}"
    return f"{value:.3f}".rstrip("0")


# The optional fields of a URL and the rule each one follows as input.
FIELD_RULES = {
    "lastmod": check_lastmod,
    "changefreq": normalize_changefreq,
    "priority": normalize_priority,
}


# --- Extensions (§4) ----------------------------------------------------------------------------

_HREFLANG = re.compile(r"x-default|[a-z]{2,3}(?:-[a-z]{4})?(?:-(?:[a-z]{2}|\d{3}))?",
                       re.IGNORECASE | re.ASCII)


LANG_URL_RULE = rule_text("must be written as LANG=URL, e.g. de=https://...")


def too_many_images() -> RuleText:
    return rule_text("a URL may have at most %(limit)s", limit=MAX_IMAGES_PER_URL)


def lists_itself(loc: str) -> RuleText:
    """The rule of an hreflang cluster that leaves out the page that lists it."""
    return rule_text("must include %(loc)s itself with its own language, e.g. en=%(loc)s",
                     loc=ShownUrl(loc))


def one_url_per_language(lang: str, one: str, other: str) -> RuleText:
    """The rule of a cluster that gives one language two pages: search engines cannot tell
    which to show, so every path refuses it rather than keep one of them."""
    return rule_text("gives the language %(lang)s two URLs, %(one)s and %(other)s: hreflang "
                     "allows one URL per language", lang=lang, one=ShownUrl(one),
                     other=ShownUrl(other))


def normalize_hreflang(raw: str) -> str:
    """`x-default`, or an ISO 639-1 language with an optional script and an ISO 3166-1
    alpha-2 region: `de`, `de-CH`, `zh-Hant`, `zh-Hant-TW`."""
    value = (raw or "").strip()
    if not _HREFLANG.fullmatch(value):
        raise ProtocolError("hreflang", raw, rule_text(
            "must be a language code such as en, de-CH, zh-Hant or x-default"))
    pieces = value.split("-")
    if value.lower() == "x-default":
        return "x-default"
    out = [pieces[0].lower()]
    for piece in pieces[1:]:
        out.append(piece.title() if len(piece) == 4 else piece.upper())
    region = out[-1] if len(out) > 1 and len(out[-1]) != 4 else None
    if region is not None and region not in iso_3166_regions():
        raise ProtocolError("hreflang", raw, _region_rule("-".join(out[:-1]), region))
    return "-".join(out)


# Google's "Tell Google about localized versions of your page" (developers.google.com/search/
# docs/specialty/international/localized-versions, PROTOCOL.md §4 [HREF]) gives the region of
# an hreflang value "in ISO 3166-1 Alpha 2 format" and documents nothing else: a UN M.49 area
# such as 419 (Latin America, `es-419`) is not among its values, and Google has said the page
# still stands when asked about es-419, so it is refused like any region outside the list.
# CLDR's territories (Babel's data, installed with Flask-Babel) are ISO 3166-1 alpha-2's 249
# assigned codes and these, which ISO reserves or leaves to private use.
_NOT_ISO_3166 = frozenset({"AC", "CP", "CQ", "DG", "EA", "EU", "EZ", "IC", "TA", "UN", "QO",
                           "XA", "XB", "XK", "ZZ"})
# A language's code written again as its region (ja-JA), the most common slip after en-UK
# (CLDR's aliases give UK -> GB and the other retired codes); None: the language alone.
_REGION_SLIPS = {"CS": "CZ", "DA": "DK", "EL": "GR", "EN": None, "HE": "IL", "JA": "JP",
                 "KO": "KR", "SV": "SE", "ZH": "CN"}


@functools.cache
def iso_3166_regions() -> frozenset[str]:
    """The ISO 3166-1 alpha-2 codes, from CLDR's territories (Babel's data)."""
    from babel import Locale

    return frozenset(code for code in Locale("en").territories
                     if len(code) == 2 and code.isalpha()) - _NOT_ISO_3166


def _region_rule(language: str, region: str) -> RuleText:
    """Why `region` is refused after `language` (with its script, if any), with the tag
    meant when a well-known slip says it."""
    if region.isdigit():
        return rule_text("has the UN M.49 region %(region)s, which Google's hreflang "
                         "documentation does not list (a region is an ISO 3166-1 alpha-2 "
                         "country code); use %(language)s alone, or with a country's code",
                         region=region, language=language)
    from babel.core import get_global

    meant = _REGION_SLIPS.get(region, "?") if language.upper() == region else "?"
    if meant == "?":
        aliases = get_global("territory_aliases").get(region, [])
        meant = aliases[0] if len(aliases) == 1 else "?"
    if meant == "?":
        return rule_text("has the region %(region)s, which is not an ISO 3166-1 alpha-2 "
                         "country code, and Google ignores it; use %(language)s alone, or "
                         "with a country's code", region=region, language=language)
    return rule_text("has the region %(region)s, which is not an ISO 3166-1 alpha-2 country "
                     "code, and Google ignores it; use %(suggestion)s", region=region,
                     suggestion=language if meant is None else f"{language}-{meant}")
