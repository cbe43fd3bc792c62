"""The sitemaps.org 0.9 rules, as pure functions: validate and normalise what goes into a sitemap.

Every `normalize_*` function takes what a person typed (or a file held) and returns the one form
the generator writes, or raises `ProtocolError` naming the field, the value and the rule.
The rules and their sources are in PROTOCOL.md; section numbers below refer to it.
"""

from __future__ import annotations

import codecs
import functools
import math
import re
from dataclasses import dataclass
from datetime import UTC, date, datetime, timedelta, timezone
from urllib.parse import SplitResult, urlsplit, urlunsplit

import idna

from webapp.errors import InvalidValue, Note, RuleText, ShownUrl, rule_text

SITEMAP_NS = "http://www.sitemaps.org/schemas/sitemap/0.9"
IMAGE_NS = "http://www.google.com/schemas/sitemap-image/1.1"
VIDEO_NS = "http://www.google.com/schemas/sitemap-video/1.1"
XHTML_NS = "http://www.w3.org/1999/xhtml"

MAX_URLS_PER_FILE = 50_000  # §1.7, for a urlset and for an index alike
MAX_FILE_BYTES = 52_428_800  # §1.7, uncompressed
MAX_LOC_LENGTH = 2048  # §1.2, the XSD's maxLength
MIN_LOC_LENGTH = 12  # §1.2, the XSD's minLength
MAX_IMAGES_PER_URL = 1000  # §4, sitemap-image.xsd
CHANGEFREQS = ("always", "hourly", "daily", "weekly", "monthly", "yearly", "never")
DEFAULT_PORTS = {"http": 80, "https": 443}


class ProtocolError(InvalidValue):
    """A value breaks a sitemap rule; the message names the field, the value and the rule."""


NO_QUERY_RULE = rule_text("must not have a query (?...) or fragment (#...)")


# --- XML escaping (§1.3) ----------------------------------------------------------------------

_ESCAPES = (("&", "&amp;"), ("<", "&lt;"), (">", "&gt;"), ('"', "&quot;"), ("'", "&apos;"))
# Characters XML 1.0 cannot carry at all, escaped or not.
_XML_INVALID = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\ufffe\uffff]")


def escape(text: str) -> str:
    """Entity-escape the five characters the protocol lists."""
    # Five substring tests cost a third of one regular expression search, and most text
    # (every loc, most titles) has none of them: a million-URL site escapes millions of values.
    if "&" in text or "<" in text or ">" in text or '"' in text or "'" in text:
        for char, entity in _ESCAPES:
            text = text.replace(char, entity)
    return text


def check_text(field: str, value: str, max_length: int | None = None) -> str:
    """Plain text for an extension element: trimmed, XML-safe, within its length."""
    value = value.strip()
    if _XML_INVALID.search(value):
        raise ProtocolError(field, value, rule_text(
            "contains a control character that XML cannot carry"))
    if max_length is not None and len(value) > max_length:
        raise ProtocolError(field, value, rule_text("is longer than %(limit)s characters",
                                                     limit=max_length))
    return value


# --- Locations: absolute, percent-encoded in the site's encoding, in scope (§1.2, §3) --------

# RFC 3986: what may stand unencoded in a path, and in a query or fragment.
_PATH_OK = "A-Za-z0-9\\-._~!$&'()*+,;=:@/"
_NEEDS_PERCENT = {
    "path": re.compile(f"[^{_PATH_OK}%]+|%(?![0-9A-Fa-f]{{2}})"),
    "query": re.compile(f"[^{_PATH_OK}?%]+|%(?![0-9A-Fa-f]{{2}})"),
}
_LOWER_ESCAPE = re.compile(r"%(?:[a-f][0-9a-fA-F]|[0-9A-F][a-f])")
# Escapes of unreserved characters (letters, digits, - . _ ~) mean the character itself
# (RFC 3986 section 6.2.2.2); decoding them first keeps %2E%2E from hiding a `..` segment.
_UNRESERVED_ESCAPE = re.compile(r"%(?:2[DEde]|3[0-9]|[46][1-9A-Fa-f]|[57][0-9Aa]|5[Ff]|7[Ee])")
_CONTROL = re.compile("[\x00-\x1f\x7f]")
_HOST_OK = re.compile(r"[a-z0-9.\-]+|[0-9a-f:.]*:[0-9a-f:.]*")


def check_encoding(name: str) -> str:
    """A character encoding Python knows, returned under its canonical name."""
    try:
        codec = codecs.lookup(name.strip())
    except LookupError:
        codec = None
    # base64, rot13 and zlib are codecs but not text encodings; UTF-16, UTF-7, punycode or
    # unicode_escape would mangle the ASCII part of a URL or "encode" into ASCII escapes.
    if codec is None or not getattr(codec, "_is_text_encoding", True) or not _ascii_compatible(codec):
        raise ProtocolError("encoding", name, rule_text(
            "is not a character encoding URLs can be written in (examples: utf-8, euc-jp, "
            "shift_jis, iso-8859-1)"))
    return codec.name


_ASCII_PROBE = "".join(chr(c) for c in range(0x20, 0x7F))


def _ascii_compatible(codec: codecs.CodecInfo) -> bool:
    """ASCII stays as it is and at least one non-ASCII letter becomes non-ASCII bytes."""
    try:
        if codec.encode(_ASCII_PROBE)[0] != _ASCII_PROBE.encode("ascii"):
            return False
    except (UnicodeError, ValueError):
        return False
    encoded = []
    for probe in ("é", "あ", "ж", "中"):
        try:
            encoded.append(codec.encode(probe)[0])
        except (UnicodeError, ValueError):
            continue
    return bool(encoded) and all(max(data) >= 0x80 for data in encoded)


def _percent_encode(part: str, kind: str, encoding: str, field: str) -> str:
    """Percent-encode what RFC 3986 does not allow, leaving valid %XX escapes as they are."""

    def encode_run(match: re.Match[str]) -> str:
        try:
            raw = match.group(0).encode(encoding)
        except UnicodeEncodeError:
            raise ProtocolError(field, part, rule_text(
                "has characters that %(encoding)s cannot encode", encoding=encoding)) from None
        encoded = "%" + raw.hex("%").upper()
        if min(raw) < 0x80:  # an ASCII trail byte (Shift_JIS 0x54 is "T") is written as itself
            encoded = _UNRESERVED_ESCAPE.sub(lambda m: chr(int(m.group(0)[1:], 16)), encoded)
        return encoded

    if "%" in part:  # RFC 3986 prefers upper-case hex in escapes that are already there
        part = _UNRESERVED_ESCAPE.sub(lambda m: chr(int(m.group(0)[1:], 16)), part)
        part = _LOWER_ESCAPE.sub(lambda m: m.group(0).upper(), part)
    return _NEEDS_PERCENT[kind].sub(encode_run, part)


def remove_dot_segments(path: str) -> str:
    """Resolve `.` and `..` as RFC 3986 section 5.2.4 does, so scope checks see the real path."""
    if "." not in path:
        return path
    output: list[str] = []
    segments = path.split("/")
    for i, segment in enumerate(segments):
        last = i == len(segments) - 1
        if segment == "..":
            if len(output) > 1:
                output.pop()
            if last:
                output.append("")
        elif segment == ".":
            if last:
                output.append("")
        else:
            output.append(segment)
    return "/".join(output) or "/"


def _split(field: str, raw: str) -> SplitResult:
    if not isinstance(raw, str) or not raw.strip():
        raise ProtocolError(field, raw, rule_text("is required"))
    value = raw.strip()
    if _CONTROL.search(value):
        raise ProtocolError(field, value, rule_text(
            "contains a control character (tab, line break, ...)"))
    try:
        parts = urlsplit(value)
        port = parts.port
    except ValueError as exc:
        raise ProtocolError(field, value, rule_text("is not a valid URL (%(reason)s)",
                                                     reason=str(exc))) from None
    scheme = parts.scheme.lower()
    if scheme not in DEFAULT_PORTS or not parts.netloc:
        raise ProtocolError(field, value, rule_text(
            "must be an absolute URL starting with http:// or https://"))
    if parts.username is not None or parts.password is not None:
        raise ProtocolError(field, value, rule_text("must not contain a user name or password"))
    host = parts.hostname or ""
    if not host:
        raise ProtocolError(field, value, rule_text("has no host name"))
    if not host.isascii():
        host = _idna_host(field, value, host)
    if not _HOST_OK.fullmatch(host):
        raise ProtocolError(field, value, rule_text(
            "has a host name with characters a domain cannot have"))
    if ":" in host:  # an IPv6 literal keeps its brackets
        host = f"[{host}]"
    netloc = host if port is None or port == DEFAULT_PORTS[scheme] else f"{host}:{port}"
    return SplitResult(scheme, netloc, parts.path, parts.query, parts.fragment)


def _idna_host(field: str, value: str, host: str) -> str:
    """An international host name as browsers write it: UTS #46 mapping, IDNA 2008 rules.

    Python's own "idna" codec is IDNA 2003, which maps ß to ss and ς to σ and deletes zero-width
    joiners, so that `faß.example` would name another host, `fass.example`.
    """
    try:
        return idna.encode(host, uts46=True, transitional=False).decode("ascii")
    except idna.InvalidCodepointContext:
        raise ProtocolError(field, value, rule_text(
            "has a host name with a zero-width joiner or non-joiner (U+200D, U+200C) where "
            "IDNA 2008 does not allow one; remove it")) from None
    except idna.InvalidCodepoint as exc:
        # The library says it in English ("Codepoint U+2603 at position 1 of '☃' not
        # allowed"): the rule names the character in words that are translated.
        codepoint = re.search(r"U\+([0-9A-F]{4,6})", str(exc))
        if codepoint is None:
            raise ProtocolError(field, value, rule_text(
                "has a host name with a character that IDNA 2008 does not allow in a domain "
                "name (%(reason)s)", reason=str(exc))) from None
        raise ProtocolError(field, value, rule_text(
            "has a host name with a character that IDNA 2008 does not allow in a domain name: "
            "%(character)s (U+%(codepoint)s)", character=chr(int(codepoint[1], 16)),
            codepoint=codepoint[1])) from None
    except (idna.IDNAError, UnicodeError) as exc:
        raise ProtocolError(field, value, rule_text(
            "has a host name that is not a valid international domain name under IDNA 2008 "
            "(%(reason)s)", reason=str(exc))) from None


# A URL already in the form normalize_url returns: lower-case scheme and host, no port, only
# characters RFC 3986 allows, upper-case escapes. Most imported URLs are; they skip urlsplit.
_CANONICAL = re.compile(
    r"https?://[a-z0-9\-]+(?:\.[a-z0-9\-]+)*"
    r"(?:/(?:[A-Za-z0-9\-_~!$&'()*+,;=:@/]|%[0-9A-F]{2}|\.(?![./?#]|$))*)?"
    r"(?:\?(?:[A-Za-z0-9\-._~!$&'()*+,;=:@/?]|%[0-9A-F]{2})*)?"
)


def normalize_url(raw: str, encoding: str = "utf-8", field: str = "loc") -> str:
    """An absolute http(s) URL, RFC 3986-encoded, without a fragment; already-encoded input
    comes back unchanged."""
    return normalize_url_noting(raw, encoding, field)[0]


def normalize_url_noting(raw: str, encoding: str = "utf-8",
                         field: str = "loc") -> tuple[str, Note | None]:
    """normalize_url, with a note of what it removed that the person should hear of.

    A fragment (`#part`) points into a page and never names another resource (PROTOCOL.md §8.3):
    it is removed here, the one place every path (form, CSV, sitemap import, API, command line)
    normalises its URLs, and the note says so.
    """
    if (isinstance(raw, str) and _CANONICAL.fullmatch(raw) and "/." not in raw
            and ("%" not in raw or not _UNRESERVED_ESCAPE.search(raw))):
        if MIN_LOC_LENGTH <= len(raw) <= MAX_LOC_LENGTH and raw.count("/") > 2:
            return raw, None
    parts = _split(field, raw)
    path = remove_dot_segments(_percent_encode(parts.path or "/", "path", encoding, field))
    query = _percent_encode(parts.query, "query", encoding, field)
    url = urlunsplit((parts.scheme, parts.netloc, path, query, ""))
    if len(url) > MAX_LOC_LENGTH:
        raise ProtocolError(field, url, rule_text(
            "is %(length)s characters once encoded; the limit is %(limit)s",
            length=len(url), limit=MAX_LOC_LENGTH))
    if len(url) < MIN_LOC_LENGTH:
        raise ProtocolError(field, url, rule_text(
            "is shorter than %(limit)s characters, which the sitemap schema does not accept",
            limit=MIN_LOC_LENGTH))
    note = None
    if "#" in raw:
        note = Note(field, raw.strip(), rule_text(
            "the fragment #%(fragment)s was removed: a fragment points into a page, and the "
            "sitemap lists the page once", fragment=parts.fragment))
    return url, note


def origin(url: str) -> str:
    """scheme://host[:port] of a normalised URL."""
    parts = urlsplit(url)
    return f"{parts.scheme}://{parts.netloc}"


def directory(url: str) -> str:
    """The URL up to and including the last `/` of its path: the scope of a file there (§3)."""
    parts = urlsplit(url)
    return f"{parts.scheme}://{parts.netloc}{parts.path[: parts.path.rfind('/') + 1]}"


def normalize_base_url(raw: str, encoding: str = "utf-8") -> str:
    """A site's scope: scheme, host, optional port and a path prefix that ends with `/`."""
    url, fragment = normalize_url_noting(raw, encoding, field="base_url")
    parts = urlsplit(url)
    if parts.query or fragment:
        raise ProtocolError("base_url", raw, NO_QUERY_RULE)
    if not parts.path.endswith("/"):
        url = urlunsplit((parts.scheme, parts.netloc, parts.path + "/", "", ""))
    return url


def normalize_sitemap_url(raw: str, encoding: str = "utf-8") -> str:
    """The public URL of a site's entry sitemap file: a `.xml` file name, no query."""
    url, fragment = normalize_url_noting(raw, encoding, field="sitemap_url")
    parts = urlsplit(url)
    if parts.query or fragment:
        raise ProtocolError("sitemap_url", raw, NO_QUERY_RULE)
    name = parts.path.rsplit("/", 1)[-1]
    if not re.fullmatch(r"[A-Za-z0-9][A-Za-z0-9._\-]*\.xml", name):
        raise ProtocolError("sitemap_url", ShownUrl(url), rule_text(
            "must end in a file name such as sitemap.xml (letters, digits, '.', '_' or '-', "
            "ending in .xml)"))
    return url


def check_site_scope(base_url: str, sitemap_url: str) -> RuleText | None:
    """Raise if the sitemap cannot cover the site; return a warning for cross-host sitemaps
    (§3.1), said in the reader's language (the robots.txt line as it must be written)."""
    if origin(base_url) != origin(sitemap_url):
        return rule_text(
            "the sitemap is on %(sitemap_origin)s but the pages are on %(origin)s: search "
            "engines accept it only if %(robots)s has the line 'Sitemap: %(sitemap_url)s' "
            "(cross-submission)", sitemap_origin=ShownUrl(origin(sitemap_url)),
            origin=ShownUrl(origin(base_url)), robots=ShownUrl(f"{origin(base_url)}/robots.txt"),
            sitemap_url=sitemap_url)
    if not base_url.startswith(directory(sitemap_url)):
        raise ProtocolError("sitemap_url", ShownUrl(sitemap_url), rule_text(
            "can only list URLs under %(folder)s, but the site's base_url is %(base_url)s; "
            "put the sitemap at the site's root", folder=ShownUrl(directory(sitemap_url)),
            base_url=ShownUrl(base_url)))
    return None


@dataclass(frozen=True)
class Scope:
    """The URLs a site may list: those that start with its normalised base URL."""

    base_url: str
    encoding: str = "utf-8"

    def normalize(self, raw: str, field: str = "loc") -> str:
        """A normalised loc inside this scope."""
        return self.normalize_noting(raw, field)[0]

    def normalize_noting(self, raw: str, field: str = "loc") -> tuple[str, Note | None]:
        """A normalised loc inside this scope, with a note of what was removed (a fragment)."""
        url, note = normalize_url_noting(raw, self.encoding, field)
        if not url.startswith(self.base_url):
            raise ProtocolError(field, ShownUrl(url), rule_text(
                "is outside the site: every URL must start with %(base_url)s (same scheme, "
                "host, port and path)", base_url=ShownUrl(self.base_url)))
        return url, note


# --- lastmod in W3C Datetime (§1.4) ------------------------------------------------------------

_W3C = re.compile(
    r"(\d{4})(?:-(\d{2})(?:-(\d{2})"
    r"(?:[Tt ](\d{2}):(\d{2})(?::(\d{2})(?:\.\d+)?)?\s*([Zz]|[+-]\d{2}:?\d{2})?)?)?)?"
)
LASTMOD_RULE = rule_text("is not a W3C Datetime; use YYYY-MM-DD or YYYY-MM-DDThh:mm:ss+hh:mm "
                         "(YYYY, YYYY-MM and times without seconds are accepted too)")


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


# The optional fields of a URL and the rule each one follows.
FIELD_RULES = {
    "lastmod": normalize_lastmod,
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


def normalize_hreflang(raw: str) -> str:
    """`x-default`, or an ISO 639-1 language with an optional script and region: `de`, `de-CH`."""
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
    return "-".join(out)
