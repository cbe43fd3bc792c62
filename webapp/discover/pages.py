"""What a crawler reads in a page: its text in the right encoding, the links it may follow,
its canonical URL and its robots directives. Pure functions of the bytes and headers."""

from __future__ import annotations

import codecs
import re
from dataclasses import dataclass, field
from html.parser import HTMLParser
from urllib.parse import urljoin

_META_CHARSET = re.compile(rb"""<meta[^>]+charset\s*=\s*["']?([A-Za-z0-9._:\-]+)""", re.I)
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


class _Reader(HTMLParser):
    def __init__(self, base: str):
        super().__init__(convert_charrefs=True)
        self.base, self.found = base, PageLinks()

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        values = {name: (value or "") for name, value in attrs}
        rel = set(values.get("rel", "").lower().split())
        href = values.get("href", "").strip()
        if tag == "base" and href:
            self.base = urljoin(self.base, href)
        elif tag == "a" and href and "nofollow" not in rel:
            self.found.links.append(urljoin(self.base, href))
        elif tag == "link" and href and "alternate" in rel and values.get("hreflang"):
            self.found.alternates.append(urljoin(self.base, href))
        elif tag == "link" and href and "canonical" in rel and self.found.canonical is None:
            self.found.canonical = urljoin(self.base, href)
        elif tag == "meta" and values.get("name", "").lower() in ("robots", "googlebot"):
            directives = {part.strip() for part in values.get("content", "").lower().split(",")}
            self.found.nofollow |= bool({"nofollow", "none"} & directives)
            self.found.noindex |= bool({"noindex", "none"} & directives)


def read_page(url: str, content_type: str, body: bytes,
              robots_header: str = "") -> PageLinks:
    """The links, alternates, canonical and robots directives of an HTML page at `url`
    (relative links resolved against it, or its `<base href>`)."""
    reader = _Reader(url)
    reader.feed(body.decode(charset(content_type, body), "replace"))
    reader.close()
    found = reader.found
    header = {part.strip() for part in robots_header.lower().split(",")}
    found.nofollow |= bool({"nofollow", "none"} & header)
    found.noindex |= bool({"noindex", "none"} & header)
    return found
