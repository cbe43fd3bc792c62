"""What a crawler reads in a page: its text in the right encoding, the links it may follow,
its canonical URL and its robots directives. Pure functions of the bytes and headers."""

from __future__ import annotations

import codecs
import re
from dataclasses import dataclass, field
from urllib.parse import urljoin

from lxml import etree

# A scan stops at the next `<`: linear on a page of `<meta` without `>` (test_hostile_input.py).
_META_CHARSET = re.compile(rb"""<meta[^<>]+charset\s*=\s*["']?([A-Za-z0-9._:\-]+)""", re.I)
_HEADER_CHARSET = re.compile(r"charset\s*=\s*[\"']?([A-Za-z0-9._:\-]+)", re.I)


def charset(content_type: str, body: bytes) -> str:
    """The page's encoding: the Content-Type header's, else a `<meta charset>` near the top,
    else UTF-8; one Python does not know is read as UTF-8."""
    found = _HEADER_CHARSET.search(content_type or "") or _META_CHARSET.search(body[:4096])
    name = found.group(1) if found else "utf-8"
    name = name.decode("ascii") if isinstance(name, bytes) else name
    try:
        return codecs.lookup(name).name
    except LookupError:
        return "utf-8"


def is_html(content_type: str) -> bool:
    kind = (content_type or "").split(";")[0].strip().lower()
    return kind in ("text/html", "application/xhtml+xml") or not kind


@dataclass
class PageLinks:
    """What a page says: the links it offers (href, followable), its hreflang alternates, its
    canonical, and whether it asks robots not to follow or index it."""

    links: list[str] = field(default_factory=list)
    alternates: list[str] = field(default_factory=list)
    canonical: str | None = None
    nofollow: bool = False
    noindex: bool = False


# libxml2's HTML parser: its time grows with the page's length. The standard library's
# html.parser does not: a page of `<a href="` repeated took a minute for 180 KB
# (tests/test_hostile_input.py).
_PARSER = etree.HTMLParser(remove_comments=True, remove_pis=True)
# An XML declaration, which lxml refuses in a str; one never closed too (libxml2 takes the
# square of the time of the white space after it: webapp.verify.page).
_XML_DECLARATION = re.compile(r"^\s*<\?xml[^>]*>?")
_FOLLOWED = ("base", "a", "link", "meta")


def _tree(content_type: str, body: bytes) -> etree._Element | None:
    text = _XML_DECLARATION.sub("", body.decode(charset(content_type, body), "replace"))
    if not text.strip():
        return None
    try:
        return etree.fromstring(text, _PARSER)
    except (etree.ParserError, ValueError):
        return None


def read_page(url: str, content_type: str, body: bytes,
              robots_header: str = "") -> PageLinks:
    """The links, alternates, canonical and robots directives of an HTML page at `url`
    (relative links resolved against it, or its `<base href>`)."""
    found, base = PageLinks(), url
    tree = _tree(content_type, body)
    for element in tree.iter(*_FOLLOWED) if tree is not None else ():
        tag = element.tag
        rel = set((element.get("rel") or "").lower().split())
        href = (element.get("href") or "").strip()
        if tag == "base" and href:
            base = urljoin(base, href)
        elif tag == "a" and href and "nofollow" not in rel:
            found.links.append(urljoin(base, href))
        elif tag == "link" and href and "alternate" in rel and element.get("hreflang"):
            found.alternates.append(urljoin(base, href))
        elif tag == "link" and href and "canonical" in rel and found.canonical is None:
            found.canonical = urljoin(base, href)
        elif tag == "meta" and (element.get("name") or "").lower() in ("robots", "googlebot"):
            directives = {part.strip() for part in (element.get("content") or "").lower()
                          .split(",")}
            found.nofollow |= bool({"nofollow", "none"} & directives)
            found.noindex |= bool({"noindex", "none"} & directives)
    header = {part.strip() for part in robots_header.lower().split(",")}
    found.nofollow |= bool({"nofollow", "none"} & header)
    found.noindex |= bool({"noindex", "none"} & header)
    return found
