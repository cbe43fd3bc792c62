"""A page's videos (Google's video sitemap extension, `video:video`): each value checked by
Google's rules and normalised to the one form stored and written.

The rules, from Google's video sitemap reference and sitemap-video.xsd: thumbnail_loc, title
(at most 100 characters, the schema's limit) and description (at most 2,048) are required, and
at least one of content_loc and player_loc, neither the page's own loc; duration is whole
seconds from 1 to 28,800; rating 0.0 to 5.0; view_count a whole number from 0; the dates W3C;
family_friendly, requires_subscription and live yes or no; a restriction is allow or deny with
ISO 3166 country codes, a platform allow or deny with web, mobile and tv; uploader at most 255
characters, with its info page on the page's domain; at most 32 tags.
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping
from dataclasses import dataclass, fields
from datetime import date
from decimal import Decimal
from numbers import Real
from urllib.parse import urlsplit

from webapp.errors import InvalidValue, Note, check_storable, collect, raise_all, rule_text
from webapp.protocol import ProtocolError, check_text, normalize_lastmod, normalize_url_noting

MAX_TITLE = 100  # sitemap-video.xsd
MAX_DESCRIPTION = 2048
MAX_DURATION = 28_800  # eight hours, in seconds
MAX_RATING = 5.0
MAX_UPLOADER = 255
MAX_TAGS = 32
MAX_VIEW_COUNT = 2**63 - 1  # what the column holds
RELATIONSHIPS = ("allow", "deny")
PLATFORMS = ("web", "mobile", "tv")
# ISO 3166-1 alpha-2: the officially assigned codes.
_ISO_3166 = """
AD AE AF AG AI AL AM AO AQ AR AS AT AU AW AX AZ BA BB BD BE BF BG BH BI BJ BL BM BN BO BQ BR BS
BT BV BW BY BZ CA CC CD CF CG CH CI CK CL CM CN CO CR CU CV CW CX CY CZ DE DJ DK DM DO DZ EC EE
EG EH ER ES ET FI FJ FK FM FO FR GA GB GD GE GF GG GH GI GL GM GN GP GQ GR GS GT GU GW GY HK HM
HN HR HT HU ID IE IL IM IN IO IQ IR IS IT JE JM JO JP KE KG KH KI KM KN KP KR KW KY KZ LA LB LC
LI LK LR LS LT LU LV LY MA MC MD ME MF MG MH MK ML MM MN MO MP MQ MR MS MT MU MV MW MX MY MZ NA
NC NE NF NG NI NL NO NP NR NU NZ OM PA PE PF PG PH PK PL PM PN PR PS PT PW PY QA RE RO RS RU RW
SA SB SC SD SE SG SH SI SJ SK SL SM SN SO SR SS ST SV SX SY SZ TC TD TF TG TH TJ TK TL TM TN TO
TR TT TV TW TZ UA UG UM US UY UZ VA VC VE VG VI VN VU WF WS YE YT ZA ZM ZW
"""
COUNTRIES = frozenset(_ISO_3166.split())


@dataclass(frozen=True)
class Video:
    """One video of a page, normalised: what `UrlVideo` stores and the generator writes."""

    thumbnail_loc: str
    title: str
    description: str
    content_loc: str | None = None
    player_loc: str | None = None
    duration: int | None = None  # seconds
    expiration_date: str | None = None  # as lastmod is stored
    rating: float | None = None
    view_count: int | None = None
    publication_date: str | None = None
    family_friendly: bool | None = None
    restriction_relationship: str | None = None  # allow, deny
    restriction_countries: str | None = None  # "JP US"
    platform_relationship: str | None = None
    platforms: str | None = None  # "web mobile tv"
    requires_subscription: bool | None = None
    uploader: str | None = None
    uploader_info: str | None = None
    live: bool | None = None
    tags: tuple[str, ...] = ()

    def as_row(self) -> dict[str, object]:
        """The values as `UrlVideo` columns (tags a list, for JSON)."""
        row = {name: getattr(self, name) for name in VIDEO_FIELDS}
        row["tags"] = list(self.tags)
        return row

    @classmethod
    def from_row(cls, row) -> Video:
        """A Video from a `UrlVideo` (or any object or mapping with its columns)."""
        get = row.get if isinstance(row, Mapping) else lambda name: getattr(row, name)
        values = {name: get(name) for name in VIDEO_FIELDS}
        values["tags"] = tuple(values["tags"] or ())
        return cls(**values)


VIDEO_FIELDS = tuple(f.name for f in fields(Video))
REQUIRED = ("thumbnail_loc", "title", "description")


def _empty(value: object) -> bool:
    return value is None or (isinstance(value, str) and not value.strip())


def _text(name: str, value: object, limit: int | None = None) -> str:
    if not isinstance(value, str):
        raise ProtocolError(name, value, rule_text("must be text"))
    check_storable(name, value)
    # XML reads a carriage return as a line feed: stored as it will be read back.
    return check_text(name, value.replace("\r\n", "\n").replace("\r", "\n"), limit)


def _whole(name: str, value: object, low: int, high: int, rule) -> int:
    if isinstance(value, bool):
        raise ProtocolError(name, value, rule)
    if isinstance(value, str) and re.fullmatch(r"\s*\+?\d{1,20}\s*", value):
        number = int(value)
    elif isinstance(value, int):
        number = value
    elif isinstance(value, float) and value.is_integer():
        number = int(value)
    else:
        raise ProtocolError(name, value, rule)
    if not low <= number <= high:
        raise ProtocolError(name, value, rule)
    return number


def _rating(name: str, value: object) -> float:
    rule = rule_text("must be a number from 0.0 to %(limit)s", limit=MAX_RATING)
    if isinstance(value, bool):
        raise ProtocolError(name, value, rule)
    if isinstance(value, str):
        if not re.fullmatch(r"\s*\+?(\d+\.?\d*|\.\d+)\s*", value):
            raise ProtocolError(name, value, rule)
        number = float(value)
    elif isinstance(value, Real):
        try:
            number = float(value)
        except OverflowError:
            raise ProtocolError(name, "a number too large", rule) from None
    else:
        raise ProtocolError(name, value, rule)
    if math.isnan(number) or not 0.0 <= number <= MAX_RATING:
        raise ProtocolError(name, value, rule)
    return number + 0.0  # -0.0 becomes 0.0


def _date(name: str, value: object) -> str:
    if not isinstance(value, str | date):
        raise ProtocolError(name, value, rule_text("must be a W3C date, e.g. 2026-11-25 or "
                                                   "2026-11-25T09:30:00+09:00"))
    try:
        return normalize_lastmod(value)
    except InvalidValue as exc:  # said with lastmod's name: said again with this field's
        raise ProtocolError(name, value, exc.said) from None


_YES = {"yes": True, "no": False, "true": True, "false": False}


def _yes_no(name: str, value: object) -> bool:
    if isinstance(value, bool):
        return value
    if isinstance(value, str) and value.strip().lower() in _YES:
        return _YES[value.strip().lower()]
    raise ProtocolError(name, value, rule_text("must be yes or no"))


def _words(name: str, value: object) -> list[str]:
    """A list given as text (separated by spaces or commas) or as a list of text."""
    if isinstance(value, str):
        return [word for word in re.split(r"[\s,]+", value) if word]
    if isinstance(value, list | tuple) and all(isinstance(word, str) for word in value):
        return [word.strip() for word in value if word.strip()]
    raise ProtocolError(name, value, rule_text("must be text or a list of text"))


def _relationship(name: str, value: object) -> str:
    if isinstance(value, str) and value.strip().lower() in RELATIONSHIPS:
        return value.strip().lower()
    raise ProtocolError(name, value, rule_text("must be allow or deny"))


def _countries(name: str, value: object) -> str:
    codes = list(dict.fromkeys(code.upper() for code in _words(name, value)))
    wrong = [code for code in codes if code not in COUNTRIES]
    if wrong:
        raise ProtocolError(name, " ".join(wrong), rule_text(
            "must be ISO 3166 country codes (two letters, e.g. JP US GB), separated by spaces"))
    if not codes:
        raise ProtocolError(name, value, rule_text("must name at least one country"))
    return " ".join(codes)


def _platforms(name: str, value: object) -> str:
    names = list(dict.fromkeys(word.lower() for word in _words(name, value)))
    if not names or any(word not in PLATFORMS for word in names):
        raise ProtocolError(name, value, rule_text(
            "must be one or more of %(choices)s, separated by spaces",
            choices=", ".join(PLATFORMS)))
    return " ".join(names)


def _tags(name: str, value: object) -> tuple[str, ...]:
    if isinstance(value, str):
        value = [value]
    if not isinstance(value, list | tuple):
        raise ProtocolError(name, value, rule_text("must be a list of text"))
    tags = tuple(_text(name, tag) for tag in value)
    if any(not tag for tag in tags):
        raise ProtocolError(name, "", rule_text("must not be empty"))
    if len(tags) > MAX_TAGS:
        raise ProtocolError(name, f"{len(tags)} tags", rule_text(
            "a video may have at most %(limit)s", limit=MAX_TAGS))
    return tags


def _same_domain(page_loc: str, url: str) -> bool:
    """Whether `url` is on the page's domain: the same host, or one a subdomain of the other
    (a leading www. aside)."""
    page = (urlsplit(page_loc).hostname or "").removeprefix("www.")
    other = (urlsplit(url).hostname or "").removeprefix("www.")
    return page == other or page.endswith("." + other) or other.endswith("." + page)


def normalize_video(raw: Mapping[str, object], page_loc: str, encoding: str = "utf-8",
                    field: str = "video", notes: list[Note] | None = None) -> Video:
    """A video of the page at `page_loc` (normalised) checked by Google's rules; ProtocolError
    naming the field as `<field> <name>` ("video 2 duration") and the rule, or InvalidValues
    with every field's error at once. What a rule changed that the person should hear of (a
    fragment removed from a URL) is added to `notes`."""
    if not isinstance(raw, Mapping):
        raise ProtocolError(field, type(raw).__name__, rule_text(
            "must be an object with at least thumbnail_loc, title, description and "
            "content_loc or player_loc"))
    unknown = sorted(str(key) for key in raw if key not in VIDEO_FIELDS)
    if unknown:
        raise ProtocolError(f"{field} {unknown[0]}", unknown[0], rule_text(
            "is not a video field; the fields are %(fields)s", fields=", ".join(VIDEO_FIELDS)))
    errors: list[InvalidValue] = []
    values: dict[str, object] = {}

    def url(name: str) -> str:
        normalized, note = normalize_url_noting(raw[name], encoding, field=f"{field} {name}")
        if note is not None and notes is not None:
            notes.append(note)
        return normalized

    rules = {
        "thumbnail_loc": url,
        "title": lambda name: _text(name, raw[name], MAX_TITLE),
        "description": lambda name: _text(name, raw[name], MAX_DESCRIPTION),
        "content_loc": url,
        "player_loc": url,
        "duration": lambda name: _whole(name, raw[name], 1, MAX_DURATION, rule_text(
            "must be a whole number of seconds from 1 to %(limit)s (8 hours)",
            limit=MAX_DURATION)),
        "expiration_date": lambda name: _date(name, raw[name]),
        "rating": lambda name: _rating(name, raw[name]),
        "view_count": lambda name: _whole(name, raw[name], 0, MAX_VIEW_COUNT, rule_text(
            "must be a whole number from 0")),
        "publication_date": lambda name: _date(name, raw[name]),
        "family_friendly": lambda name: _yes_no(name, raw[name]),
        "restriction_relationship": lambda name: _relationship(name, raw[name]),
        "restriction_countries": lambda name: _countries(name, raw[name]),
        "platform_relationship": lambda name: _relationship(name, raw[name]),
        "platforms": lambda name: _platforms(name, raw[name]),
        "requires_subscription": lambda name: _yes_no(name, raw[name]),
        "uploader": lambda name: _text(name, raw[name], MAX_UPLOADER),
        "uploader_info": url,
        "live": lambda name: _yes_no(name, raw[name]),
        "tags": lambda name: _tags(name, raw[name]),
    }
    for name, rule in rules.items():
        if name == "tags" and raw.get(name) is not None:
            values[name] = collect(errors, _named, field, name, rule)
        elif not _empty(raw.get(name)):
            values[name] = collect(errors, _named, field, name, rule)
            if values[name] in (None, ""):
                values.pop(name)  # text of white space alone: none given
    for name in REQUIRED:
        if name not in values and not any(error.field == f"{field} {name}" for error in errors):
            errors.append(ProtocolError(f"{field} {name}", "", rule_text("is required")))
    _check_together(values, raw, page_loc, field, errors)
    raise_all(errors)
    values["tags"] = values.get("tags") or ()
    return Video(**values)


def _named(field: str, name: str, rule):
    """rule(name) with its error said for `<field> <name>`."""
    try:
        return rule(name)
    except InvalidValue as exc:
        if exc.field.startswith(f"{field} "):
            raise
        raise ProtocolError(f"{field} {name}", exc.value, exc.said) from None


def _check_together(values: dict[str, object], raw: Mapping[str, object], page_loc: str,
                    field: str, errors: list[InvalidValue]) -> None:
    """The rules between fields: a video file or player, not the page itself; a relationship
    with its list and a list with its relationship; an uploader for its info page."""
    given = {name for name in VIDEO_FIELDS if not _empty(raw.get(name))}
    if not {"content_loc", "player_loc"} & given:
        errors.append(ProtocolError(f"{field} content_loc", "", rule_text(
            "is required when there is no player_loc: a video needs the URL of its file "
            "(content_loc) or of its player (player_loc)")))
    for name in ("content_loc", "player_loc"):
        if values.get(name) == page_loc:
            errors.append(ProtocolError(f"{field} {name}", page_loc, rule_text(
                "must not be the page's own URL (the loc): give the video file or the player")))
    for relationship, listed in (("restriction_relationship", "restriction_countries"),
                                 ("platform_relationship", "platforms")):
        if listed in given and relationship not in given:
            errors.append(ProtocolError(f"{field} {relationship}", "", rule_text(
                "is required with %(listed)s: allow or deny", listed=listed)))
        if relationship in given and listed not in given:
            errors.append(ProtocolError(f"{field} {listed}", "", rule_text(
                "is required with %(relationship)s", relationship=relationship)))
    if "uploader_info" in given and "uploader" not in given:
        errors.append(ProtocolError(f"{field} uploader", "", rule_text(
            "is required with uploader_info: the info page is the uploader's")))
    info = values.get("uploader_info")
    if isinstance(info, str) and not _same_domain(page_loc, info):
        errors.append(ProtocolError(f"{field} uploader_info", info, rule_text(
            "must be on the same domain as the page (%(host)s)",
            host=urlsplit(page_loc).hostname)))


def format_rating(value: float) -> str:
    """A rating as xsd:decimal text that reads back as the same float: 4.2, 5.0, 0.05."""
    text = repr(value)
    if "e" in text or "E" in text:
        text = format(Decimal(text), "f")
    return text if "." in text else f"{text}.0"
