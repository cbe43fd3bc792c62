"""Streaming a site's live URLs out of the database as `<url>` fragments, for any size of site.

Rows are read with SQLAlchemy Core (no ORM object per URL) in id order, so memory stays bounded
whatever the size of the site and every file holds a contiguous id range; the range and digest
recorded per file are what incremental regeneration builds on. Images, alternates and videos are
read as streams of their own in the same order and merged in.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterator

from sqlalchemy import Connection, Select, exists, func, select
from sqlalchemy.orm import Session

from webapp.models import Site, Url, UrlAlternate, UrlCheck, UrlImage, UrlVideo
from webapp.sitemaps.build import alternate_fragment, image_fragment, url_fragment
from webapp.sitemaps.videos import (
    VIDEO_ORDER,
    VIDEO_READ_COLUMNS,
    row_fragment,
    site_video_rows,
)
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


def _id_bounds(connection: Connection, site_id: int, after_id: int | None,
               upto_id: int | None) -> tuple[int, int]:
    """(after, upto): the url ids (after, upto] hold every URL of the site with an id in
    (after_id, upto_id]; the site's lowest and highest ids (two index look-ups) stand in for
    a bound not given."""
    if after_id is not None and upto_id is not None:
        return after_id, upto_id
    ids = select(Url.id).where(Url.site_id == site_id)
    lowest, highest = connection.execute(select(
        ids.with_only_columns(func.min(Url.id)).scalar_subquery(),
        ids.with_only_columns(func.max(Url.id)).scalar_subquery())).one()
    if lowest is None:
        return 0, 0
    return (lowest - 1 if after_id is None else after_id,
            highest if upto_id is None else upto_id)


def _extension_streams(connection: Connection, site_id: int, images: bool, alternates: bool,
                       id_range: tuple[int | None, int | None, str | None], results: list,
                       videos: bool = False) -> list[tuple[Iterator, Callable[..., str]]]:
    """(rows, render) of each extension in use: rows of (url id, render's arguments...) in url
    id order, each URL's in the order it writes them; `results` collects the open results.

    Without a section the rows are chosen by url id alone, in the range of the site's URLs:
    joining each with its URL (to leave out those of other sites, and deleted ones) cost a
    third of reading them, and _merge passes over the rows of URLs it is not writing anyway.
    A section's rows are joined with their URLs: its ids are spread among the other
    sections'."""
    after_id, upto_id, section = id_range
    if section is None:
        low, high = _id_bounds(connection, site_id, after_id, upto_id)

    def rows_of(model, columns, order_by, joined: Callable[[], Select] | None = None):
        """The model's rows: by url id range, or (a section's) joined with their URLs, by
        `joined()` when the model has a query of its own for that (ordered already)."""
        if section is None:
            statement = select(model.url_id, *columns).where(
                model.url_id > low, model.url_id <= high).order_by(model.url_id, *order_by)
        elif joined is not None:
            statement = joined()
        else:
            statement = select(model.url_id, *columns).join(Url, Url.id == model.url_id).where(
                *live_urls(site_id, *id_range)).order_by(model.url_id, *order_by)
        rows = connection.execute(statement, execution_options=STREAM_OPTIONS)
        results.append(rows)
        return rows

    streams = []
    if images:
        streams.append((rows_of(UrlImage, (UrlImage.loc, UrlImage.title, UrlImage.caption),
                                (UrlImage.position, UrlImage.id)), image_fragment))
    if alternates:
        streams.append((rows_of(UrlAlternate, (UrlAlternate.hreflang, UrlAlternate.href),
                                (UrlAlternate.hreflang,)), alternate_fragment))
    if videos:
        streams.append((rows_of(UrlVideo, VIDEO_READ_COLUMNS, VIDEO_ORDER,
                                lambda: site_video_rows(site_id, *id_range)), row_fragment))
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


def _merge(streams: list[tuple[Iterator, Callable[..., str]]],
           ) -> tuple[Callable[[int], tuple[str, float]], float]:
    """(extensions_of, the first url id the streams hold rows for): for ascending url ids from
    that one on, extensions_of(url_id) gives the URL's fragments (the streams' in their order,
    each stream's rows in its own) and the next url id any stream holds rows for (infinity when
    they are done). The rows of ids never asked for (URLs not written) are passed unwritten."""
    pending = [next(rows, None) for rows, _render in streams]

    def next_id() -> float:
        return min((row[0] for row in pending if row is not None), default=math.inf)

    def extensions_of(url_id: int) -> tuple[str, float]:
        found = ""
        for i, (rows, render) in enumerate(streams):
            row = pending[i]
            while row is not None and row[0] < url_id:
                row = next(rows, None)
            while row is not None and row[0] == url_id:
                found += render(*row[1:])
                row = next(rows, None)
            pending[i] = row
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
