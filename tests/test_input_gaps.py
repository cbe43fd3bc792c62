"""What independent parsers found in the published files (issue 32), each rule on every input
path it applies to: the dashboard's forms, the command line (`urls add`), a CSV import, a
sitemap import and the JSON API's bulk upsert. Dates are relative to the clock, as the rules
are."""

from __future__ import annotations

import html
import io
from datetime import UTC, datetime, timedelta

import pytest
from sqlalchemy import select

from tests.builders import make_site
from tests.test_i18n import signed_in as i18n_signed_in
from webapp.accounts.tokens import create_token
from webapp.accounts.users import create_user
from webapp.models import Url
from webapp.outbound import Policy
from webapp.urls import import_opened, import_urls, open_import

SHOP = "https://shop.example.com/"
PASSWORD = "correct horse battery"
AHEAD = "must not be more than a day in the future"

pytestmark = pytest.mark.session_outside_app_context


def days_ahead(days: float) -> datetime:
    return datetime.now(UTC) + timedelta(days=days)


def day_text(days: int) -> str:
    return days_ahead(days).date().isoformat()


def time_text(days: float) -> str:
    return days_ahead(days).replace(microsecond=0).isoformat()


# --- the input paths ---------------------------------------------------------------------------

def signed_in(app, session, language: str | None = None):
    """An editor's test client, reading the dashboard in `language`."""
    return i18n_signed_in(app, session, "editor", language,
                          email=f"editor-{language}@example.com")


def form_add(client, **fields):
    """The dashboard's add form: (status, page text unescaped)."""
    answer = client.post("/sites/shop/urls", data={"csrf_token": client.csrf, **fields},
                         follow_redirects=True)
    return answer.status_code, html.unescape(answer.text)


def form_edit(client, url_id: int, **fields):
    """The URL page's form: (status, page text unescaped)."""
    answer = client.post(f"/sites/shop/urls/{url_id}",
                         data={"csrf_token": client.csrf, **fields}, follow_redirects=True)
    return answer.status_code, html.unescape(answer.text)


def api_of(app, session):
    user = create_user(session, "cms@example.com", PASSWORD, "editor")
    _, secret = create_token(session, user, "test", "write", None)
    session.commit()
    client = app.test_client()

    def upsert(*items):
        answer = client.post("/api/v1/sites/shop/urls", json={"urls": list(items)},
                             headers={"Authorization": f"Bearer {secret}"})
        assert answer.status_code == 200, answer.text
        return answer.json

    return upsert


def csv_import(session, site, text: str):
    report = import_urls(session, site, io.StringIO(text))
    session.commit()
    return report


def sitemap_import(session, site, urls: str, namespaces: str = ""):
    body = ('<?xml version="1.0" encoding="UTF-8"?>\n'
            f'<urlset xmlns="http://www.sitemaps.org/schemas/sitemap/0.9" {namespaces}>'
            f'{urls}</urlset>')
    policy = Policy.of({"NOTIFY_TIMEOUT": 1, "OUTBOUND_ALLOW": ""})
    with open_import(body.encode(), "sitemap.xml", site.base_url, None, policy) as opened:
        report = import_opened(session, site, opened)
    session.commit()
    return report


def stored(session, loc: str):
    session.expire_all()
    return session.scalar(select(Url).where(Url.loc == loc))


# --- lastmod: at most a day ahead ------------------------------------------------------------

def test_a_lastmod_more_than_a_day_ahead_is_refused_on_every_path_naming_the_rule(
        app, session, runner):
    site = make_site(session)
    far, soon = "2099-01-01", time_text(1.1)
    # The command line.
    for value in (far, soon, day_text(2)):
        result = runner.invoke(args=["urls", "add", "shop", f"{SHOP}cli", "--lastmod", value])
        assert result.exit_code != 0 and "lastmod" in result.output, result.output
        assert AHEAD in result.output, result.output
    assert stored(session, f"{SHOP}cli") is None
    # The API.
    answer = api_of(app, session)({"loc": f"{SHOP}api", "lastmod": far},
                                   {"loc": f"{SHOP}api2", "lastmod": soon})
    assert [(e["index"], e["field"]) for e in answer["errors"]] == [(0, "lastmod"),
                                                                    (1, "lastmod")]
    assert all(e["rule"].startswith(AHEAD) for e in answer["errors"]), answer
    assert answer["created"] == 0
    # A CSV file.
    report = csv_import(session, site, f"loc,lastmod\n{SHOP}csv,{far}\n{SHOP}csv2,{soon}\n")
    assert report.rejected == 2 and report.added == 0
    assert all("lastmod" in text and AHEAD in text for _, text in report.english_rejections())
    # A sitemap.
    report = sitemap_import(session, site, f"<url><loc>{SHOP}xml</loc><lastmod>{far}</lastmod>"
                                           f"</url>")
    assert report.rejected == 1 and AHEAD in report.english_rejections()[0][1]
    assert stored(session, f"{SHOP}xml") is None
    # The dashboard's add form, in English and in Japanese.
    client = signed_in(app, session)
    status, text = form_add(client, loc=f"{SHOP}form", lastmod=far)
    assert status == 422 and f"lastmod '{far}': {AHEAD}" in text
    status, text = form_add(signed_in(app, session, "ja"), loc=f"{SHOP}form", lastmod=far)
    assert status == 422 and "1 日より先の日付にはできません" in text, text
    assert stored(session, f"{SHOP}form") is None


def test_today_and_tomorrow_by_any_time_zone_are_accepted_and_kept(app, session, runner):
    make_site(session)
    for n, value in enumerate((day_text(0), day_text(1), time_text(0.9),
                               f"{day_text(1)}T09:00:00+14:00")):
        result = runner.invoke(args=["urls", "add", "shop", f"{SHOP}{n}", "--lastmod", value])
        assert result.exit_code == 0, result.output
        assert stored(session, f"{SHOP}{n}").lastmod is not None


# --- a news article's publication date: at most a day ahead ------------------------------------

NEWS_NS = 'xmlns:news="http://www.google.com/schemas/sitemap-news/0.9"'


def news_entry(loc: str, date: str, title: str = "Story") -> str:
    return (f"<url><loc>{loc}</loc><news:news><news:publication><news:name>Shop Times"
            f"</news:name><news:language>en</news:language></news:publication>"
            f"<news:publication_date>{date}</news:publication_date><news:title>{title}"
            f"</news:title></news:news></url>")


def news_site(session):
    return make_site(session, news_name="Shop Times", news_language="en")


def test_a_news_article_dated_more_than_a_day_ahead_is_refused_on_every_path(
        app, session, runner):
    site = news_site(session)
    ahead = time_text(3)
    # The command line.
    result = runner.invoke(args=["urls", "add", "shop", f"{SHOP}cli", "--news-date", ahead,
                                 "--news-title", "Tomorrow's news"])
    assert result.exit_code != 0, result.output
    assert "news_publication_date" in result.output and AHEAD in result.output, result.output
    assert stored(session, f"{SHOP}cli") is None
    # The API.
    answer = api_of(app, session)({"loc": f"{SHOP}api", "news": {"publication_date": ahead,
                                                                  "title": "Ahead"}})
    assert [(e["field"], e["rule"]) for e in answer["errors"]] == [
        ("news_publication_date", AHEAD + " (the day allows for every time zone)")]
    # A CSV file.
    report = csv_import(session, site, f"loc,news_publication_date,news_title\n"
                                       f"{SHOP}csv,{day_text(3)},Ahead\n")
    assert report.rejected == 1, report.summary()
    assert "news_publication_date" in report.english_rejections()[0][1]
    assert AHEAD in report.english_rejections()[0][1]
    # A sitemap.
    report = sitemap_import(session, site, news_entry(f"{SHOP}xml", ahead), NEWS_NS)
    assert report.rejected == 1 and AHEAD in report.english_rejections()[0][1]
    # The URL page's form.
    client = signed_in(app, session)
    form_add(client, loc=f"{SHOP}form")
    url = stored(session, f"{SHOP}form")
    status, text = form_edit(client, url.id, news_publication_date=ahead, news_title="Ahead")
    assert status == 422 and f"news_publication_date '{ahead}': {AHEAD}" in text
    session.expire_all()
    assert stored(session, f"{SHOP}form").news is None


# --- hreflang: an ISO 3166-1 alpha-2 region --------------------------------------------------

XHTML_NS = 'xmlns:xhtml="http://www.w3.org/1999/xhtml"'
ISO_RULE = "which is not an ISO 3166-1 alpha-2 country code, and Google ignores it; use en-GB"


def alternates_entry(loc: str, pairs: list[tuple[str, str]]) -> str:
    links = "".join(f'<xhtml:link rel="alternate" hreflang="{lang}" href="{href}"/>'
                    for lang, href in pairs)
    return f"<url><loc>{loc}</loc>{links}</url>"


def test_a_region_outside_iso_3166_is_refused_on_every_path_suggesting_the_code_meant(
        app, session, runner):
    site = make_site(session)
    # The command line.
    result = runner.invoke(args=["urls", "add", "shop", f"{SHOP}cli",
                                 "--alternate", f"en-UK={SHOP}cli"])
    assert result.exit_code != 0 and f"hreflang 'en-UK': has the region UK, {ISO_RULE}" in \
        result.output, result.output
    # The API.
    answer = api_of(app, session)({"loc": f"{SHOP}api", "alternates": {"en-UK": f"{SHOP}api"}})
    assert [e["field"] for e in answer["errors"]] == ["hreflang"]
    assert answer["errors"][0]["rule"].endswith(ISO_RULE), answer
    # A CSV file.
    report = csv_import(session, site, f"loc,alternates\n{SHOP}csv,en-UK={SHOP}csv\n")
    assert report.rejected == 1 and ISO_RULE in report.english_rejections()[0][1]
    # A sitemap.
    report = sitemap_import(session, site,
                            alternates_entry(f"{SHOP}xml", [("en-UK", f"{SHOP}xml")]), XHTML_NS)
    assert report.rejected == 1 and ISO_RULE in report.english_rejections()[0][1]
    # The URL page's form, in English and in Japanese.
    client = signed_in(app, session)
    form_add(client, loc=f"{SHOP}form")
    url_id = stored(session, f"{SHOP}form").id
    status, text = form_edit(client, url_id, alternates=f"en-UK={SHOP}form")
    assert status == 422 and ISO_RULE in text
    status, text = form_edit(signed_in(app, session, "ja"), url_id,
                             alternates=f"en-UK={SHOP}form")
    assert status == 422 and "ISO 3166-1" in text and "en-GB" in text and "無視" in text, text
    for loc in ("cli", "api", "csv", "xml"):
        assert stored(session, f"{SHOP}{loc}") is None
    assert stored(session, f"{SHOP}form").alternates == []


@pytest.mark.parametrize(("given", "rule"), [
    ("es-419", "has the UN M.49 region 419, which Google's hreflang documentation does not "
               "list (a region is an ISO 3166-1 alpha-2 country code); use es alone, or with a "
               "country's code"),
    ("ja-JA", "use ja-JP"), ("en-EN", "Google ignores it; use en"),
    ("zh-Hant-UK", "use zh-Hant-GB"), ("de-ZR", "use de-CD"),
    ("de-XK", "use de alone, or with a country's code"),
])
def test_a_region_google_does_not_document_is_refused_naming_what_is_meant(given, rule):
    from webapp.errors import InvalidValue
    from webapp.protocol import normalize_hreflang

    with pytest.raises(InvalidValue) as refused:
        normalize_hreflang(given)
    assert refused.value.field == "hreflang" and refused.value.rule.endswith(rule)


def test_script_subtags_x_default_and_every_iso_region_are_kept():
    from webapp.protocol import normalize_hreflang
    from webapp.protocol.fields import iso_3166_regions

    assert len(iso_3166_regions()) == 249  # ISO 3166-1's assigned alpha-2 codes
    assert {"GB", "US", "JP", "TW", "AQ", "SS", "BQ"} <= iso_3166_regions()
    for given, kept in (("zh-Hant", "zh-Hant"), ("zh-hant-tw", "zh-Hant-TW"),
                        ("x-default", "x-default"), ("en-gb", "en-GB"), ("de", "de")):
        assert normalize_hreflang(given) == kept


# --- hreflang: one URL per language ----------------------------------------------------------

ONE_PER_LANGUAGE = "hreflang allows one URL per language"


def test_two_urls_for_one_language_are_refused_in_either_order_on_every_path(
        app, session, runner):
    site = make_site(session)
    other = "https://other.example/en"

    def orders(loc):
        return [[("en", loc), ("en", other)], [("en", other), ("en", loc)]]

    # The command line: neither order keeps one of the two, nor blames the missing self-link.
    for pairs in orders(f"{SHOP}cli"):
        result = runner.invoke(args=["urls", "add", "shop", f"{SHOP}cli",
                                     *[f"--alternate={lang}={href}" for lang, href in pairs]])
        assert result.exit_code != 0 and ONE_PER_LANGUAGE in result.output, result.output
        assert "must include" not in result.output
    # The API: keys that are one language once normalised.
    upsert = api_of(app, session)
    answer = upsert({"loc": f"{SHOP}api", "alternates": {"en": f"{SHOP}api", "EN": other}},
                    {"loc": f"{SHOP}api2", "alternates": {"EN": other, "en": f"{SHOP}api2"}})
    assert [e["index"] for e in answer["errors"]] == [0, 1], answer
    assert all(e["rule"].endswith(ONE_PER_LANGUAGE) for e in answer["errors"]), answer
    # A CSV file.
    rows = "".join(f"{SHOP}csv{n},\"{' '.join(f'{lang}={href}' for lang, href in pairs)}\"\n"
                   for n, pairs in enumerate(orders(f"{SHOP}csv")))
    report = csv_import(session, site, f"loc,alternates\n{rows}")
    assert report.rejected == 2 and all(ONE_PER_LANGUAGE in text
                                        for _, text in report.english_rejections())
    # A sitemap.
    entries = "".join(alternates_entry(f"{SHOP}xml{n}", pairs)
                      for n, pairs in enumerate(orders(f"{SHOP}xml")))
    report = sitemap_import(session, site, entries, XHTML_NS)
    assert report.rejected == 2 and all(ONE_PER_LANGUAGE in text
                                        for _, text in report.english_rejections())
    # The URL page's form.
    client = signed_in(app, session)
    form_add(client, loc=f"{SHOP}form")
    url_id = stored(session, f"{SHOP}form").id
    for pairs in orders(f"{SHOP}form"):
        status, text = form_edit(client, url_id,
                                 alternates="\n".join(f"{lang}={href}" for lang, href in pairs))
        assert status == 422 and ONE_PER_LANGUAGE in text
    status, text = form_edit(signed_in(app, session, "ja"), url_id,
                             alternates=f"en={SHOP}form\nen={other}")
    assert status == 422 and "1 つの言語に 1 つの URL" in text
    for loc in ("cli", "api", "api2", "csv0", "csv1", "xml0", "xml1"):
        assert stored(session, f"{SHOP}{loc}") is None
    assert stored(session, f"{SHOP}form").alternates == []


def test_the_same_language_and_url_twice_is_one_alternate(app, session, runner):
    make_site(session)
    result = runner.invoke(args=["urls", "add", "shop", f"{SHOP}a", f"--alternate=en={SHOP}a",
                                 f"--alternate=EN={SHOP}a"])
    assert result.exit_code == 0, result.output
    assert [a.hreflang for a in stored(session, f"{SHOP}a").alternates] == ["en"]


# --- a news article older than two days: kept, with a note -------------------------------------

TOO_OLD = "is more than two days ago, so the news sitemap will not list the article"


def test_an_article_older_than_two_days_is_kept_with_a_note_on_every_path(app, session, runner):
    site = news_site(session)
    old, recent = time_text(-3), time_text(-1)
    # The command line.
    result = runner.invoke(args=["urls", "add", "shop", f"{SHOP}cli", "--news-date", old,
                                 "--news-title", "Last week"])
    assert result.exit_code == 0, result.output
    assert f"note: news_publication_date '{stored_date(old)}': {TOO_OLD}" in result.output
    assert stored(session, f"{SHOP}cli").news is not None
    result = runner.invoke(args=["urls", "add", "shop", f"{SHOP}cli2", "--news-date", recent,
                                 "--news-title", "Yesterday"])
    assert result.exit_code == 0 and "note:" not in result.output, result.output
    # The API.
    answer = api_of(app, session)(
        {"loc": f"{SHOP}api", "news": {"publication_date": old, "title": "Old"}},
        {"loc": f"{SHOP}api2", "news": {"publication_date": recent, "title": "New"}})
    assert answer["created"] == 2 and not answer["errors"]
    assert [(n["index"], n["field"]) for n in answer["notes"]] == [
        (0, "news_publication_date")]
    assert TOO_OLD in answer["notes"][0]["message"]
    # A CSV file.
    report = csv_import(session, site, f"loc,news_publication_date,news_title\n"
                                       f"{SHOP}csv,{old},Old\n{SHOP}csv2,{recent},New\n")
    assert report.added == 2 and [line for line, _ in report.english_notes()] == [2]
    assert TOO_OLD in report.english_notes()[0][1]
    # A sitemap.
    report = sitemap_import(session, site, news_entry(f"{SHOP}xml", old)
                            + news_entry(f"{SHOP}xml2", recent), NEWS_NS)
    assert report.added == 2
    assert [text for _, text in report.english_notes() if TOO_OLD in text] != []
    assert len([text for _, text in report.english_notes() if TOO_OLD in text]) == 1
    # The URL page's form.
    client = signed_in(app, session)
    form_add(client, loc=f"{SHOP}form")
    url_id = stored(session, f"{SHOP}form").id
    status, text = form_edit(client, url_id, news_publication_date=old, news_title="Old")
    assert status == 200 and TOO_OLD in text
    assert stored(session, f"{SHOP}form").news is not None
    status, text = form_edit(signed_in(app, session, "ja"), url_id,
                             news_publication_date=old, news_title="Old")
    assert status == 200 and "ニュースサイトマップ" in text and "2 日" in text


def stored_date(given: str) -> str:
    """A publication date as stored: in UTC with seconds."""
    return datetime.fromisoformat(given).astimezone(UTC).isoformat()


# --- urls add warns of alternates without a return link, as CSV imports and the API do --------

def test_urls_add_warns_of_an_alternate_of_the_site_that_does_not_list_the_page_back(
        app, session, runner):
    make_site(session)
    de, en = f"{SHOP}de/a", f"{SHOP}en/a"
    assert runner.invoke(args=["urls", "add", "shop", de]).exit_code == 0
    result = runner.invoke(args=["urls", "add", "shop", en, f"--alternate=en={en}",
                                 f"--alternate=de={de}"])
    assert result.exit_code == 0, result.output  # stored: a warning, not a refusal
    assert (f"warning: 1 hreflang alternates do not list their page back, and search engines "
            f"ignore such pairs: {de} does not list {en}.") in result.output
    assert "urls complete-hreflang shop" in result.output
    # The return link given: no warning, for either page.
    result = runner.invoke(args=["urls", "add", "shop", de, f"--alternate=en={en}",
                                 f"--alternate=de={de}"])
    assert result.exit_code == 0 and "warning" not in result.output, result.output
