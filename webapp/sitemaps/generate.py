"""Turning a site's stored URLs into a published sitemap set: rows (rows.py) are written into
files (build.py), only the changed ones when the last set can be reused (incremental.py), and
the set is recorded and published (publish.py), unless it is exactly what is served already.
"""

from __future__ import annotations

import hashlib
import os
import shutil
from collections.abc import Callable
from contextlib import closing
from dataclasses import dataclass
from datetime import datetime, timedelta
from pathlib import Path

from sqlalchemy import select
from sqlalchemy.orm import Session

from webapp.models import (
    SUCCEEDED_RUN,
    Generation,
    GenerationFile,
    Site,
    UrlAlternate,
    UrlImage,
    UrlVideo,
    utcnow,
)
from webapp.protocol import directory, normalize_lastmod
from webapp.sitemaps import incremental, news, sectioned
from webapp.sitemaps.build import (
    STYLESHEET,
    BuiltFile,
    Limits,
    UrlsetWriter,
    check_index_size,
    urlset_open,
    write_index,
)
from webapp.sitemaps.publish import Entry, SitemapStore, same_as_published
from webapp.sitemaps.rows import counted, live_count, url_entries, uses
from webapp.verify import publishing


@dataclass(frozen=True)
class Published:
    files: list
    url_count: int
    published: bool
    unchanged: bool = False  # the files equal the published ones: nothing was published

    @property
    def bytes(self) -> int:
        return sum(f.bytes for f in self.files)


def _previous_files(session: Session, site_id: int) -> tuple[int | None, dict[str, GenerationFile]]:
    """The last successful generation of the site and its files by name."""
    latest = session.scalar(
        select(Generation.id).where(Generation.site_id == site_id, SUCCEEDED_RUN)
        .order_by(Generation.id.desc()).limit(1))
    if latest is None:
        return None, {}
    files = session.scalars(select(GenerationFile).where(GenerationFile.generation_id == latest))
    return latest, {f.name: f for f in files}


def _rename(folder: Path, built: BuiltFile, name: str) -> None:
    os.replace(folder / built.name, folder / name)
    os.replace(folder / f"{built.name}.gz", folder / f"{name}.gz")
    built.name = name


def later_than(previous: dict[str, GenerationFile], stamp: str) -> str:
    """`stamp`, or one second after the newest lastmod published if that is not earlier.

    A lastmod has whole seconds: two runs within one second would otherwise publish the same
    index bytes (and ETag) over changed files, and a crawler revalidating the index would
    never hear of the second change. A clock set back is covered the same way.
    """
    newest = max((f.lastmod for f in previous.values()), default="")
    if newest and stamp <= newest:  # one format throughout, so text order is time order
        return normalize_lastmod(datetime.fromisoformat(newest) + timedelta(seconds=1))
    return stamp


def carry_lastmods(files: list[BuiltFile], previous: dict[str, GenerationFile], stamp: str) -> None:
    """A file keeps its lastmod while its content is unchanged, so crawlers can skip it."""
    for built in files:
        before = previous.get(built.name)
        built.lastmod = before.lastmod if before and before.sha256 == built.sha256 else stamp


def stylesheet_entry(name: str) -> Entry:
    """The stylesheet's entry in a set; its lastmod is given when the set is dated."""
    data = STYLESHEET.read_bytes()
    return Entry(name, "stylesheet", hashlib.sha256(data).hexdigest(), len(data), None, None)


def dated_stylesheet(before: tuple[str, datetime | None] | None, stylesheet: Entry | None,
                     stamp: str) -> Entry | None:
    """The stylesheet's lastmod (its Last-Modified), kept while its bytes are unchanged from
    those served (`before`: their digest and lastmod)."""
    if stylesheet is None:
        return None
    lastmod = normalize_lastmod(before[1]) if before and before[1] and \
        before[0] == stylesheet.sha256 else stamp
    return stylesheet._replace(lastmod=lastmod)


def generate_site(session: Session, site: Site, generation: Generation, store: SitemapStore,
                  limits: Limits | None = None, now: datetime | None = None,
                  before_publish: Callable[[], None] = lambda: None,
                  progress: Callable[[int, int], None] | None = None) -> Published:
    """Write, record and publish a sitemap set for `site`: only the files holding changed
    URLs when the last generation's files can be reused (see incremental.py), else all.

    The caller owns the transaction: `before_publish` runs once the files and their records
    are ready, so the caller can commit the records first; the set is then stored and the
    site's published generation moved in the session's transaction, and goes live when the
    caller commits (jobs records the run as succeeded in that same commit).
    `progress(done, total)` hears how many URLs are written, every 10,000.
    """
    limits = limits or Limits(max_urls=site.max_urls_per_file)
    stem = entry_name(site).removesuffix(".xml")
    images = uses(session, site.id, UrlImage)
    alternates = uses(session, site.id, UrlAlternate)
    videos = uses(session, site.id, UrlVideo)
    stylesheet = f"{stem}.xsl" if site.stylesheet else None
    header = urlset_open(images, alternates, stylesheet, videos=videos)
    # Kept aside until the files are recorded: setting it now would make the next query
    # write it, and on SQLite hold the database's one write lock for the whole run.
    layout = incremental.layout(site, header, limits, entry_name(site))

    def kept(generation_id: int) -> bool:
        return generation_id in store.kept_generations(site.storage_key)

    reuse = None if site.sections else incremental.plan(session, site, layout, kept)
    with store.staging(site.storage_key, generation.id) as folder:
        files = None
        if site.sections:  # each section in files of its own (sectioned.py)
            files = sectioned.write_files(
                session, site, layout, kept, folder, header, limits,
                lambda name, after, upto: url_entries(session.connection(), site, images,
                                                      alternates, after, upto, name,
                                                      videos=videos),
                generation.change_seq, progress)
        elif reuse is not None:
            connection = session.connection()
            files = incremental.write_changed(
                reuse, lambda first_number: UrlsetWriter(
                    folder, stem, header, limits, first_number=first_number),
                lambda after, upto: url_entries(connection, site, images, alternates, after,
                                                upto, videos=videos))
            if files is not None:
                check_index_size(len(files), limits)
        if files is None:
            _empty(folder)  # files written before falling back are written again
            live = live_count(session, site.id)
            check_index_size(-(-live // limits.max_urls), limits)  # before writing anything
            writer = UrlsetWriter(folder, stem, header, limits)
            with closing(url_entries(session.connection(), site, images, alternates,
                                     videos=videos)) as entries:
                files = writer.write(counted(entries, live, progress) if progress else entries)
        news_files, site_news_due = news.write_news_files(
            session.connection(), site, folder, stem, stylesheet, now or utcnow())
        if len(files) == 1 and not site.news_name and not site.sections:
            # A news publisher's or a sectioned site's entry is an index, always.
            _rename(folder, files[0], entry_name(site))
        files += news_files
        if not files:
            stylesheet = None  # nothing to render
        elif stylesheet:
            shutil.copyfile(STYLESHEET, folder / stylesheet)
        generation.layout = layout
        site.news_due_at = site_news_due
        generation.left_out = publishing.left_out_counts(
            session, [site.id], {site.id: site}).get(site.id)
        return _finish(session, site, generation, store, folder, files,
                       stylesheet_entry(stylesheet) if stylesheet else None, limits, now,
                       before_publish)


def _empty(folder: Path) -> None:
    for path in folder.iterdir():
        path.unlink()


def republish_site(session: Session, site: Site, generation: Generation, store: SitemapStore,
                   source: Generation, now: datetime | None = None,
                   before_publish: Callable[[], None] = lambda: None) -> Published:
    """Publish the urlset files of an older kept generation again, as `generation`.

    Going back is a change like any other: each file whose content differs from what is
    published now gets a new lastmod, and the index is written anew to say so. The files'
    bodies are stored already: the new set names them, nothing is copied.
    """
    kept = store.generation_set(site.storage_key, source.id)
    files = [BuiltFile(f.name, f.kind, f.url_count, f.bytes, f.gzip_bytes, f.sha256,
                       f.first_url_id, f.last_url_id) for f in source.files
             if f.kind in ("urlset", news.KIND)]
    stylesheet = next((Entry(f.name, f.kind, f.sha256, f.size, None, None)
                       for f in kept.files.values() if f.kind == "stylesheet"), None)
    with store.staging(site.storage_key, generation.id) as folder:
        return _finish(session, site, generation, store, folder, files, stylesheet,
                       Limits(max_urls=site.max_urls_per_file), now, before_publish)


def entry_name(site: Site) -> str:
    return site.sitemap_url.rsplit("/", 1)[-1]


def _finish(session: Session, site: Site, generation: Generation, store: SitemapStore,
            folder: Path, files: list[BuiltFile], stylesheet: Entry | None, limits: Limits,
            now: datetime | None, before_publish: Callable[[], None]) -> Published:
    """Date the urlset files, add the index, record the set and publish it, unless it is
    exactly what is published already."""
    previous_id, previous = _previous_files(session, site.id)
    stamp = later_than(previous, normalize_lastmod(now or utcnow()))
    carry_lastmods(files, previous, stamp)
    if files and not (len(files) == 1 and files[0].name == entry_name(site)):
        base = directory(site.sitemap_url)
        index = write_index(folder, entry_name(site),
                            [(base + f.name, f.lastmod) for f in files], limits,
                            stylesheet.name if stylesheet else None)
        carry_lastmods([index], previous, stamp)
        files.append(index)
    url_count = sum(f.url_count for f in files if f.kind == "urlset")
    digests = {f.name: f.sha256 for f in files}
    served = store.current_set(site.storage_key)
    if previous and digests == {name: f.sha256 for name, f in previous.items()} and \
            same_as_published(served, previous_id, stylesheet):
        return Published(files, url_count, published=False, unchanged=True)
    session.add_all(GenerationFile(
        generation_id=generation.id, name=f.name, kind=f.kind, url_count=f.url_count,
        bytes=f.bytes, gzip_bytes=f.gzip_bytes, sha256=f.sha256, first_url_id=f.first_url_id,
        last_url_id=f.last_url_id, lastmod=f.lastmod) for f in files)
    session.flush()
    entries = [Entry(f.name, f.kind, f.sha256, f.bytes, f.gzip_bytes, f.lastmod) for f in files]
    before = served.files.get(stylesheet.name) if served and stylesheet else None
    stylesheet = dated_stylesheet(before and (before.sha256, before.lastmod), stylesheet, stamp)
    before_publish()
    published = store.publish(session, site.storage_key, generation.id, folder,
                              entries + ([stylesheet] if stylesheet else []))
    return Published(files, url_count, published)
