"""Streaming a site's live URLs out of the database as `<url>` fragments, for any size of site.

Rows are read with SQLAlchemy Core (no ORM object per URL) in id order, so memory stays bounded
whatever the size of the site and every file holds a contiguous id range; the range and digest
recorded per file are what incremental regeneration builds on. Images, alternates and videos are
read as streams of their own in the same order and merged in.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Callable, Iterator

from sqlalchemy import Connection, exists, func, select
from sqlalchemy.orm import Session

from webapp.models import Site, Url, UrlAlternate, UrlCheck, UrlImage
from webapp.sitemaps.build import alternate_fragment, image_fragment, url_fragment
from webapp.sitemaps.videos import site_video_rows, video_fragment
from webapp.verify import publishing

STREAM_OPTIONS = {"stream_results": True, "yield_per": 10_000}


def live_urls(site_id: int, after_id: int | None = None, upto_id: int | None = None,
              section: str | None = None):
    """Conditions for the site's live URLs, with ids in (after_id, upto_id] when given, and
    in one section when given ("" the URLs of none; see sections.py)."""
    conditions = [Url.site_id == site_id, Url.deleted_at.is_(None)]
    if section is not None:
        conditions.append(Url.section == section)
    if after_id is not None:
        conditions.append(Url.id > after_id)
    if upto_id is not None:
        conditions.append(Url.id <= upto_id)
    return tuple(conditions)


def _grouped(rows, render) -> Iterator[tuple[int, str]]:
    """(url id, concatenated fragments) from rows ordered by url id."""
    for url_id, group in itertools.groupby(rows, key=lambda row: row[0]):
        yield url_id, "".join(render(*row[1:]) for row in group)


def _extension_streams(connection: Connection, site_id: int, images: bool, alternates: bool,
                       id_range: tuple[int | None, int | None, str | None], results: list,
                       videos: bool = False):
    """Fragments of each extension in use, by url id; `results` collects the open results."""
    streams = []
    if images:
        rows = connection.execute(
            select(UrlImage.url_id, UrlImage.loc, UrlImage.title, UrlImage.caption)
            .join(Url, Url.id == UrlImage.url_id).where(*live_urls(site_id, *id_range))
            .order_by(UrlImage.url_id, UrlImage.position, UrlImage.id),
            execution_options=STREAM_OPTIONS)
        results.append(rows)
        streams.append(_grouped(rows, image_fragment))
    if alternates:
        rows = connection.execute(
            select(UrlAlternate.url_id, UrlAlternate.hreflang, UrlAlternate.href)
            .join(Url, Url.id == UrlAlternate.url_id).where(*live_urls(site_id, *id_range))
            .order_by(UrlAlternate.url_id, UrlAlternate.hreflang),
            execution_options=STREAM_OPTIONS)
        results.append(rows)
        streams.append(_grouped(rows, alternate_fragment))
    if videos:
        rows = connection.execute(site_video_rows(site_id, *id_range),
                                  execution_options=STREAM_OPTIONS)
        results.append(rows)
        streams.append(_grouped(rows, video_fragment))
    return streams


def url_entries(connection: Connection, site: Site, images: bool = False,
                alternates: bool = False, after_id: int | None = None,
                upto_id: int | None = None, section: str | None = None,
                videos: bool = False) -> Iterator[tuple[int, str]]:
    """(url id, `<url>` fragment) for every live URL of the site (with an id in
    (after_id, upto_id] and in `section` when given), in id order."""
    default_changefreq, default_priority = site.default_changefreq, site.default_priority
    lastmod_of = publishing.lastmod_of(site.lastmod_source)
    # Each URL with its last check: what verification found leaves some out, and may date it.
    rows = connection.execute(
        select(Url.id, Url.loc, Url.lastmod, Url.changefreq, Url.priority,
               UrlCheck.content_changed_at)
        .outerjoin(UrlCheck, UrlCheck.url_id == Url.id)
        .where(*live_urls(site.id, after_id, upto_id, section), publishing.kept(site))
        .order_by(Url.id),
        execution_options=STREAM_OPTIONS)
    results = [rows]
    # Closed however the reading ends: a streamed result is a server-side cursor on
    # PostgreSQL, which must not be left to the garbage collector when a run fails midway.
    try:
        extensions = _Merged(_extension_streams(connection, site.id, images, alternates,
                                                (after_id, upto_id, section), results, videos))
        for url_id, loc, lastmod, changefreq, priority, content_changed_at in rows:
            yield url_id, url_fragment(loc, lastmod_of(lastmod, content_changed_at),
                                       changefreq or default_changefreq,
                                       default_priority if priority is None else priority,
                                       extensions.of(url_id) if url_id >= extensions.next_id
                                       else "")
    finally:
        for result in results:
            result.close()


class _Merged:
    """For ascending url ids, the extension fragments the streams (ordered by url id) hold.

    `next_id` is the lowest url id any stream has a fragment for: below it a URL has none,
    and is not asked about (most URLs of a site with videos have none)."""

    def __init__(self, streams: list[Iterator[tuple[int, str]]]):
        self.streams = streams
        self.pending = [next(stream, None) for stream in streams]
        self.next_id = self._lowest()

    def _lowest(self) -> float:
        return min((entry[0] for entry in self.pending if entry is not None), default=math.inf)

    def of(self, url_id: int) -> str:
        found, pending = "", self.pending
        for i, stream in enumerate(self.streams):
            while pending[i] is not None and pending[i][0] < url_id:
                pending[i] = next(stream, None)
            if pending[i] is not None and pending[i][0] == url_id:
                found += pending[i][1]
                pending[i] = next(stream, None)
        self.next_id = self._lowest()
        return found


def uses(session: Session, site_id: int, model) -> bool:
    """Whether any live URL of the site has a row of `model` (images, alternates).

    `site_id + 0` keeps SQLite from starting at the site's URLs (an index on them looks
    cheap to it without statistics), which walked a million URLs to find none; starting at
    the extension rows, usually few, each URL is found by its key.
    """
    return bool(session.scalar(select(exists().where(
        model.url_id == Url.id, Url.site_id + 0 == site_id, Url.deleted_at.is_(None)))))



def counted(entries: Iterator[tuple[int, str]], total: int,
             progress: Callable[[int, int], None]) -> Iterator[tuple[int, str]]:
    for done, entry in enumerate(entries, start=1):
        if done % 10_000 == 0:
            progress(done, total)
        yield entry
    progress(total, total)


def live_count(session: Session, site_id: int) -> int:
    return session.scalar(select(func.count()).select_from(Url).where(*live_urls(site_id)))
