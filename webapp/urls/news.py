"""A URL's Google News article data (publication date and title) stored for many URLs at once,
in `url_news` (one row per URL): what the form, the API, the CLI, a CSV import and a sitemap
import store after the URLs' own rows. A change to it marks the URL changed, as images do."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence

from sqlalchemy import delete, insert, select, update
from sqlalchemy.orm import Session

from webapp.models import Site, Url, UrlNews
from webapp.news import NewsData
from webapp.urls.children import IN_CHUNK


def write_news(session: Session, site: Site, given: Mapping[str, NewsData | None],
               change_seq: Callable[[], int]) -> set[str]:
    """Store each loc's news data (None removes it; the URLs' rows exist already); the locs
    whose news data changed. `change_seq()` gives the change number they carry."""
    changed: set[str] = set()
    locs = list(given)
    for start in range(0, len(locs), IN_CHUNK):
        changed |= _write_some(session, site, {loc: given[loc]
                                               for loc in locs[start:start + IN_CHUNK]},
                               change_seq)
    return changed


def _write_some(session: Session, site: Site, given: Mapping[str, NewsData | None],
                change_seq: Callable[[], int]) -> set[str]:
    ids = dict(session.execute(select(Url.loc, Url.id).where(
        Url.site_id == site.id, Url.loc.in_(list(given)))).all())
    stored = {url_id: NewsData(date, title) for url_id, date, title in session.execute(
        select(UrlNews.url_id, UrlNews.publication_date, UrlNews.title)
        .where(UrlNews.url_id.in_(list(ids.values()))))}
    changed = {loc for loc, news in given.items() if loc in ids and stored.get(ids[loc]) != news}
    if not changed:
        return changed
    seq = change_seq()
    replaced = [ids[loc] for loc in changed]
    session.execute(delete(UrlNews).where(UrlNews.url_id.in_(replaced)))
    rows = [{"url_id": ids[loc], "publication_date": given[loc].publication_date,
             "title": given[loc].title} for loc in changed if given[loc] is not None]
    if rows:
        session.execute(insert(UrlNews), rows)
    session.execute(update(Url).where(Url.id.in_(replaced)).values(change_seq=seq)
                    .execution_options(synchronize_session=False))
    return changed


def news_of(session: Session, url_ids: Sequence[int]) -> dict[int, NewsData]:
    """The stored news data of these URLs, by id."""
    found: dict[int, NewsData] = {}
    for start in range(0, len(url_ids), IN_CHUNK):
        found.update({url_id: NewsData(date, title) for url_id, date, title in session.execute(
            select(UrlNews.url_id, UrlNews.publication_date, UrlNews.title)
            .where(UrlNews.url_id.in_(url_ids[start:start + IN_CHUNK])))})
    return found
