"""Reading one fetched page: its text in its declared charset, whether it asks not to be
indexed, the canonical URL it names, and a fingerprint of its content that ignores what
changes on every request (scripts, styles, patterns the site owner names)."""

from __future__ import annotations

import codecs
import hashlib
import re
from collections.abc import Mapping, Sequence
from urllib.parse import urldefrag, urljoin

from lxml import etree

HTML_TYPES = ("text/html", "application/xhtml+xml")
# Fetched bytes are read only by patterns whose time grows with the input's length, not its
# square: a scan stops at the next `<` (a tag's or target's end at the latest), so one that
# fails costs what it read, and the next starts where it stopped (tests/test_hostile_input.py).
_META_CHARSET = re.compile(rb"""<meta[^<>]+charset\s*=\s*["']?\s*([a-zA-Z0-9_.:-]+)""", re.I)
# One link of a Link header: <target>; param=value; ... up to the next link (RFC 8288; a
# URI reference has no < or >).
_LINK = re.compile(r'<([^<>]*)>([^<,]*)')
_REL = re.compile(r'(?:^|;)\s*rel\s*=\s*"?([^";]*)"?', re.I)
_REMOVED = ("script", "style", "noscript", "template")
# Robots meta names that speak to the engines a sitemap is for.
_ROBOTS_NAMES = {"robots", "googlebot", "bingbot"}


def is_html(content_type: str | None) -> bool:
    return (content_type or "").split(";")[0].strip().lower() in HTML_TYPES


def media_type(headers: Mapping[str, str]) -> str | None:
    value = headers.get("Content-Type")
    return value.strip()[:200] if value else None


def charset(headers: Mapping[str, str], body: bytes) -> str:
    """The page's encoding: the Content-Type header's charset, else a <meta> in the first
    bytes, else UTF-8; a name Python does not know counts as UTF-8."""
    found = None
    for part in (headers.get("Content-Type") or "").split(";")[1:]:
        name, _, value = part.partition("=")
        if name.strip().lower() == "charset" and value.strip():
            found = value.strip().strip("\"'")
    if found is None:
        match = _META_CHARSET.search(body[:4096])
        found = match.group(1).decode("ascii", "replace") if match else "utf-8"
    try:
        return codecs.lookup(found).name
    except LookupError:
        return "utf-8"


# libxml2's HTML parser with lxml's plain elements: lxml.html's element classes (looked up
# for every element) are not needed to read a page, and cost a verification run per page.
_PARSER = etree.HTMLParser(remove_comments=True)
# An XML declaration, which lxml refuses in a str; one never closed too: libxml2 takes the
# square of the time of the white space after an unclosed `<?xml` that starts a page.
_XML_DECLARATION = re.compile(r"^\s*<\?xml[^>]*>?")
_TEXT = etree.XPath("string()")  # what lxml.html's text_content() is


def parse(headers: Mapping[str, str], body: bytes) -> etree._Element | None:
    """The page as a tree, decoded (by Python, which knows more encodings than libxml2) by
    its declared charset; None when it has no markup."""
    text = _XML_DECLARATION.sub("", body.decode(charset(headers, body), "replace"))
    if not text.strip():
        return None
    try:
        return etree.fromstring(text, _PARSER)
    except (etree.ParserError, ValueError):
        return None


def _directives(values: Sequence[str]) -> set[str]:
    """`noindex, nofollow` or `googlebot: noindex` as {"noindex", "nofollow"}."""
    found = set()
    for value in values:
        for token in value.split(","):
            found.add(token.rpartition(":")[2].strip().lower())
    return found


def noindex(headers: Mapping[str, str], tree: etree._Element | None) -> bool:
    """Whether the page asks not to be indexed: X-Robots-Tag, or a robots <meta>."""
    values = [headers.get("X-Robots-Tag") or ""]
    if tree is not None:
        values += [meta.get("content") or "" for meta in tree.iter("meta")
                   if (meta.get("name") or "").strip().lower() in _ROBOTS_NAMES]
    return bool(_directives(values) & {"noindex", "none"})


def canonical(url: str, headers: Mapping[str, str],
              tree: etree._Element | None) -> str | None:
    """The canonical URL the page names (Link header first, then <link rel=canonical>),
    made absolute against the page's URL, without a fragment."""
    href = None
    for target, params in _LINK.findall(headers.get("Link") or ""):
        rel = _REL.search(params)
        if rel and "canonical" in rel.group(1).lower().split():
            href = target.strip()
            break
    if href is None and tree is not None:
        for element in tree.iter("link"):
            if "canonical" in (element.get("rel") or "").lower().split() and element.get("href"):
                href = element.get("href").strip()
                break
    return urldefrag(urljoin(url, href))[0][:2048] if href else None


def fingerprint(tree: etree._Element | None, body: bytes,
                ignore: Sequence) -> str:
    """SHA-256 of the page's visible text, white space folded, with scripts, styles and the
    `ignore` patterns (RE2's: settings.ignore_patterns) removed: a new timestamp or nonce
    leaves it as it was. A page that is not HTML is hashed as its bytes."""
    if tree is None:
        return hashlib.sha256(body).hexdigest()
    # In C, in one pass: the elements and what they hold go, the text after each stays.
    etree.strip_elements(tree, *_REMOVED, with_tail=False)
    text = " ".join(_TEXT(tree).split())
    for pattern in ignore:
        text = pattern.sub("", text)
    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()


def validators_fingerprint(headers: Mapping[str, str]) -> str | None:
    """For a file that is not HTML, checked with HEAD: what its validators say of its content."""
    parts = [headers.get(name) or "" for name in ("ETag", "Last-Modified", "Content-Length")]
    if not any(parts[:2]):
        return None
    return hashlib.sha256("\n".join(parts).encode()).hexdigest()
