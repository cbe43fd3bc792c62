"""What changed between two published generations, read from their files."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

from webapp.protocol import SITEMAP_NS
from webapp.sitemaps.publish import PublishedFile, PublishedSet

_URL = f"{{{SITEMAP_NS}}}url"
_LOC = f"{{{SITEMAP_NS}}}loc"
_FIELDS = ("lastmod", "changefreq", "priority")


@dataclass
class Diff:
    added: list[str] = field(default_factory=list)
    removed: list[str] = field(default_factory=list)
    changed: list[tuple[str, str]] = field(default_factory=list)  # (loc, what changed)


def _entries(published: PublishedSet, local: Callable[[PublishedFile], Path],
             ) -> Iterator[tuple[str, tuple]]:
    """(loc, everything else written for it) for every URL in the set's urlset files."""
    from lxml import etree  # loaded by the first comparison, not by every run that imports jobs

    for file in sorted(published.files.values(), key=lambda f: f.name):
        if file.kind != "urlset":
            continue
        for _, element in etree.iterparse(str(local(file)), tag=_URL, resolve_entities=False,
                                          no_network=True):
            loc = element.findtext(_LOC)
            fields = tuple(element.findtext(f"{{{SITEMAP_NS}}}{name}") for name in _FIELDS)
            extensions = b"".join(etree.tostring(child) for child in element
                                  if not str(child.tag).startswith(f"{{{SITEMAP_NS}}}"))
            yield loc, (*fields, extensions)
            element.clear()


def _describe(before: tuple, after: tuple) -> str:
    parts = [f"{name} {old or '-'} -> {new or '-'}"
             for name, old, new in zip(_FIELDS, before, after) if old != new]
    if before[-1] != after[-1]:
        parts.append("images, alternates or videos changed")
    return ", ".join(parts)


def diff(old: PublishedSet, new: PublishedSet,
         local: Callable[[PublishedFile], Path] = lambda file: file.path) -> Diff:
    """URLs added, removed and changed from `old` to `new`, in the order the files list them;
    `local(file)` gives a file's content on this node (SitemapStore.local fetches it)."""
    before = dict(_entries(old, local))
    result = Diff()
    for loc, entry in _entries(new, local):
        previous = before.pop(loc, None)
        if previous is None:
            result.added.append(loc)
        elif previous != entry:
            result.changed.append((loc, _describe(previous, entry)))
    result.removed = list(before)
    return result
