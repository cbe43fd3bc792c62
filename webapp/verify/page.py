"""Reading one fetched page: its text in its declared charset, whether it asks not to be
indexed, the canonical URL it names, and a fingerprint of its content that ignores what
changes on every request (scripts, styles, patterns the site owner names)."""

from __future__ import annotations

import hashlib
import re
from collections.abc import Mapping, Sequence
from urllib.parse import urldefrag, urljoin

from lxml import etree

from webapp.outbound import html_tree

HTML_TYPES = ("text/html", "application/xhtml+xml")
# Fetched bytes are read only by patterns whose time grows with the input's length, not its
# square (webapp.outbound.html). One link of a Link header: <target>; param=value; ... up to the next link (RFC 8288; a
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


_TEXT = etree.XPath("string()")  # what lxml.html's text_content() is


def parse(headers: Mapping[str, str], body: bytes) -> etree._Element | None:
    """The page as a tree, decoded by its declared charset; None when it has no markup."""
    return html_tree(headers.get("Content-Type"), body)


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
