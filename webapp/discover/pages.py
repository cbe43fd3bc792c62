"""What a crawler reads in a page: its text in the right encoding, the links it may follow,
its canonical URL and its robots directives. Pure functions of the bytes and headers."""

from __future__ import annotations

from dataclasses import dataclass, field
from urllib.parse import urljoin

from webapp.outbound import html_tree


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


# Pages are read by webapp.outbound.html: libxml2, in time that grows with their length.
_FOLLOWED = ("base", "a", "link", "meta")


def read_page(url: str, content_type: str, body: bytes,
              robots_header: str = "") -> PageLinks:
    """The links, alternates, canonical and robots directives of an HTML page at `url`
    (relative links resolved against it, or its `<base href>`)."""
    found, base = PageLinks(), url
    tree = html_tree(content_type, body)
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
