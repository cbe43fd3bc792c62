"""Google News sitemaps: the site settings, the news files (two-day window, 1,000 per file,
schema-valid), the index and robots.txt listing them, and the runs as articles age out."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest
from sqlalchemy import select

from tests.builders import make_site, make_urls
from tests.sitemap_schema import locs, parse
from webapp import jobs, scheduler
from webapp.errors import InvalidValue
from webapp.models import Delivery, Site, Url, UrlNews
from webapp.protocol.news import NewsData, check_news, check_news_language, normalize_publication_date
from webapp.sitemaps import get_store, small_sites
from webapp.sitemaps.news import articles
from webapp.sites import update_site
from webapp.urls.changes import next_change_seq
from webapp.urls.news import write_news

NEWS = {"news": "http://www.google.com/schemas/sitemap-news/0.9",
        "sm": "http://www.sitemaps.org/schemas/sitemap/0.9"}
# Ahead of the real clock: URL changes made by the tests (dated now) are ready at NOW.
NOW = datetime(2030, 1, 10, 12, 0, 0, tzinfo=UTC)


def stamp(moment: datetime) -> str:
    return moment.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%S+00:00")


def news_site(session, **settings):
    site = make_site(session, schedule="off", next_run_at=None, **settings)
    update_site(session, site, {"news_name": "The Shop Times", "news_language": "en"})
    session.commit()
    return site


def add_articles(session, site, dates: list[datetime], first: int = 0) -> list[str]:
    """One URL per date, its article published then."""
    locs_ = [f"{site.base_url}news/{n}" for n in range(first, first + len(dates))]
    session.add_all(Url(site_id=site.id, loc=loc) for loc in locs_)
    site.url_count += len(locs_)
    session.flush()
    write_news(session, site, {loc: NewsData(stamp(date), f"Story {n}")
                               for n, (loc, date) in enumerate(zip(locs_, dates))},
               lambda: next_change_seq(session, site.id))
    session.commit()
    return locs_


def published(app, site):
    store = get_store(app)
    files = store.published(site.storage_key)
    return {} if files is None else {f.name: store.local(f) for f in files.files.values()}


def news_locs(files) -> list[str]:
    found = []
    for name in sorted(n for n in files if "-news" in n):
        root = parse(files[name])  # schema-valid, news extension included
        found += locs(root)
    return found


# --- Settings ----------------------------------------------------------------------------------

@pytest.mark.parametrize("given, stored", [("en", "en"), ("JA", "ja"), ("fil", "fil"),
                                           ("zh-CN", "zh-cn"), ("zh-tw", "zh-tw")])
def test_news_language_takes_iso_639_codes_and_the_two_chinese_forms(given, stored):
    assert check_news_language(given) == stored


@pytest.mark.parametrize("given", ["english", "e", "zh-hk", "en-US", "ja_JP", "12"])
def test_other_news_languages_are_refused_naming_the_rule(given):
    with pytest.raises(InvalidValue) as refused:
        check_news_language(given)
    assert refused.value.field == "news_language"
    assert "ISO 639" in str(refused.value)


def test_a_news_name_without_a_language_is_refused(app, session):
    site = make_site(session)
    with pytest.raises(InvalidValue) as refused:
        update_site(session, site, {"news_name": "The Shop Times"})
    assert refused.value.field == "news_language"
    assert "required when news_name is set" in str(refused.value)
    update_site(session, site, {"news_name": "The Shop Times", "news_language": "ja"})
    assert (site.news_name, site.news_language) == ("The Shop Times", "ja")


@pytest.mark.parametrize("date, title, field, words", [
    ("2026-11", "A story", "news_publication_date", "at least the day"),
    ("yesterday", "A story", "news_publication_date", "at least the day"),
    ("2026-02-30", "A story", "news_publication_date", "not a real date"),
    ("", "A story", "news_publication_date", "required when news_title"),
    ("2026-11-25", "", "news_title", "required for a news article"),
    ("2026-11-25", "x" * 2001, "news_title", "longer than 2000"),
    ("2026-11-25", "bell\x07", "news_title", "control character"),
])
def test_each_news_rule_is_refused_with_its_name(date, title, field, words):
    with pytest.raises(InvalidValue) as refused:
        check_news(date, title)
    assert refused.value.field == field
    assert words in str(refused.value)


def test_publication_dates_are_normalised_as_lastmod_is():
    assert normalize_publication_date("2026-11-25T09:30+09:00") == "2026-11-25T00:30:00+00:00"
    assert normalize_publication_date("2026-11-25") == "2026-11-25"
    assert check_news("", "  ") is None


# --- The news files ----------------------------------------------------------------------------

def test_a_news_site_publishes_its_recent_articles_in_a_valid_news_file_listed_in_the_index(
        app, session):
    site = news_site(session)
    make_urls(session, site, 3)
    recent = add_articles(session, site, [NOW - timedelta(hours=1), NOW - timedelta(days=1)])
    old = add_articles(session, site, [NOW - timedelta(days=3)], first=2)
    generation = jobs.regenerate(site.id, app, now=NOW)
    assert generation.status == "succeeded"
    files = published(app, site)
    assert sorted(files) == ["sitemap-1.xml", "sitemap-news.xml", "sitemap.xml"]
    index = parse(files["sitemap.xml"])
    assert locs(index) == [f"{site.base_url}sitemap-1.xml", f"{site.base_url}sitemap-news.xml"]
    assert news_locs(files) == recent
    root = parse(files["sitemap-news.xml"])
    assert root.xpath("//news:publication/news:name/text()", namespaces=NEWS) == [
        "The Shop Times"] * 2
    assert root.xpath("//news:title/text()", namespaces=NEWS) == ["Story 0", "Story 1"]
    # The urlset files keep listing every URL, the articles among them, without news tags.
    every = locs(parse(files["sitemap-1.xml"]))
    assert set(recent + old) <= set(every) and len(every) == 6
    assert b"news:" not in files["sitemap-1.xml"].read_bytes()
    assert generation.url_count == 6


def test_the_two_day_window_holds_an_article_exactly_two_days_old_and_not_a_second_more(
        app, session):
    site = news_site(session)
    edge, _ = add_articles(session, site, [NOW - timedelta(days=2),
                                              NOW - timedelta(days=2, seconds=1)])
    jobs.regenerate(site.id, app, now=NOW)
    assert news_locs(published(app, site)) == [edge]
    session.expire_all()
    assert session.get(Site, site.id).news_due_at == NOW + timedelta(seconds=1)
    jobs.regenerate(site.id, app, now=NOW + timedelta(seconds=1))
    files = published(app, site)
    assert news_locs(files) == [] and "sitemap-news.xml" not in files
    assert "sitemap.xml" in files  # a news publisher keeps its index
    session.expire_all()
    assert session.get(Site, site.id).news_due_at is None


def test_an_article_dated_ahead_of_the_run_waits_for_its_date_and_the_site_runs_then(
        app, session):
    site = news_site(session)
    # Stored as they are (input refuses a date more than a day ahead; these may predate that
    # rule, or be within its day of slack).
    soon, later = add_articles(session, site, [NOW + timedelta(hours=5),
                                               NOW + timedelta(days=3)])
    now_one = add_articles(session, site, [NOW - timedelta(hours=1)], first=2)
    jobs.regenerate(site.id, app, now=NOW)
    assert news_locs(published(app, site)) == now_one
    session.expire_all()
    assert session.get(Site, site.id).news_due_at == NOW + timedelta(hours=5)
    jobs.regenerate(site.id, app, now=NOW + timedelta(hours=5))
    assert sorted(news_locs(published(app, site))) == sorted([soon, *now_one])
    jobs.regenerate(site.id, app, now=NOW + timedelta(days=3))
    assert news_locs(published(app, site)) == [later]  # listed two days from its date only


def test_a_day_alone_counts_from_its_start_in_utc(app, session):
    site = news_site(session)
    loc = f"{site.base_url}story"
    session.add(Url(site_id=site.id, loc=loc))
    session.flush()
    write_news(session, site, {loc: check_news("2026-11-23", "Dated by day")},
               lambda: next_change_seq(session, site.id))
    session.commit()
    jobs.regenerate(site.id, app, now=datetime(2026, 11, 25, 0, 0, tzinfo=UTC))
    assert news_locs(published(app, site)) == [loc]
    jobs.regenerate(site.id, app, now=datetime(2026, 11, 25, 0, 0, 1, tzinfo=UTC))
    assert news_locs(published(app, site)) == []


def test_more_than_a_thousand_articles_are_split_into_files_of_a_thousand(app, session):
    site = news_site(session)
    articles = add_articles(session, site, [NOW - timedelta(minutes=n) for n in range(2_001)])
    jobs.regenerate(site.id, app, now=NOW)
    files = published(app, site)
    names = ["sitemap-news.xml", "sitemap-news-2.xml", "sitemap-news-3.xml"]
    assert [len(locs(parse(files[name]))) for name in names] == [1_000, 1_000, 1]
    index = locs(parse(files["sitemap.xml"]))
    assert [f"{site.base_url}{name}" for name in names] == [
        loc for loc in index if "-news" in loc]
    assert {loc for name in names for loc in locs(parse(files[name]))} == set(articles)


def test_the_articles_are_found_in_the_window_without_walking_the_sites_urls(session):
    """SQLite reads a publisher's articles of the window from their date index and then their
    URLs by key: the work does not grow with the site's other URLs (it walked every URL in id
    order to find them, a million for 10,000 articles)."""
    if session.bind.dialect.name != "sqlite":
        pytest.skip("the plan of SQLite's query planner")
    site = news_site(session)
    add_articles(session, site, [NOW - timedelta(hours=n) for n in range(5)])

    def steps() -> int:  # of SQLite's virtual machine, by hundreds
        raw, count = session.connection().connection.dbapi_connection, []
        raw.set_progress_handler(lambda: count.append(1), 100)
        try:
            assert len(list(articles(session.connection(), site, NOW))) == 5
        finally:
            raw.set_progress_handler(None, 100)
        return len(count)

    few = steps()
    make_urls(session, site, 5_000)
    assert steps() <= few + 5


def test_robots_txt_lists_the_news_sitemap_while_it_is_published(app, session, client):
    site = news_site(session)
    add_articles(session, site, [NOW - timedelta(hours=1)])
    jobs.regenerate(site.id, app, now=NOW)
    text = client.get("/robots.txt", base_url="https://shop.example.com").text
    assert "Sitemap: https://shop.example.com/sitemap.xml\n" in text
    assert "Sitemap: https://shop.example.com/sitemap-news.xml\n" in text
    jobs.regenerate(site.id, app, now=NOW + timedelta(days=3))
    text = client.get("/robots.txt", base_url="https://shop.example.com").text
    assert "sitemap-news" not in text
    assert "Sitemap: https://shop.example.com/sitemap.xml\n" in text


def test_the_news_file_is_served_as_xml(app, session, client):
    site = news_site(session)
    add_articles(session, site, [NOW - timedelta(hours=1)])
    jobs.regenerate(site.id, app, now=NOW)
    with client.get("/sitemap-news.xml", base_url="https://shop.example.com") as response:
        assert response.status_code == 200
        assert response.content_type.startswith("application/xml")
        assert b"<news:title>Story 0</news:title>" in response.data


# --- Runs --------------------------------------------------------------------------------------

def test_news_sites_are_not_generated_in_the_small_sites_batch(app, session):
    site = news_site(session)
    make_urls(session, site, 5)
    assert not small_sites.is_small(site)
    site.news_name = None
    assert small_sites.is_small(site)


def test_a_small_news_site_is_handed_to_its_own_run_and_gets_its_news_file(app, session):
    site = news_site(session)
    add_articles(session, site, [NOW - timedelta(hours=1)])
    assert jobs.generate_many_if_due([site.id], app, NOW) == {site.id: "succeeded"}
    assert "sitemap-news.xml" in published(app, site)


def test_the_scheduler_runs_a_news_site_when_its_oldest_article_turns_two_days_old(
        app, session):
    site = news_site(session)
    older, newer = add_articles(session, site, [NOW - timedelta(days=1),
                                                NOW - timedelta(hours=1)])
    assert [g.trigger for g in scheduler.run_due_sites(app, NOW)] == ["change"]
    assert news_locs(published(app, site)) == [older, newer]
    assert scheduler.run_due_sites(app, NOW + timedelta(days=1)) == []  # not yet
    runs = scheduler.run_due_sites(app, NOW + timedelta(days=1, seconds=1))
    assert [g.status for g in runs] == ["succeeded"]
    assert news_locs(published(app, site)) == [newer]
    session.expire_all()
    due = session.get(Site, site.id).news_due_at
    assert due == NOW - timedelta(hours=1) + timedelta(days=2, seconds=1)
    assert scheduler.run_due_sites(app, due - timedelta(seconds=1)) == []
    assert len(scheduler.run_due_sites(app, due)) == 1
    assert "sitemap-news.xml" not in published(app, site)
    assert scheduler.run_due_sites(app, due + timedelta(days=10)) == []  # nothing left to age


def test_a_changed_article_marks_its_url_changed_and_an_unchanged_one_does_not(app, session):
    site = news_site(session)
    (loc,) = add_articles(session, site, [NOW])
    before = session.scalar(select(Url.change_seq).where(Url.loc == loc))
    same = NewsData(stamp(NOW), "Story 0")
    assert write_news(session, site, {loc: same}, lambda: next_change_seq(session, site.id)) \
        == set()
    changed = write_news(session, site, {loc: NewsData(stamp(NOW), "New title")},
                         lambda: next_change_seq(session, site.id))
    assert changed == {loc}
    assert session.scalar(select(Url.change_seq).where(Url.loc == loc)) > before
    write_news(session, site, {loc: None}, lambda: next_change_seq(session, site.id))
    assert session.scalar(select(UrlNews).where(UrlNews.url_id == Url.id, Url.loc == loc)) \
        is None


def test_the_news_file_has_a_page_for_people_too(app, session, client):
    site = news_site(session)
    add_articles(session, site, [NOW - timedelta(hours=1)])
    jobs.regenerate(site.id, app, now=NOW)
    with client.get(f"/sitemaps/{site.slug}/view/sitemap-news.xml") as page:
        assert page.status_code == 200
        assert f"{site.base_url}news/0" in page.text


def test_the_readmes_example_file_imports_every_row(app, session):
    from pathlib import Path

    from webapp.urls import import_urls

    site = make_site(session, "News", "https://news.example.com/")
    example = Path(__file__).resolve().parent.parent / "webapp" / "static" / "examples" / "news-example.csv"
    with example.open(encoding="utf-8", newline="") as stream:
        report = import_urls(session, site, stream)
    session.commit()
    assert (report.added, report.rejected) == (3, 0), report.rejections
    assert session.scalar(select(UrlNews.title).order_by(UrlNews.url_id)) == \
        "Central bank holds rates"


@pytest.mark.parametrize(("setting", "value", "path"), [
    ("news_name", "The Shop Gazette", "//news:publication/news:name/text()"),
    ("news_language", "ja", "//news:publication/news:language/text()"),
])
def test_a_new_publication_name_or_language_is_published_soon_without_a_url_change(
        app, session, setting, value, path):
    site = news_site(session)
    add_articles(session, site, [NOW - timedelta(hours=1)])
    assert [g.status for g in scheduler.run_due_sites(app, NOW)] == ["succeeded"]
    update_site(session, site, {"name": "Shop news"})  # not in the files: nothing to run
    session.commit()
    assert scheduler.run_due_sites(app, NOW) == []
    update_site(session, site, {setting: value})
    session.commit()
    assert [g.status for g in scheduler.run_due_sites(app, NOW)] == ["succeeded"]
    assert parse(published(app, site)["sitemap-news.xml"]).xpath(path, namespaces=NEWS) \
        == [value]


def test_a_run_that_changes_only_the_news_file_is_announced_and_one_that_changes_nothing_is_not(
        app, session):
    """Articles aging out change the news file alone: the sitemap engines (here a ping URL)
    hear of that generation, as of any other that changed a file."""
    site = news_site(session, ping_urls="http://127.0.0.1:9/ping?sitemap={sitemap}")
    add_articles(session, site, [NOW - timedelta(days=1), NOW - timedelta(hours=1)])
    first = scheduler.run_due_sites(app, NOW)
    aged = scheduler.run_due_sites(app, NOW + timedelta(days=1, seconds=1))
    assert [g.status for g in aged] == ["succeeded"]
    again = jobs.regenerate_if_due(site.id, app, now=NOW + timedelta(days=1, seconds=2))
    assert again is None or again.status == "unchanged"
    session.expire_all()
    pinged = session.scalars(select(Delivery.generation_id).where(
        Delivery.site_id == site.id, Delivery.engine == "ping").order_by(Delivery.id)).all()
    assert pinged == [first[0].id, aged[0].id]


def test_no_other_site_in_the_folder_may_publish_the_news_files_names(app, session):
    """A news publisher writes sitemap-news.xml, sitemap-news-2.xml, ... beside its
    sitemap.xml: another site whose sitemap is sitemap-news.xml would write them too."""
    site = news_site(session)
    other = make_site(session, "Papers", site.base_url, sitemap_url=site.base_url + "papers.xml")
    for clash in ("sitemap-news.xml", "sitemap-news-2.xml"):
        with pytest.raises(InvalidValue, match="same names as site 'shop'") as refused:
            update_site(session, other, {"sitemap_url": site.base_url + clash})
        assert refused.value.field == "sitemap_url"
        assert f"such as {clash}" in str(refused.value)
    update_site(session, other, {"sitemap_url": site.base_url + "sitemap-newsroom.xml"})
    session.commit()


def test_turning_news_on_where_the_news_file_name_is_taken_names_news_name_and_the_file(
        app, session):
    """The setting that brings the file is named, with the file: the person changed
    news_name, not the sitemap URL."""
    site = make_site(session, "Papers", "https://shop.example.com/",
                     sitemap_url="https://shop.example.com/papers.xml")
    make_site(session, "Desk", site.base_url, sitemap_url=site.base_url + "papers-news.xml")
    with pytest.raises(InvalidValue) as refused:
        update_site(session, site, {"news_name": "Papers", "news_language": "en"})
    assert (refused.value.field, refused.value.value) == ("news_name", "Papers")
    assert refused.value.rule == (
        "would make the site publish a news sitemap, papers-news.xml, which site 'desk' "
        "(https://shop.example.com/papers-news.xml) publishes in the same folder too; choose "
        "another sitemap_url for one of the two sites")


def test_the_file_name_rule_knows_which_news_files_exist(app, session):
    """News files are numbered from 2 (sitemap-news.xml, sitemap-news-2.xml, ...): a
    sitemap-news-1.xml beside them is free, and nothing is refused for a name no site writes."""
    site = news_site(session)
    other = make_site(session, "Papers", site.base_url, sitemap_url=site.base_url + "papers.xml")
    update_site(session, other, {"sitemap_url": site.base_url + "sitemap-news-1.xml"})
    with pytest.raises(InvalidValue, match="such as sitemap-news-3.xml"):
        update_site(session, other, {"sitemap_url": site.base_url + "sitemap-news-3.xml"})


def test_a_clash_stored_before_the_rule_does_not_block_other_settings(app, session):
    """Names are checked when a setting that decides them changes: renaming a site, or
    changing its schedule, is not refused for a clash it did not make."""
    site = news_site(session)
    other = make_site(session, "Papers", site.base_url, sitemap_url=site.base_url + "p.xml")
    other.sitemap_url = site.base_url + "sitemap-news.xml"  # stored before the rule was
    session.commit()
    update_site(session, other, {"name": "Papers and more", "change_delay": "30"})
    update_site(session, site, {"name": "The Shop", "news_language": "ja"})
    with pytest.raises(InvalidValue, match="same names as site 'shop'"):
        update_site(session, other, {"sitemap_url": site.base_url + "sitemap-news-2.xml"})
