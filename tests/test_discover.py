"""Discovery crawls against a small website on 127.0.0.1 (tests/website.py): what is followed,
what is refused, what is recorded, and what the server was asked for."""

from __future__ import annotations

import importlib
import time

import pytest
from sqlalchemy import event, select

from tests import discover_website as website
from tests.builders import another_shell, make_site
from webapp import discover
from webapp.errors import InvalidValue
from webapp.models import Discovery, Site, Url
from webapp.outbound import StoppedByOwnRules
from webapp.said import english, render

crawling = importlib.import_module("webapp.discover.crawl")  # `discover.crawl` is the function
LIMITS = discover.Limits(max_pages=50, max_depth=2, max_minutes=1)


@pytest.fixture
def app(app):
    app.config["DISCOVER_DELAY_MS"] = 0  # the test website needs no politeness
    return app


@pytest.fixture
def shop(session, engine):
    """The test website as a site, /site/a stored already, /site/tmp/* excluded and utm_*
    parameters stripped."""
    base = website.serve(engine)
    site = make_site(session, "Site", base, exclude="/site/tmp/*", strip_params="utm_*")
    session.add(Url(site_id=site.id, loc=base + "a"))
    site.url_count = 1
    session.commit()
    return site


def states(session, site) -> dict[str, tuple[str, str | None, str | None]]:
    session.expire_all()
    return {row.loc.removeprefix(site.base_url): (row.state, row.verdict, row.note)
            for row in session.scalars(select(Discovery).where(Discovery.site_id == site.id))}


def test_a_crawl_finds_the_sites_pages_and_fetches_nothing_out_of_scope_or_disallowed(
        app, session, engine, shop):
    report = discover.crawl(app, shop.id, LIMITS)

    assert report.line() == "8 found: 6 new, 1 known, 1 excluded"
    found = states(session, shop)
    new = {loc for loc, (_, verdict, _) in found.items() if verdict == "new"}
    assert new == {"", "c", "ja/", website.JAPANESE_LOC_PATH.removeprefix("/site/"),
                   "a/deep", "quiet"}
    assert found["a"][:2] == ("found", "known")
    assert found["tmp/scratch"] == ("excluded", "excluded", "/site/tmp/*")  # never fetched
    assert found["private/secret"][0] == "disallowed"  # robots.txt
    assert found["go-away"][0] == "left" and "localhost" in found["go-away"][2]
    assert found["moved"] == ("redirected", None, shop.base_url + "c")
    # The duplicate is recorded under its canonical; its tracking parameter was stripped.
    assert found["dup?id=7"] == ("duplicate", None, shop.base_url + "a")
    assert found["hidden"][0] == "noindex"
    assert found["down"] == ("failed", None, "answered 404")
    assert "a/deep/deeper" not in found  # beyond the depth limit
    assert "b" not in found and "never" not in found  # rel=nofollow, meta robots nofollow

    asked = website.requested(engine)
    assert asked[0] == "/robots.txt"
    assert not set(asked) & website.FORBIDDEN, asked
    assert all(path.startswith(website.PREFIX) for path in asked[1:]), asked
    assert len(asked) == len(set(asked))  # each page once
    assert website.JAPANESE_PATH in asked  # the Shift_JIS page's link, read in its encoding


def test_the_page_limit_stops_the_crawl_and_leaves_the_rest_unfetched(app, session, engine,
                                                                       shop):
    report = discover.crawl(app, shop.id, discover.Limits(max_pages=2, max_depth=5))

    assert report.fetched == 2 and report.stopped_by == "pages"
    assert len(website.requested(engine)) == 3  # robots.txt and two pages
    skipped = [loc for loc, (state, *_) in states(session, shop).items() if state == "skipped"]
    assert skipped


def test_a_page_slower_than_the_time_limit_ends_the_crawl(app, session, engine):
    """The crawl's clock stands still until the slow page is asked for, then jumps past the
    limit: however long the steps before it take, the fetch is cut at the time that was left."""
    app.config["NOTIFY_TIMEOUT"] = 60  # the remaining 1.8 s, not the policy's minute, cuts it
    slow = website.SlowPage()
    base = website.serve(engine, slow)
    site = make_site(session, "Site", base)
    session.add(Url(site_id=site.id, loc=base + "slow"))  # listed by the sitemap: fetched next
    session.commit()
    start = time.monotonic()
    try:
        report = discover.crawl(app, site.id, discover.Limits(max_pages=50, max_minutes=0.03),
                                clock=lambda: start if slow.asked_at is None
                                else time.monotonic() + 3600)
    finally:
        slow.release.set()
    assert time.monotonic() - start < 25  # the page would answer after 30 s
    assert report.stopped_by == "time"
    state, _, note = states(session, site)["slow"]
    assert state == "failed" and "no answer within" in note
    assert "/site/a" not in website.requested(engine)


def test_robots_txt_that_does_not_answer_forbids_every_page(app, session, engine):
    engine.expect_request("/robots.txt").respond_with_data("down", status=503)
    engine.expect_request("/site/").respond_with_data("<a href='/site/a'>a</a>",
                                                      content_type="text/html")
    site = make_site(session, "Site", f"http://127.0.0.1:{engine.port}/site/")

    report = discover.crawl(app, site.id, LIMITS)

    assert report.robots and "503" in english([report.robots])
    assert website.requested(engine) == ["/robots.txt"]
    assert report.line() == "0 found: 0 new, 0 known, 0 excluded"


def test_accept_by_prefix_and_ignore_by_pattern_act_on_pending_new_urls(app, session, shop):
    discover.crawl(app, shop.id, LIMITS)
    site = session.get(Site, shop.id)

    assert discover.accept(session, site, "/ja/").created == 2
    assert discover.ignore(session, site, "re:^/site/(c|quiet)$") == 2
    session.commit()
    counts = discover.counts(session, site)
    assert counts["pending"] == 2  # / and /a/deep
    stored = set(session.scalars(select(Url.loc).where(Url.site_id == site.id)))
    assert {site.base_url + "ja/", site.base_url + website.JAPANESE_LOC_PATH[6:]} <= stored
    assert site.base_url + "c" not in stored
    assert discover.accept(session, site).created == 2
    session.commit()
    assert discover.counts(session, site).get("pending", 0) == 0


def test_an_ignore_pattern_is_checked_like_an_exclusion_rule(app, session, shop):
    with pytest.raises(InvalidValue) as refused:
        discover.ignore(session, shop, "re:(unclosed")
    assert "pattern" in str(refused.value) and "regular expression" in str(refused.value)


def test_the_add_mode_adds_new_urls_at_once(app, session, shop):
    shop.discover_mode = "add"
    session.commit()

    report = discover.crawl(app, shop.id, LIMITS)

    assert report.accepted == 6
    session.expire_all()
    assert session.get(Site, shop.id).url_count == 7
    assert session.scalar(select(Url.id).where(Url.loc.like("%tmp%"))) is None


def test_the_command_ends_with_one_line_and_accept_adds_the_new_urls(app, runner, session,
                                                                      shop):
    result = runner.invoke(args=["discover", shop.slug, "--max-pages", "50", "--max-depth", "2",
                                 "--accept"])

    assert result.exit_code == 0, result.output
    assert result.output.splitlines()[-1] == "8 found: 6 new, 1 known, 1 excluded"
    session.expire_all()
    assert session.get(Site, shop.id).url_count == 7


def test_the_command_names_a_limit_out_of_range(runner, shop):
    result = runner.invoke(args=["discover", shop.slug, "--max-pages", "0"])
    assert result.exit_code != 0
    assert "max_pages '0': must be a whole number from 1 to 10000" in result.output


def test_the_discover_page_names_bad_limits_and_patterns_and_accepts_all(app, session, shop):
    import re

    from webapp.accounts.users import create_user

    create_user(session, "ed@example.com", "correct horse", "editor")
    session.commit()
    client = app.test_client()
    token = re.search(r'name="csrf_token" value="([^"]+)"', client.get("/sign-in").text)[1]
    client.post("/sign-in", data={"email": "ed@example.com", "password": "correct horse",
                                  "csrf_token": token})
    csrf = re.search(r'name="csrf_token" value="([^"]+)"', client.get("/").text)[1]
    page = f"/sites/{shop.slug}/discover"

    bad = client.post(page, data={"csrf_token": csrf, "max_pages": "lots", "max_depth": "99",
                                  "max_minutes": "5"})
    assert bad.status_code == 422
    assert "max_pages &#39;lots&#39;: must be a whole number from 1 to 10000" in bad.text
    assert "max_depth &#39;99&#39;: must be a whole number from 0 to 50" in bad.text
    started = client.post(page, data={"csrf_token": csrf, "max_pages": "50", "max_depth": "2",
                                      "max_minutes": "1"})
    task = client.get(started.location + ".json").json  # ran where it was asked (eager)
    assert task["status"] == "done" and task["result"]["new"] == 6, task
    listed = client.get(page).text
    assert "New (6)" in listed and "Excluded (1)" in listed
    assert "/site/tmp/*" in client.get(page + "?show=excluded").text
    wrong = client.post(page + "/ignore", data={"csrf_token": csrf, "pattern": "re:(x"})
    assert wrong.status_code == 422 and "is not a valid regular expression" in wrong.text
    client.post(page + "/ignore", data={"csrf_token": csrf, "pattern": "/site/quiet"})
    accepted = client.post(page + "/accept", data={"csrf_token": csrf}, follow_redirects=True)
    assert "Added 5 URLs to the site." in accepted.text
    session.expire_all()
    assert session.get(Site, shop.id).url_count == 6


# --- a page with very many links ---------------------------------------------------------------

def serve_links(engine, links: int, prefix: str = "p") -> str:
    """The test server's / as one page linking to /<prefix>0 ... ; its base URL."""
    body = "<html><body>" + "".join(f'<a href="/{prefix}{n}">.</a>' for n in range(links)) \
        + "</body></html>"
    engine.expect_request("/robots.txt").respond_with_data("", content_type="text/plain")
    engine.expect_request("/").respond_with_data(body, content_type="text/html")
    return engine.url_for("/")


def test_a_page_of_70000_links_takes_the_first_5000_and_says_so(app, session, engine):
    """More links than one IN (...) list may hold on PostgreSQL: a page's links are capped
    after removing repeats, and the crawl's notes count those not followed."""
    site = make_site(session, "Big", serve_links(engine, 70_000))
    session.commit()
    report = discover.crawl(app, site.id, discover.Limits(max_pages=1, max_depth=2,
                                                          max_minutes=1))
    assert report.fetched == 1
    assert report.links_left == 70_000 - crawling.MAX_LINKS_PER_PAGE
    assert report.cut().startswith("65000 links not followed")
    assert len(states(session, site)) == 1 + crawling.MAX_LINKS_PER_PAGE


def test_excluded_links_count_toward_the_frontier_limit(app, session, engine, monkeypatch):
    monkeypatch.setattr(crawling, "MAX_FRONTIER", 100)
    site = make_site(session, "Big", serve_links(engine, 3_000, "x/"), exclude="/x/*")
    session.commit()
    discover.crawl(app, site.id, discover.Limits(max_pages=1, max_depth=2, max_minutes=1))
    assert len(states(session, site)) <= 100 + 1


def test_one_page_of_links_costs_the_crawl_no_more_statements_than_a_few_links(app, session,
                                                                            engine):
    """20,000 links once outlasted the time limit, looked up and written one by one: they are
    looked up with one query and written with one statement, so a page of them costs what a
    page of 20 does (counted, not timed: a busy machine takes its time either way)."""
    statements = []

    def count(*_args) -> None:
        statements.append(1)

    site = make_site(session, "Big", engine.url_for("/"))
    session.commit()

    def statements_of_a_crawl(links: int) -> int:
        engine.clear()
        serve_links(engine, links)
        statements.clear()
        event.listen(app.extensions["db_engine"], "before_cursor_execute", count)
        try:
            report = discover.crawl(app, site.id, discover.Limits(max_pages=1, max_depth=2,
                                                                  max_minutes=60))
        finally:
            event.remove(app.extensions["db_engine"], "before_cursor_execute", count)
        assert report.fetched == 1
        return len(statements)

    few = statements_of_a_crawl(20)
    many = statements_of_a_crawl(20_000)
    assert many <= few + 3, (few, many)  # (a batch more of the insert, at most)


def test_a_nul_in_a_canonical_or_redirect_target_does_not_end_the_crawl(app, session, engine):
    """PostgreSQL refuses NUL in text: the note keeps the target without it."""
    from werkzeug import Response
    engine.expect_request("/robots.txt").respond_with_data("", content_type="text/plain")
    engine.expect_request("/").respond_with_data(
        b'<html><head><link rel="canonical" href="/a\x00b"></head>'
        b'<body><a href="/next">n</a><a href="/moved">m</a></body></html>',
        content_type="text/html")
    engine.expect_request("/moved").respond_with_response(Response(
        "", status=301, headers={"Location": "http://elsewhere.example/\x00" + "x" * 5000}))
    engine.expect_request("/next").respond_with_data("<p>ok</p>", content_type="text/html")
    site = make_site(session, "Nul", engine.url_for("/"))
    session.commit()
    report = discover.crawl(app, site.id, discover.Limits(max_pages=5, max_depth=2,
                                                          max_minutes=1))
    # /, /next, /moved, and the canonical: HTML reads a NUL in a value as U+FFFD (libxml2
    # does), so the canonical is /a%EF%BF%BDb, a page of the site
    assert report.fetched == 4
    assert "/a\ufffdb" in website.requested(engine)
    notes = [note for _, _, note in states(session, site).values() if note]
    assert notes and all("\x00" not in note and len(note) <= 2048 for note in notes)


# robots.txt that redirects (RFC 9309 section 2.3.1.2; Google: five hops, then as a 404)


@pytest.mark.parametrize("hops", [1, 5])
def test_robots_txt_that_redirects_is_followed_and_its_rules_kept(app, session, engine, hops):
    base = website.serve(engine, robots_hops=hops)
    site = make_site(session, "Site", base)
    report = discover.crawl(app, site.id, LIMITS)
    assert report.robots is None and report.new > 0
    assert states(session, site)["private/secret"][0] == "disallowed"
    asked = website.requested(engine)
    assert asked[:hops + 1] == ["/robots.txt", *(f"/hop/{n}" for n in range(1, hops)),
                                "/config/robots.txt"]
    assert "/site/private/secret" not in asked


def test_more_than_five_robots_txt_redirects_read_as_no_robots_txt(app, session, engine):
    """Google follows five hops, then reads robots.txt as a 404: everything is allowed."""
    base = website.serve(engine, robots_hops=6)
    site = make_site(session, "Site", base)
    report = discover.crawl(app, site.id, LIMITS)
    assert report.robots is None
    asked = website.requested(engine)
    assert asked[:6] == ["/robots.txt", *(f"/hop/{n}" for n in range(1, 6))]
    assert "/config/robots.txt" not in asked and "/site/private/secret" in asked


def test_a_robots_txt_redirect_to_an_address_not_allowed_stops_the_crawl(app, session, engine):
    from werkzeug import Response
    engine.expect_request("/robots.txt").respond_with_response(Response(
        status=301, headers={"Location": f"http://127.0.0.2:{engine.port}/robots.txt"}))
    engine.expect_request("/site/").respond_with_data("<a href='/site/a'>a</a>",
                                                      content_type="text/html")
    site = make_site(session, "Site", f"http://127.0.0.1:{engine.port}/site/")
    with pytest.raises(StoppedByOwnRules) as stopped:
        discover.crawl(app, site.id, LIMITS)
    reason = str(stopped.value)
    assert "127.0.0.2" in reason and "a loopback address" in reason
    assert "OUTBOUND_ALLOW" in reason and "the review list is as it was" in reason
    assert website.requested(engine) == ["/robots.txt"]


def test_a_crawl_this_servers_own_rule_refuses_leaves_the_review_list_as_it_was(
        app, session, engine, shop):
    """The dashboard's crawl (OUTBOUND_ALLOW=127.0.0.1) left a review list; the command run
    from a shell without OUTBOUND_ALLOW is refused its first request by that rule: it fails
    in one line naming the setting, and the list is untouched."""
    discover.crawl(app, shop.id, LIMITS)
    before = states(session, shop)
    assert sum(verdict == "new" for _, verdict, _ in before.values()) == 6
    engine.clear_log()
    with another_shell(app, OUTBOUND_ALLOW="") as shell:
        with pytest.raises(StoppedByOwnRules, match=r"\(OUTBOUND_ALLOW\)") as stopped:
            discover.crawl(shell, shop.id, LIMITS)
        result = shell.test_cli_runner().invoke(args=["discover", shop.slug])
    assert result.exit_code == 1, result.output
    [line] = result.output.splitlines()
    assert line.startswith("Error: the crawl stopped before fetching any page: ")
    assert "OUTBOUND_ALLOW" in line
    assert states(session, shop) == before and website.requested(engine) == []
    with app.test_request_context(headers={"Accept-Language": "ja"}):
        assert render(stopped.value.said_line()).startswith(
            "ページを取得する前にクロールを中止しました: 127.0.0.1 は")
