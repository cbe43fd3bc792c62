"""Locations (§1.2, §3): absolute, percent-encoded in the site's encoding, in scope; a
site's base and sitemap addresses, and what is in a site's scope."""

from __future__ import annotations

import codecs
import re
from dataclasses import dataclass
from urllib.parse import SplitResult, urlsplit, urlunsplit

import idna

from webapp.errors import Note, RuleText, ShownUrl, rule_text
from webapp.protocol.common import (
    DEFAULT_PORTS,
    MAX_LOC_LENGTH,
    MIN_LOC_LENGTH,
    NO_QUERY_RULE,
    ProtocolError,
)


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
