"""Thousands of sites: the API's list by cursor, the dashboard's sites page (search, sort,
pages), and the live URL count every write path keeps on the site's row."""

from __future__ import annotations

import io
import re
import threading
from contextlib import contextmanager
from datetime import timedelta

import pytest
from sqlalchemy import event, func, select

from tests.builders import make_site, make_urls
from tests.probes import wait_for, waiting_on_locks
from tests.test_api import Api, error_of
from tests.test_dashboard import PASSWORD, sign_in
from webapp.errors import NotFound
from webapp.models import Delivery, Generation, Site, Url, User, utcnow
from webapp.sitemaps import get_store
from webapp.sites import delete_site
from webapp.accounts.tokens import create_token
from webapp.urls import (
    delete_locs,
    delete_url,
    delete_urls,
    health,
    import_urls,
    save_url,
    upsert_urls,
)
from webapp.accounts.users import create_user

pytestmark = pytest.mark.session_outside_app_context


def make_sites(session, count: int, name="Site {n:03}", host="site{n:03}.example.com"):
    """`count` committed sites, each with one succeeded run."""
    sites = [make_site(session, name.format(n=n), f"https://{host.format(n=n)}/")
             for n in range(count)]
    now = utcnow()
    session.add_all(Generation(site_id=site.id, number=1, status="succeeded", started_at=now,
                               finished_at=now) for site in sites)
    session.commit()
    return sites


def token_for(app, session, sites=None) -> Api:
    user = session.scalar(select(User).where(User.email == "reader@example.com")) or \
        create_user(session, "reader@example.com", PASSWORD, "viewer")
    _, secret = create_token(session, user, "test", "read", sites)
    session.commit()
    return Api(app.test_client(), secret)


def pages(api, limit: int) -> list[list[str]]:
    """Every page of GET /sites at `limit`, following next_cursor: the slugs of each."""
    found, cursor = [], None
    while True:
        answer = api.get(f"/sites?limit={limit}" + (f"&cursor={cursor}" if cursor else ""))
        assert answer.status_code == 200, answer.text
        found.append([site["slug"] for site in answer.json["items"]])
        cursor = answer.json["next_cursor"]
        if cursor is None:
            return found
        assert len(found) < 100, "the cursor never ends"


# The API's list


def test_the_api_lists_every_site_once_by_cursor_and_ends_with_a_null_cursor(app, session):
    slugs = sorted(site.slug for site in make_sites(session, 7))
    api = token_for(app, session)
    assert pages(api, 3) == [slugs[0:3], slugs[3:6], slugs[6:7]]
    assert pages(api, 7) == [slugs]  # a full last page: no empty page after it
    assert pages(api, 1000) == [slugs]
    assert api.get("/sites").json["next_cursor"] is None  # 100 by default


@pytest.mark.parametrize("query, field", [
    ("limit=0", "limit"), ("limit=1001", "limit"), ("limit=ten", "limit"), ("limit=-1", "limit"),
    ("limit=%C2%B2", "limit"), ("cursor=not!base64", "cursor"), ("cursor=AA", "cursor"),
    ("cursor=_w", "cursor"), ("limit=5&cursor=%25", "cursor"),
])
def test_a_bad_limit_or_cursor_is_a_400_naming_the_parameter(app, session, query, field):
    make_sites(session, 2)
    error = error_of(token_for(app, session).get(f"/sites?{query}"), 400)
    assert error["errors"][0]["field"] == field and field in error["message"]
    assert error["errors"][0]["rule"] == {  # the rule the value broke, as the URL list says it
        "limit": "a whole number from 1 to 1000",
        "cursor": "the next_cursor of the page before"}[field]


def test_a_token_limited_to_some_sites_pages_through_those_alone(app, session):
    sites = make_sites(session, 12)
    mine = sites[1::3]  # 4 sites, spread out: filtered after paging would leave holes
    api = token_for(app, session, [session.get(Site, site.id) for site in mine])
    slugs = sorted(site.slug for site in mine)
    assert pages(api, 2) == [slugs[0:2], slugs[2:4]]
    assert pages(api, 3) == [slugs[0:3], slugs[3:4]]


@contextmanager
def statements(app):
    """The SQL statements the app sends while the block runs."""
    seen: list[str] = []

    def record(conn, cursor, statement, parameters, context, executemany):
        seen.append(statement)

    engine = app.extensions["db_engine"]
    event.listen(engine, "before_cursor_execute", record)
    try:
        yield seen
    finally:
        event.remove(engine, "before_cursor_execute", record)


def test_a_page_of_sites_takes_as_many_queries_for_50_sites_as_for_1(app, session):
    sites = make_sites(session, 51)
    session.add_all(Generation(site_id=site.id, number=2, status="failed", started_at=utcnow())
                    for site in sites[::2])  # the newest run of half the sites
    session.commit()
    api = token_for(app, session)
    api.get("/sites?limit=1")  # the first request of a client loads what later ones reuse
    with statements(app) as one:
        assert len(api.get("/sites?limit=1").json["items"]) == 1
    with statements(app) as fifty:
        answer = api.get("/sites?limit=50").json
    assert len(answer["items"]) == 50 and answer["next_cursor"]
    assert len(fifty) == len(one), "\n".join(fifty)
    by_slug = {site["slug"]: site for site in answer["items"]}
    assert by_slug[sites[0].slug]["last_generation"]["status"] == "failed"
    assert by_slug[sites[1].slug]["last_generation"]["status"] == "succeeded"


def test_the_api_shows_the_live_url_count_as_urls_come_and_go(app, session):
    site = make_site(session)
    _, secret = create_token(session, create_user(session, "cms@example.com", PASSWORD,
                                                  "editor"), "cms", "write", None)
    session.commit()
    api = Api(app.test_client(), secret)
    locs = [f"{site.base_url}p/{n}" for n in range(5)]
    assert api.post("/sites/shop/urls", {"urls": [{"loc": loc} for loc in locs]}).status_code \
        == 200
    assert api.post("/sites/shop/urls/delete", {"locs": locs[:2]}).json["deleted"] == 2
    assert api.delete(f"/sites/shop/urls?loc={locs[2]}").status_code == 200
    assert api.get("/sites/shop").json["url_count"] == 2
    assert api.get("/sites").json["items"][0]["url_count"] == 2


# The count on the site's row


def live(session, site) -> tuple[int, int]:
    """(the site's url_count, its live URLs counted)."""
    session.expire_all()
    return (session.get(Site, site.id).url_count,
            session.scalar(select(func.count()).select_from(Url).where(
                Url.site_id == site.id, Url.deleted_at.is_(None))))


def test_the_url_count_stays_right_through_every_write_path(app, session):
    site = make_site(session)
    base = site.base_url

    def step(expected: int):
        session.commit()
        assert live(session, site) == (expected, expected)

    save_url(session, site, f"{base}a")
    step(1)
    save_url(session, site, f"{base}a", {"priority": "0.5"})  # an edit adds nothing
    save_url(session, site, f"{base}a", {"priority": "0.5"})  # nor does an unchanged one
    step(1)
    delete_url(session, site, f"{base}a")
    step(0)
    save_url(session, site, f"{base}a")  # a deleted URL added again is live again
    step(1)
    report = upsert_urls(session, site, [{"loc": f"{base}a"}, {"loc": f"{base}b"},
                                         {"loc": f"{base}c", "images": [f"{base}c.jpg"]},
                                         {"loc": "https://elsewhere.example/"}])
    assert (report.created, len(report.errors)) == (2, 1)
    step(3)
    assert delete_locs(session, site, [f"{base}b", f"{base}b", f"{base}missing"]).deleted == 1
    step(2)
    upsert_urls(session, site, [{"loc": f"{base}b", "priority": 0.3}])  # undeleted in bulk
    step(3)
    csv = "loc,priority\n" + "".join(f"{base}{name},0.4\n" for name in ("a", "b", "d", "e", "d"))
    imported = import_urls(session, site, io.StringIO(csv), parallel=False, chunk_chars=40)
    assert imported.added == 2
    step(5)
    delete_urls(session, site, [session.scalar(select(Url.id).where(Url.loc == f"{base}e"))])
    step(4)
    delete_locs(session, site, [f"{base}{name}" for name in "abcd"])
    step(0)


@pytest.mark.parametrize("write", ["add", "delete"])
def test_two_writers_of_the_same_url_at_once_count_it_once(app, database_url, session, write):
    # The second waits for the site's row, then reads the URL as the first left it.
    if not database_url.startswith("postgresql"):
        pytest.skip("SQLite lets one writer in at a time: the two cannot interleave")
    site = make_site(session)
    make_urls(session, site, 3)
    loc = f"{site.base_url}page/0" if write == "delete" else f"{site.base_url}new"

    def do(other):
        mine = other.get(Site, site.id)
        return delete_url(other, mine, loc) if write == "delete" else save_url(other, mine, loc)

    first = app.extensions["db_sessionmaker"]()
    do(first)  # holds the site's row until it commits
    outcome = []

    def second():
        with app.extensions["db_sessionmaker"]() as other:
            try:
                outcome.append(do(other))
                other.commit()
            except NotFound as exc:
                outcome.append(exc)

    thread = threading.Thread(target=second)
    thread.start()
    with app.extensions["db_sessionmaker"]() as watcher:
        wait_for(waiting_on_locks(watcher, 1), what="the second writer waiting for the site")
    first.commit()
    first.close()
    thread.join(60)
    assert not thread.is_alive()
    if write == "delete":
        assert isinstance(outcome[0], NotFound) and live(session, site) == (2, 2)
    else:
        assert outcome[0][1] is False and live(session, site) == (4, 4)  # not created twice


def test_a_write_that_is_rolled_back_leaves_the_count_as_it_was(app, session):
    site = make_site(session)
    make_urls(session, site, 3)
    upsert_urls(session, site, [{"loc": f"{site.base_url}new"}])
    session.rollback()
    assert live(session, site) == (3, 3)


def test_a_deleted_site_takes_its_count_with_it(app, session):
    site = make_site(session)
    make_urls(session, site, 3)
    with app.app_context():
        delete_site(session, site, utcnow(), get_store(app))
    session.commit()
    assert session.scalar(select(func.count()).select_from(Site)) == 0


# The dashboard's sites page


def test_a_page_of_sites_gets_the_same_health_warnings_as_each_site_s_overview(app, session):
    def site(name, count, default_priority=None, **fields):
        made = make_site(session, name, f"https://{name}.example/",
                         default_priority=default_priority)
        make_urls(session, made, count, **fields)
        return made

    sites = [
        site("empty", 0), site("few", 3, priority=0.9), site("high", 12, priority=0.9),
        site("defaulthigh", 12, default_priority=0.9),  # URLs without one take the default
        site("one-low", 12, priority=0.9), site("future", 12, lastmod="2999-01-01"),
        site("seven", 12), site("six", 12), site("nulls", 12, priority=0.5),
    ]
    save_url(session, sites[4], f"{sites[4].base_url}low", {"priority": "0.1"})
    for n in range(12):  # seven of twelve share a lastmod; six of twelve do not make most
        save_url(session, sites[6], f"{sites[6].base_url}page/{n}",
                 {"lastmod": "2026-01-01" if n < 7 else f"2026-02-{n:02}", "priority": "0.5"})
        save_url(session, sites[7], f"{sites[7].base_url}page/{n}",
                 {"lastmod": "2026-01-01" if n < 6 else f"2026-02-{n:02}", "priority": "0.5"})
    delete_url(session, sites[2], f"{sites[2].base_url}page/0")  # a deleted URL is no URL
    session.commit()
    session.expire_all()
    with app.app_context():
        batch = health.page_warnings(session, sites)
        one_by_one = {site.id: health.warnings(session, site) for site in sites}
    assert batch == one_by_one
    titles = {site.slug: [w.title for w in batch[site.id]] for site in sites}
    assert titles["empty"] == ["No URLs yet"] and titles["few"] == []
    assert titles["high"] == titles["defaulthigh"] == ["Every URL has a high priority"]
    assert titles["one-low"] == [] and titles["six"] == [] and titles["nulls"] == []
    assert titles["future"] == ["12 URLs have a lastmod in the future",
                                "12 of 12 URLs share the lastmod 2999-01-01"]
    assert titles["seven"] == ["7 of 12 URLs share the lastmod 2026-01-01"]



@pytest.fixture
def viewer(app, session):
    create_user(session, "viewer@example.com", PASSWORD, "viewer")
    session.commit()
    client = app.test_client()
    assert sign_in(client, "viewer@example.com").status_code == 302
    return client


def names_on(html: str) -> list[str]:
    return re.findall(r'<td data-label="Site"><a href="/sites/[^"]+">([^<]+)</a>', html)


def test_the_sites_page_shows_fifty_sites_a_page_and_keeps_search_and_sort(viewer, session):
    make_sites(session, 120, name="Shop {n:03}", host="shop{n:03}.example.com")
    make_sites(session, 3, name="Blog {n}", host="blog{n}.example.org")
    first = viewer.get("/").text
    assert names_on(first)[:4] == ["Blog 0", "Blog 1", "Blog 2", "Shop 000"]
    assert len(names_on(first)) == 50 and "Sites 1–50 of 123" in first
    page = viewer.get("/?q=SHOP&sort=last_run")
    assert page.status_code == 200 and "Sites 1–50 of 120" in page.text
    assert 'href="/?page=2&amp;q=SHOP&amp;sort=last_run" rel="next"' in page.text
    third = viewer.get("/?page=3&q=SHOP&sort=last_run").text
    assert len(names_on(third)) == 20 and "Sites 101–120 of 120" in third
    assert 'href="/?q=SHOP&amp;sort=last_run"' in third  # the first page keeps them too
    assert 'value="SHOP"' in third and '<option value="last_run" selected' in third
    assert 'rel="next"' not in third
    seen = [name for n in (1, 2, 3) for name in names_on(viewer.get(f"/?page={n}&q=shop").text)]
    assert sorted(seen) == seen and len(set(seen)) == 120


def test_the_search_matches_name_or_host_ignoring_case_and_takes_like_characters_literally(
        viewer, session):
    for name, host in [("Café 50% off", "deals.example.com"), ("Fifty", "fifty.example.net"),
                       ("a_b shop", "ab.example.com"), ("axb shop", "axb.example.com"),
                       ("Back\\slash", "back.example.com")]:
        make_site(session, name, f"https://{host}/")
    assert names_on(viewer.get("/?q=50%25").text) == ["Café 50% off"]
    assert names_on(viewer.get("/?q=a_b").text) == ["a_b shop"]
    assert names_on(viewer.get("/?q=k%5Cs").text) == ["Back\\slash"]
    assert names_on(viewer.get("/?q=EXAMPLE.NET").text) == ["Fifty"]
    assert names_on(viewer.get("/?q=%20%20DEALS.example%20").text) == ["Café 50% off"]
    nothing = viewer.get("/?q=nowhere")
    assert nothing.status_code == 200 and "No site matches “nowhere”" in nothing.text


def test_sorting_by_last_run_puts_the_newest_first_and_never_run_sites_last(viewer, session):
    sites = {site.name: site for site in make_sites(session, 3, name="S{n}", host="s{n}.example")}
    never = make_site(session, "A never run", "https://never.example/")
    now = utcnow()
    session.add(Generation(site_id=sites["S0"].id, number=2, status="succeeded", started_at=now))
    session.add(Generation(site_id=sites["S2"].id, number=2, status="failed",
                           started_at=now + timedelta(minutes=1)))
    session.commit()
    assert names_on(viewer.get("/?sort=last_run").text) == ["S2", "S0", "S1", never.name]


def test_sorting_by_problems_puts_the_sites_with_most_first_and_names_them(viewer, session):
    sites = {site.name: site for site in make_sites(session, 4, name="S{n}", host="s{n}.example")}
    for site in sites.values():
        make_urls(session, site, 2, lastmod="2026-01-01")
    session.add(Generation(site_id=sites["S1"].id, number=2, status="failed", started_at=utcnow()))
    for engine in ("indexnow", "gsc"):
        session.add(Delivery(site_id=sites["S2"].id, engine=engine, status="failed",
                             attempt_limit=4))
    session.add(Delivery(site_id=sites["S2"].id, engine="ping", status="delivered",
                         attempt_limit=4))
    future, _ = save_url(session, sites["S3"], f"{sites['S3'].base_url}future")
    future.lastmod = "2999-01-01"  # stored before input refused it (more than a day ahead)
    session.commit()
    empty = make_site(session, "Empty", "https://empty.example/")
    page = viewer.get("/?sort=problems").text
    assert names_on(page) == ["S2", "Empty", "S1", "S3", "S0"]
    assert "The last IndexNow announcement failed" in page
    assert "The last Search Console announcement failed" in page
    assert "The last generation failed" in page and "No URLs yet" in page
    assert "1 URLs have a lastmod in the future" in page
    assert empty.name in page


def test_the_last_announcements_name_each_engine_as_people_read_it(viewer, session):
    site = make_sites(session, 1)[0]
    for engine, status in (("indexnow", "delivered"), ("gsc", "failed"), ("ping", "pending")):
        session.add(Delivery(site_id=site.id, engine=engine, status=status, attempt_limit=4))
    session.commit()
    cell = re.search(r'<td data-label="Last announcements">(.*?)</td>', viewer.get("/").text)[1]
    shown = [re.sub(r"<[^>]+>", "", item).split() for item in re.findall(r"<li>(.*?)</li>", cell)]
    assert sorted(shown) == [["IndexNow", "delivered"], ["Ping", "pending"],
                             ["Search", "Console", "failed"]]


@pytest.mark.parametrize("query, named", [
    ("page=0", "page"), ("page=two", "page"), ("page=99999999", "page"), ("page=-1", "page"),
    ("sort=size", "sort"), ("q=" + "x" * 201, "q"),
])
def test_bad_list_parameters_are_a_400_that_names_them(viewer, session, query, named):
    make_sites(session, 1)
    answer = viewer.get(f"/?{query}")
    assert answer.status_code == 400 and f"{named} " in answer.text
    assert "Traceback" not in answer.text


def test_a_page_past_the_last_says_so_and_links_back(viewer, session):
    make_sites(session, 2)
    answer = viewer.get("/?page=5&q=site")
    assert answer.status_code == 200 and "Page 5 is past the last page (1)" in answer.text
    assert 'href="/?q=site">First</a>' in answer.text
