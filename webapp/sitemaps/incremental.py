"""Regenerating only the files that hold changed URLs.

Every urlset file holds a contiguous range of URL ids, recorded with the generation. URL ids
never move: a new URL gets a higher id than every other (it joins the last file), an edited or
deleted one keeps its id, and each change stamps the URL with the site's change_seq. So the
files of the last generation whose ranges hold no URL changed since that generation started
are still right, byte for byte: the new set names their stored bodies instead of writing them.
Their lastmod stays as it was, so the index tells crawlers which files to fetch again.

Anything else that shapes the files (the header, default values, limits, names) is summed up
in a layout digest; when it differs, or when a rebuilt file would no longer be exactly one file
in its place, the whole set is written again.
"""

from __future__ import annotations

import bisect
import hashlib
import json
from collections.abc import Callable, Iterator
from contextlib import closing
from dataclasses import dataclass

from sqlalchemy import select
from sqlalchemy.orm import Session

from webapp.models import Generation, GenerationFile, Site, Url
from webapp.sitemaps.build import BuiltFile, Limits, UrlsetWriter

# Past this many changed URLs, finding their files costs more than it can save.
MAX_CHANGED = 100_000


def layout(site: Site, header: str, limits: Limits, entry: str) -> str:
    """The digest of everything besides the URLs that shapes a set's files."""
    shape = [header, site.default_changefreq, site.default_priority, limits.max_urls,
             limits.max_bytes, site.sitemap_url, entry]
    if site.lastmod_source != "given" or site.leave_out != "broken,noindex,canonical":
        # Verification's settings choose entries and dates: another choice, another layout
        # (left out of the digest at their first defaults, so sets published before
        # verification stayed reusable; since `blocked` joined leave_out's default, 0028,
        # a set published before it is rebuilt once, leaving out what robots.txt blocks).
        shape += [site.lastmod_source, site.leave_out]
    if site.sections:  # another definition, other files (left out when none, as above)
        shape.append(site.sections)
    return hashlib.sha256(json.dumps(shape).encode()).hexdigest()


@dataclass(frozen=True)
class Plan:
    """The files of `source`, in order, and which of them hold changed URLs."""

    source: Generation
    files: list[GenerationFile]
    dirty: list[bool]

    def id_range(self, i: int) -> tuple[int | None, int | None]:
        """The ids file i covers: (after, upto]; the last file takes every newer id too."""
        after = self.files[i - 1].last_url_id if i else None
        upto = self.files[i].last_url_id if i < len(self.files) - 1 else None
        return after, upto


def last_source(session: Session, site: Site, shape: str, kept: Callable[[int], bool],
                ) -> Generation | None:
    """The last generation, when its files can be reused: laid out as `shape`, its change
    number known and its bodies kept."""
    source = session.scalar(
        select(Generation).where(Generation.site_id == site.id, Generation.status == "succeeded")
        .order_by(Generation.id.desc()).limit(1))
    if source is None or source.layout != shape or source.change_seq is None \
            or not kept(source.id):
        return None
    return source


def plan(session: Session, site: Site, shape: str, kept: Callable[[int], bool]) -> Plan | None:
    """What the last generation left that can be reused, or None for a full run."""
    source = last_source(session, site, shape, kept)
    if source is None:
        return None
    files = sorted((f for f in source.files if f.kind == "urlset"),
                   key=lambda f: f.first_url_id or 0)
    if len(files) < 2 or any(f.first_url_id is None or f.last_url_id is None for f in files):
        return None  # a single file is its own entry point: renaming it is a full run anyway
    changed = session.scalars(select(Url.id).where(
        Url.site_id == site.id, Url.change_seq > source.change_seq).limit(MAX_CHANGED + 1)).all()
    if len(changed) > MAX_CHANGED:
        return None
    bounds = [f.last_url_id for f in files[:-1]]
    dirty = [False] * len(files)
    for url_id in changed:
        dirty[bisect.bisect_left(bounds, url_id)] = True
    if all(dirty):
        return None
    return Plan(source, files, dirty)


def reused(file: GenerationFile) -> BuiltFile:
    return BuiltFile(file.name, file.kind, file.url_count, file.bytes, file.gzip_bytes,
                     file.sha256, file.first_url_id, file.last_url_id)


def write_changed(reuse: Plan, writer: Callable[[int], UrlsetWriter],
                  entries: Callable[[int | None, int | None], Iterator[tuple[int, str]]],
                  at_least: int = 2) -> list[BuiltFile] | None:
    """Keep the unchanged files of the last generation (their bodies are stored: nothing is
    copied) and write the others again (`writer(n)` writes from file number n,
    `entries(after, upto)` gives the URLs of an id range); None when that cannot keep every
    file in its place, or makes fewer than `at_least` files (a single file is the entry
    sitemap, under another name, unless the site has sections)."""
    files: list[BuiltFile] = []
    last = len(reuse.files) - 1
    for i, before in enumerate(reuse.files):
        if not reuse.dirty[i]:
            files.append(reused(before))
            continue
        with closing(entries(*reuse.id_range(i))) as urls:
            written = writer(i + 1).write(urls)
        if i < last and len(written) != 1:
            return None  # emptied, or grown past a file: the later files would move
        files.extend(written)
    return files if len(files) >= at_least else None
