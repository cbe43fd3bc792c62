"""News data through every input path: the JSON API, a CSV file and its export, a sitemap
import, the command line and the URL edit page; and a property test from input to the
published news file."""

from __future__ import annotations

import io
import re
from datetime import UTC, datetime, timedelta

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from sqlalchemy import select

from tests.builders import make_site
from tests.sitemap_schema import locs, parse
from webapp import jobs
from webapp.accounts.tokens import create_token
from webapp.accounts.users import create_user
from webapp.errors import InvalidValue
from webapp.models import Site, Url, UrlNews
from webapp.outbound import Policy
from webapp.protocol.news import check_news
from webapp.sitemaps import get_store
from webapp.sites import update_site
from webapp.urls import csv_chunks, import_opened, import_urls, open_import, save_url
from webapp.urls.edit import delete_urls
from webapp.urls.news import save_news

SHOP = "https://shop.example.com/"
NEWS = {"news": "http://www.google.com/schemas/sitemap-news/0.9"}


def news_of(session, loc: str):
    session.expire_all()
    row = session.scalar(select(UrlNews).join(Url, Url.id == UrlNews.url_id)
                         .where(Url.loc == loc))
    return None if row is None else (row.publication_date, row.title)


def news_site(session, **settings):
    site = make_site(session, **settings)
    update_site(session, site, {"news_name": "Shop Times", "news_language": "en"})
    session.commit()
    return site


# --- The JSON API -----------------------------------------------------------------------------

def api_of(app, session):
    user = create_user(session, "editor@example.com", "correct horse", "editor")
    _, secret = create_token(session, user, "test", "write", None)
    session.commit()
    client = app.test_client()

    def call(method, path, body=None):
        return client.open("/api/v1" + path, method=method, json=body,
                           headers={"Authorization": f"Bearer {secret}"})

    return call


def test_the_api_stores_shows_and_removes_news_data_and_names_each_refused_field(app, session):
    site = make_site(session)
    api = api_of(app, session)
    answer = api("PATCH", "/sites/shop", {"news_name": "Shop Times", "news_language": "JA"})
    assert answer.status_code == 200, answer.text
    assert (answer.json["news_name"], answer.json["news_language"]) == ("Shop Times", "ja")
    answer = api("PATCH", "/sites/shop", {"news_language": "japanese"})
    assert answer.status_code == 422 and "ISO 639" in answer.text
    answer = api("POST", "/sites/shop/urls", {"urls": [
        {"loc": f"{SHOP}a", "news": {"publication_date": "2026-11-25T09:00:00+09:00",
                                     "title": "Opening day"}},
        {"loc": f"{SHOP}b", "news": {"publication_date": "2026-11", "title": "Too vague"}},
        {"loc": f"{SHOP}c", "news": {"publication_date": "2026-11-25", "title": ""}},
        {"loc": f"{SHOP}d", "news": "Opening day"},
        {"loc": f"{SHOP}e", "news": {"publication_date": "2026-11-25"}},
    ]})
    assert answer.status_code == 200, answer.text
    assert [(e["index"], e["field"]) for e in answer.json["errors"]] == [
        (1, "news_publication_date"), (2, "news_title"), (3, "news"), (4, "news_title")]
    assert answer.json["created"] == 1
    assert news_of(session, f"{SHOP}a") == ("2026-11-25T00:00:00+00:00", "Opening day")
    listed = api("GET", "/sites/shop/urls").json["items"]
    assert listed[0]["news"] == {"publication_date": "2026-11-25T00:00:00+00:00",
                                 "title": "Opening day"}
    # The same again is no change; null removes it, and the URL counts as updated.
    again = api("POST", "/sites/shop/urls", {"urls": [
        {"loc": f"{SHOP}a", "news": {"publication_date": "2026-11-25T00:00:00Z",
                                     "title": "Opening day"}}]}).json
    assert (again["updated"], again["unchanged"]) == (0, 1)
    removed = api("POST", "/sites/shop/urls", {"urls": [{"loc": f"{SHOP}a", "news": None}]})
    assert (removed.json["updated"], removed.json["unchanged"]) == (1, 0)
    assert news_of(session, f"{SHOP}a") is None
    session.expire_all()
    assert session.get(Site, site.id).news_name == "Shop Times"


# --- CSV --------------------------------------------------------------------------------------

def test_a_csv_file_with_news_columns_stores_them_rejects_bad_rows_and_exports_them(
        app, session):
    site = news_site(session)
    text = ("loc,news_publication_date,news_title\n"
            f"{SHOP}a,2026-11-25T10:00:00+01:00,\"Rates, and more\"\n"
            f"{SHOP}b,2026-11-25,\n"
            f"{SHOP}c,,\n")
    report = import_urls(session, site, io.StringIO(text))
    session.commit()
    assert (report.added, report.rejected) == (2, 1)
    assert report.english_rejections()[0][0] == 3 and "news_title" in report.english_rejections()[0][1]
    assert news_of(session, f"{SHOP}a") == ("2026-11-25T09:00:00+00:00", "Rates, and more")
    assert news_of(session, f"{SHOP}c") is None
    exported = "".join(csv_chunks(session, site))
    header, first = exported.splitlines()[:2]
    assert header.endswith(",news_publication_date,news_title")
    assert first.endswith(',2026-11-25T09:00:00+00:00,"Rates, and more"')
    # Both cells empty on a URL that has news data: removed.
    report = import_urls(session, site, io.StringIO(f"loc,news_publication_date,news_title\n"
                                                    f"{SHOP}a,,\n"))
    session.commit()
    assert report.updated == 1 and news_of(session, f"{SHOP}a") is None


# --- Sitemap import ---------------------------------------------------------------------------

SITEMAP = """<?xml version="1.0" encoding="UTF-8"?>
<urlset xmlns="http://www.sitemaps.org/schemas/sitemap/0.9"
        xmlns:news="http://www.google.com/schemas/sitemap-news/0.9">
  <url><loc>https://shop.example.com/a</loc>
    <news:news>
      <news:publication><news:name>Other Times</news:name><news:language>de</news:language>
      </news:publication>
      <news:genres>Blog</news:genres>
      <news:publication_date>2026-11-25T08:00:00Z</news:publication_date>
      <news:title>From the archive</news:title>
    </news:news>
  </url>
  <url><loc>https://shop.example.com/b</loc>
    <news:news><news:publication><news:name>Shop Times</news:name>
      <news:language>en</news:language></news:publication>
      <news:title>No date</news:title></news:news>
  </url>
</urlset>
"""


def test_a_sitemap_import_keeps_news_entries_and_reports_a_publication_not_the_sites(
        app, session):
    site = news_site(session)
    policy = Policy.of({"NOTIFY_TIMEOUT": 1, "OUTBOUND_ALLOW": ""})
    with open_import(SITEMAP.encode(), "sitemap.xml", site.base_url, None, policy) as opened:
        report = import_opened(session, site, opened)
    session.commit()
    assert (report.added, report.rejected) == (1, 1)
    assert "news_publication_date" in report.english_rejections()[0][1]
    assert news_of(session, f"{SHOP}a") == ("2026-11-25T08:00:00+00:00", "From the archive")
    notes = [text for _, text in report.english_notes()]
    assert any("news:name" in note and "Shop Times" in note for note in notes), notes
    assert any("news:language" in note for note in notes), notes
    assert "news:genres elements not kept (this app cannot publish them): 1" in \
        report.summary().splitlines()


# --- The command line -------------------------------------------------------------------------

def test_the_cli_sets_the_news_settings_and_a_urls_news_data(app, session, runner):
    make_site(session)
    result = runner.invoke(args=["sites", "set", "shop", "news_name=Shop Times",
                                 "news_language=zh-TW"])
    assert result.exit_code == 0, result.output
    result = runner.invoke(args=["urls", "add", "shop", f"{SHOP}a", "--news-date",
                                 "2026-11-25", "--news-title", "Opening"])
    assert result.exit_code == 0, result.output
    assert news_of(session, f"{SHOP}a") == ("2026-11-25", "Opening")
    result = runner.invoke(args=["urls", "add", "shop", f"{SHOP}a", "--news-title", "Only"])
    assert result.exit_code != 0 and "news_publication_date" in result.output
    result = runner.invoke(args=["urls", "add", "shop", f"{SHOP}a", "--no-news"])
    assert "news: none" in result.output and news_of(session, f"{SHOP}a") is None
    session.expire_all()
    assert session.scalar(select(Site.news_language)) == "zh-tw"


# --- The URL edit page ------------------------------------------------------------------------

def test_the_url_edit_page_saves_news_data_and_names_a_refused_field(app, session):
    site = news_site(session)
    url, _ = save_url(session, site, f"{SHOP}a")
    create_user(session, "ed@example.com", "correct horse battery", "editor")
    session.commit()
    client = app.test_client()

    def csrf(path):
        return re.search(r'name="csrf_token" value="([^"]+)"', client.get(path).text).group(1)

    client.post("/sign-in", data={"email": "ed@example.com", "password": "correct horse battery",
                                  "csrf_token": csrf("/sign-in")})
    path = f"/sites/shop/urls/{url.id}"
    page = client.get(path).text
    assert 'name="news_title"' in page and 'name="news_publication_date"' in page
    answer = client.post(path, data={"csrf_token": csrf(path), "news_title": "Opening",
                                     "news_publication_date": "yesterday"})
    assert answer.status_code == 422
    assert 'id="e-news_publication_date"' in answer.text
    assert news_of(session, f"{SHOP}a") is None
    answer = client.post(path, data={"csrf_token": csrf(path), "news_title": "Opening",
                                     "news_publication_date": "2026-11-25T10:00+09:00"})
    assert answer.status_code == 302
    assert news_of(session, f"{SHOP}a") == ("2026-11-25T01:00:00+00:00", "Opening")
    assert 'value="Opening"' in client.get(path).text


# --- Property: refused by a named rule, or published and parsed back --------------------------

titles = st.text(st.characters(codec="utf-8", exclude_categories=("Cs",)), max_size=40)
# The run's moment is the clock's (input refuses dates more than a day ahead of it): dates
# from before the window to past the day of slack, so every side of both bounds is tried.
NOW = datetime.now(UTC).replace(microsecond=0)
dates = st.one_of(
    st.datetimes((NOW - timedelta(days=4)).replace(tzinfo=None),
                 (NOW + timedelta(days=3)).replace(tzinfo=None)).map(
        lambda moment: moment.isoformat(timespec="seconds") + "+00:00"),
    st.dates().map(str), st.sampled_from(["", "2030-01", "2030-01-10T25:00:00Z", "now"]))


def test_any_news_data_is_refused_by_a_named_rule_or_published_as_stored(app, session):
    now = NOW
    site = news_site(session, schedule="off")

    @settings(max_examples=40, database=None, deadline=None,
              suppress_health_check=[HealthCheck.too_slow])
    @given(st.lists(st.tuples(dates, titles), min_size=1, max_size=5))
    def publish(articles):
        expected = {}
        delete_urls(session, site, session.scalars(select(Url.id).where(
            Url.site_id == site.id, Url.deleted_at.is_(None))).all())  # the last example's
        for n, (date, title) in enumerate(articles):
            loc = f"{SHOP}story/{n}"
            save_url(session, site, loc)
            try:
                article = check_news(date, title)
            except InvalidValue as exc:
                assert exc.field in ("news_publication_date", "news_title")
                assert exc.rule  # said in words, by name
                save_news(session, site, loc, None)
                continue
            save_news(session, site, loc, article)
            if article is not None and \
                    now - timedelta(days=2) <= _moment(article.publication_date) <= now:
                expected[loc] = (article.publication_date, article.title)
        session.commit()
        jobs.regenerate(site.id, app, now=now)
        store = get_store(app)
        files = store.published(site.storage_key).files
        found = {}
        for name in (n for n in files if "-news" in n):
            root = parse(store.local(files[name]))
            for url in root.xpath("//*[local-name()='url']"):
                (loc,) = locs_of(url)
                found[loc] = (url.xpath("string(.//news:publication_date)", namespaces=NEWS),
                              url.xpath("string(.//news:title)", namespaces=NEWS))
        assert found == expected

    publish()


def _moment(stored: str) -> datetime:
    if len(stored) == 10:
        return datetime.fromisoformat(stored).replace(tzinfo=UTC)
    return datetime.fromisoformat(stored)


def locs_of(url) -> list[str]:
    return url.xpath("./*[local-name()='loc']/text()")


assert locs  # the schema helpers are shared with test_news
