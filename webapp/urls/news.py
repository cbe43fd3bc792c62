"""A URL's Google News article data (publication date and title) stored for many URLs at once,
in `url_news` (one row per URL): what the form, the API, the CLI, a CSV import and a sitemap
import store after the URLs' own rows. A change to it marks the URL changed, as images do."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence

from sqlalchemy import delete, insert, select, update
from sqlalchemy.orm import Session

from webapp.errors import InvalidValue, Note, rule_text
from webapp.models import Site, Url, UrlNews
from webapp.protocol.news import NEWS_NS, NewsData, check_news, too_old_note
from webapp.urls.by_loc import stored_by_loc
from webapp.urls.changes import next_change_seq
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
    ids = dict(stored_by_loc(session, site.id, list(given), (Url.loc, Url.id)))
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


KEEP_NEWS = object()  # a form without the news fields: the stored news data stays


def news_notes(article: object) -> list[Note]:
    """What a person should hear of an article they stored (form_news's, check_news's)."""
    note = too_old_note(article.publication_date) if isinstance(article, NewsData) else None
    return [] if note is None else [note]


def form_news(form: Mapping[str, str]) -> NewsData | None | object:
    """The edit form's two news fields, checked (None: both empty), or KEEP_NEWS."""
    if "news_title" not in form and "news_publication_date" not in form:
        return KEEP_NEWS
    return check_news(form.get("news_publication_date"), form.get("news_title"))


def save_news(session: Session, site: Site, loc: str, article: NewsData | None) -> bool:
    """Store one stored URL's news data (None removes it): whether it changed. What the
    form and the command line call after write_url."""
    return bool(write_news(session, site, {loc: article},
                           lambda: next_change_seq(session, site.id)))


def item_news(item: Mapping[str, object]) -> NewsData | None:
    """An API item's `news`: {"publication_date": ..., "title": ...}, or null for none."""
    value = item.get("news")
    if value is None:
        return None
    if not isinstance(value, dict) or set(value) - {"publication_date", "title"} or not all(
            isinstance(v, str) for v in value.values()):
        raise InvalidValue("news", str(value)[:80], 'must be an object {"publication_date": '
                           '"2026-05-01T10:00:00+09:00", "title": "..."} of strings, or null')
    article = check_news(value.get("publication_date"), value.get("title"))
    if article is None:
        raise InvalidValue("news", str(value)[:80], "must give publication_date and title; "
                           "null removes the news data")
    return article


def store_news(session: Session, site: Site, given: Mapping[str, NewsData | None],
               report) -> None:
    """write_news for URLs an import or upsert has just written (`report`, an ImportReport
    with `unchanged_locs` kept): a URL whose only change is its news data counts as updated."""
    if not given:
        return
    changed = write_news(session, site, given, lambda: report.take_change_seq(session, site.id))
    moved = changed & report.unchanged_locs
    report.unchanged, report.updated = report.unchanged - len(moved), report.updated + len(moved)
    report.unchanged_locs -= moved


def read_news_element(element, not_kept: Callable[[object], None]) -> dict[str, str]:
    """The texts of a sitemap's `news:news` element: name, language, publication_date, title
    ("" for one not there); each other child (access, genres, keywords) goes to `not_kept`."""
    found = dict.fromkeys(("name", "language", "publication_date", "title"), "")
    for child in element:
        if not isinstance(child.tag, str):
            continue
        local = child.tag[len(NEWS_NS) + 2:] if child.tag.startswith(f"{{{NEWS_NS}}}") else None
        if local == "publication":
            for part in child:
                part_name = part.tag[len(NEWS_NS) + 2:] if isinstance(part.tag, str) and \
                    part.tag.startswith(f"{{{NEWS_NS}}}") else None
                if part_name in ("name", "language"):
                    found[part_name] = (part.text or "").strip()
                elif isinstance(part.tag, str):
                    not_kept(part)
        elif local in ("publication_date", "title"):
            found[local] = (child.text or "").strip()
        else:
            not_kept(child)
    return found


def entry_news(site: Site, news: Mapping[str, str] | None,
               ) -> tuple[NewsData | None, list[Note]]:
    """A sitemap entry's news data, checked, and notes when its publication is not the
    site's (the site's name and language are what its news sitemap says) or the article is
    too old for the news sitemap."""
    if news is None:
        return None, []
    article = check_news(news.get("publication_date"), news.get("title"))
    if article is None:
        raise InvalidValue("news:publication_date", "", rule_text(
            "is required: a <news:news> needs its publication date and title"))
    notes = [note for note in (too_old_note(article.publication_date),) if note]
    if not site.news_name:
        notes.append(Note("news:name", news.get("name", ""), rule_text(
            "the site has no news publication name yet: set news_name and news_language to "
            "publish a news sitemap")))
    elif news.get("name") != site.news_name:
        notes.append(Note("news:name", news.get("name", ""), rule_text(
            "differs from the site's news_name %(name)s, which the news sitemap says",
            name=site.news_name)))
    if site.news_name and (news.get("language") or "").lower() != site.news_language:
        notes.append(Note("news:language", news.get("language", ""), rule_text(
            "differs from the site's news_language %(language)s, which the news sitemap says",
            language=site.news_language)))
    return article, notes


def news_of(session: Session, url_ids: Sequence[int]) -> dict[int, NewsData]:
    """The stored news data of these URLs, by id."""
    found: dict[int, NewsData] = {}
    for start in range(0, len(url_ids), IN_CHUNK):
        found.update({url_id: NewsData(date, title) for url_id, date, title in session.execute(
            select(UrlNews.url_id, UrlNews.publication_date, UrlNews.title)
            .where(UrlNews.url_id.in_(url_ids[start:start + IN_CHUNK])))})
    return found
