"""Streaming a site's live URLs out of the database as `<url>` fragments, for any size of site.

Rows are read with SQLAlchemy Core (no ORM object per URL) in id order, so memory stays bounded
whatever the size of the site and every file holds a contiguous id range; the range and digest
recorded per file are what incremental regeneration builds on. Images, alternates and videos are
read as streams of their own in the same order and merged in.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterator

from sqlalchemy import Connection, exists, func, select
from sqlalchemy.orm import Session

from webapp.models import Site, Url, UrlAlternate, UrlCheck, UrlImage
from webapp.sitemaps.build import alternate_fragment, image_fragment, url_fragment
from webapp.sitemaps.videos import row_fragment, site_video_rows
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


def _by_url(rows, render) -> Iterator[tuple[int, str]]:
    """(url id, fragment) of each row (url id first, then render's arguments), in the rows'
    order; _merge joins a URL's fragments."""
    return ((row[0], render(*row[1:])) for row in rows)


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
        streams.append(_by_url(rows, image_fragment))
    if alternates:
        rows = connection.execute(
            select(UrlAlternate.url_id, UrlAlternate.hreflang, UrlAlternate.href)
            .join(Url, Url.id == UrlAlternate.url_id).where(*live_urls(site_id, *id_range))
            .order_by(UrlAlternate.url_id, UrlAlternate.hreflang),
            execution_options=STREAM_OPTIONS)
        results.append(rows)
        streams.append(_by_url(rows, alternate_fragment))
    if videos:
        rows = connection.execute(site_video_rows(site_id, *id_range),
                                  execution_options=STREAM_OPTIONS)
        results.append(rows)
        streams.append(_by_url(rows, row_fragment))
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
        extensions_of, next_id = _merge(_extension_streams(
            connection, site.id, images, alternates, (after_id, upto_id, section), results,
            videos))
        for url_id, loc, lastmod, changefreq, priority, content_changed_at in rows:
            # Most URLs have no extension: a comparison, not a call, says so.
            if url_id < next_id:
                extensions = ""
            else:
                extensions, next_id = extensions_of(url_id)
            yield url_id, url_fragment(loc, lastmod_of(lastmod, content_changed_at),
                                       changefreq or default_changefreq,
                                       default_priority if priority is None else priority,
                                       extensions)
    finally:
        for result in results:
            result.close()


def _merge(streams: list[Iterator[tuple[int, str]]],
           ) -> tuple[Callable[[int], tuple[str, float]], float]:
    """(extensions_of, the first url id the streams hold fragments for): for ascending url ids
    from that one on, extensions_of(url_id) gives the url's fragments (the streams' in their
    order, each stream's in its own) and the next url id any stream holds fragments for
    (infinity when they are done). Fragments of ids never asked for (URLs left out) are passed."""
    pending = [next(stream, None) for stream in streams]

    def next_id() -> float:
        return min((item[0] for item in pending if item is not None), default=math.inf)

    def extensions_of(url_id: int) -> tuple[str, float]:
        found = ""
        for i, stream in enumerate(streams):
            item = pending[i]
            while item is not None and item[0] < url_id:
                item = next(stream, None)
            while item is not None and item[0] == url_id:
                found += item[1]
                item = next(stream, None)
            pending[i] = item
        return found, next_id()

    return extensions_of, next_id()


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
