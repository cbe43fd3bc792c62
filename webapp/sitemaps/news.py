"""A news publisher's news sitemap: `<stem>-news.xml` (then `<stem>-news-2.xml`, ...) beside
the site's urlset files, listed in its index, holding the articles published in the last two
days, at most 1,000 per file (webapp.protocol.news has Google's rules).

The urlset files list the same URLs as ever; the news files are written anew at every run
(they hold two days of articles, a few thousand URLs at most), and the run records when the
oldest of their articles ages out (`Site.news_due_at`), so the scheduler runs the site again
then (jobs.due) and no file lists an article older than two days for longer than a tick. An
article dated ahead of the run is left out until its date, which is then the site's
`news_due_at` if it comes first.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from contextlib import closing
from datetime import datetime
from pathlib import Path

from sqlalchemy import Connection, select

from webapp.models import Site, Url, UrlCheck, UrlNews
from webapp.protocol import SITEMAP_NS, escape
from webapp.protocol.news import (
    MAX_NEWS_PER_FILE,
    NEWS_NS,
    ages_out_at,
    in_window,
    published_at,
    window_start,
)
from webapp.sitemaps.build import BuiltFile, Limits, UrlsetWriter, url_fragment, urlset_open
from webapp.sitemaps.rows import STREAM_OPTIONS
from webapp.verify import publishing

KIND = "news"


def news_stem(stem: str) -> str:
    return f"{stem}-news"


def news_header(stylesheet: str | None) -> str:
    """The urlset start tag of a news file: the sitemap and news namespaces."""
    return urlset_open(stylesheet=stylesheet).replace(
        f' xmlns="{SITEMAP_NS}"', f' xmlns="{SITEMAP_NS}" xmlns:news="{NEWS_NS}"', 1)


def news_fragment(name: str, language: str, publication_date: str, title: str) -> str:
    """A `news:news` element, children in the schema's order."""
    return (f"<news:news><news:publication><news:name>{escape(name)}</news:name>"
            f"<news:language>{language}</news:language></news:publication>"
            f"<news:publication_date>{publication_date}</news:publication_date>"
            f"<news:title>{escape(title)}</news:title></news:news>")


def articles(connection: Connection, site: Site, now: datetime,
             held: list[datetime] | None = None) -> Iterator[tuple[int, str, str, str]]:
    """(url id, loc, publication date, title) of the site's live, published articles in the
    two-day window at `now`, in id order; the moment of each dated after `now` goes to
    `held`."""
    # Stored dates share one format, so text order is time order: the day the window starts
    # picks the candidates, the exact moment is checked here.
    first_day = window_start(now).date().isoformat()
    # From the articles of the window (few, in their date index) to their URLs by key:
    # `site_id + 0` keeps SQLite from walking every URL of the site first (as rows.uses
    # explains), and so does ordering by `id + 0`, a sort of the few found (by the key itself,
    # SQLite walked the URLs in key order to save that sort: a million for 10,000 articles).
    rows = connection.execute(
        select(Url.id, Url.loc, UrlNews.publication_date, UrlNews.title)
        .select_from(UrlNews).join(Url, Url.id == UrlNews.url_id)
        .outerjoin(UrlCheck, UrlCheck.url_id == Url.id)
        .where(Url.site_id + 0 == site.id, Url.deleted_at.is_(None), publishing.kept(site),
               UrlNews.publication_date >= first_day).order_by(Url.id + 0),
        execution_options=STREAM_OPTIONS)
    try:
        for url_id, loc, publication_date, title in rows:
            if in_window(publication_date, now):
                yield url_id, loc, publication_date, title
            elif held is not None and published_at(publication_date) > window_start(now):
                held.append(published_at(publication_date))
    finally:
        rows.close()  # a server-side cursor on PostgreSQL, however the reading ends


def write_news_files(connection: Connection, site: Site, folder: Path, stem: str,
                     stylesheet: str | None, now: datetime,
                     ) -> tuple[list[BuiltFile], datetime | None]:
    """The site's news files written into `folder`, and when they are next due to change: the
    oldest article they list ages out, or one dated ahead of `now` comes in (None: neither).
    No files for a site that is no news publisher, nor for one without an article in the
    window: a urlset must list at least one URL."""
    if not site.news_name:
        return [], None
    due: list[datetime] = []

    def entries() -> Iterator[tuple[int, str]]:
        for url_id, loc, publication_date, title in articles(connection, site, now, due):
            due.append(ages_out_at(publication_date))
            yield url_id, url_fragment(loc, None, None, None, news_fragment(
                site.news_name, site.news_language or "", publication_date, title))

    writer = UrlsetWriter(folder, news_stem(stem), news_header(stylesheet),
                          Limits(max_urls=MAX_NEWS_PER_FILE))
    with closing(entries()) as fragments:
        files = writer.write(fragments)
    for built in files:
        built.kind = KIND
    if files:  # sitemap-news.xml, sitemap-news-2.xml, ...
        first = f"{news_stem(stem)}.xml"
        for suffix in ("", ".gz"):
            os.replace(folder / f"{files[0].name}{suffix}", folder / f"{first}{suffix}")
        files[0].name = first
    return files, min(due, default=None)


def news_sitemap_names(files) -> list[str]:
    """The names of the news files among a published set's files, in order."""
    return sorted((f.name for f in files if f.kind == KIND), key=lambda n: (len(n), n))
