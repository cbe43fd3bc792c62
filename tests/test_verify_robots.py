"""What a verification makes of a robots.txt it cannot read: a host that does not answer
makes its URLs unreachable (not "blocked by robots.txt"); a server error (5xx, 429)
disallows everything for the run, as Google reads it, and keeps what was seen before; a
missing file (4xx) allows everything."""

from __future__ import annotations

import socket

import pytest
from werkzeug import Response

from tests.builders import make_site
from tests.test_verify import checks, served, web  # noqa: F401 (fixtures)
from webapp.models import Url
from webapp.outbound import StoppedByOwnRules
from webapp.said import english
from webapp.verify import verify_site
from webapp.verify.health import health


@pytest.fixture
def closed_port():
    """A port on 127.0.0.1 that refuses connections: bound, never listening, held."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        yield sock.getsockname()[1]


def _site(session, base_url: str, pages=("a", "b")):
    site = make_site(session, "Down", base_url)
    for page in pages:
        session.add(Url(site_id=site.id, loc=site.base_url + page))
    session.commit()
    return site


def test_a_host_that_does_not_answer_makes_its_urls_unreachable(app, session, runner,
                                                                closed_port):
    site = _site(session, f"http://127.0.0.1:{closed_port}/site/")
    result = runner.invoke(args=["verify", site.slug])
    lines = result.output.splitlines()
    assert result.exit_code == 0, (result.output, result.exception)
    assert lines[-1] == ("2 checked: 0 ok, 0 broken, 0 redirected, 0 noindex, "
                         "0 canonical elsewhere, 2 unreachable"), result.output
    assert "robots.txt disallows" not in result.output
    assert "/robots.txt did not answer" in lines[0]
    found = checks(session, site)
    assert {name: check.outcome for name, check in found.items()} == {"a": "unreachable",
                                                                     "b": "unreachable"}
    assert "/robots.txt did not answer" in found["a"].error and found["a"].status is None
    assert health(session, site).counts == {"unreachable": 2}  # what the page shows


@pytest.mark.parametrize("status", [503, 500, 429])
def test_a_server_error_for_robots_txt_disallows_everything_and_keeps_what_was_seen(
        app, session, engine, status):
    engine.expect_request("/robots.txt").respond_with_data("", content_type="text/plain")
    engine.expect_request("/site/a").respond_with_data(
        "<title>a</title><p>a</p>", content_type="text/html", headers={"ETag": '"a1"'})
    site = _site(session, engine.url_for("/site/"), pages=("a",))
    assert verify_site(app, site.id).counts == {"ok": 1}
    before = checks(session, site)["a"]
    engine.clear()
    # The body would allow everything: a server error's body is not rules.
    engine.expect_request("/robots.txt").respond_with_response(
        Response("User-agent: *\nAllow: /\n", status=status, content_type="text/plain"))
    summary = verify_site(app, site.id)
    assert summary.counts == {"blocked": 1}
    note = english([summary.note])
    assert f"answered {status}" in note and "server error" in note
    assert [request.path for request, _ in engine.log] == ["/robots.txt"]
    after = checks(session, site)["a"]
    assert (after.outcome, after.status, after.fingerprint, after.etag) == (
        "blocked", 200, before.fingerprint, '"a1"')


@pytest.mark.parametrize("status", [404, 403, 410])
def test_a_robots_txt_that_is_not_there_allows_everything(app, session, engine,
                                                          status):
    engine.expect_request("/robots.txt").respond_with_response(
        Response("User-agent: *\nDisallow: /\n", status=status, content_type="text/plain"))
    engine.expect_request("/site/a").respond_with_data("<p>a</p>", content_type="text/html")
    site = _site(session, engine.url_for("/site/"), pages=("a",))
    summary = verify_site(app, site.id)
    assert summary.counts == {"ok": 1} and summary.note is None


@pytest.mark.parametrize("text", ["", "# nothing but a comment", "Sitemap: https://a/s.xml",
                                  "User-agent: other\nDisallow: /", "User-agent: *\nDisallow:",
                                  "User-agent: *\nDisallow: /private/",
                                  "User-agent: pickybot\nDisallow: /"])
def test_robots_without_rules_allow_what_the_parser_allows(text):
    """A robots.txt without rules (none at all, most often) is answered without reading each
    URL: what it allows is what the parser says."""
    from webapp.verify.robots import Robots, _rules

    for agent in ("pickybot", "sitemap-dashboard"):
        robots = Robots(_rules(text.splitlines()), agent)
        for url in ("https://a/", "https://a/private/x", "https://a/p?q=1"):
            assert robots.allowed(url) == robots.parser.can_fetch(agent, url), (agent, url)


# robots.txt that redirects (RFC 9309 section 2.3.1.2; Google: five hops, then as a 404)


def _hops(web, count: int) -> None:
    """/robots.txt made `count` 301s from its rules: /robots.txt, /hop/1, ... /config/robots.txt."""
    chain = ["/robots.txt", *(f"/hop/{n}" for n in range(1, count)), "/config/robots.txt"]
    web.moved.update(zip(chain, chain[1:]))


@pytest.mark.parametrize("count", [1, 5])
def test_robots_txt_that_redirects_is_followed_and_its_rules_kept(app, session, web, count):
    _hops(web, count)
    site = _site(session, f"{web.base}/site/", pages=("", "private/page"))
    summary = verify_site(app, site.id)
    assert {name: check.outcome for name, check in checks(session, site).items()} == {
        "": "ok", "private/page": "blocked"}
    assert summary.note is None
    assert "/site/private/page" not in web.paths()
    assert web.paths()[:count + 1] == ["/robots.txt", *(f"/hop/{n}" for n in range(1, count)),
                                       "/config/robots.txt"]


def test_robots_txt_on_another_host_is_the_one_used(app, session, web, engine):
    engine.expect_request("/robots.txt").respond_with_data(
        "User-agent: *\nDisallow: /site/private/\n", content_type="text/plain")
    web.moved["/robots.txt"] = engine.url_for("/robots.txt")  # another port: another authority
    site = _site(session, f"{web.base}/site/", pages=("", "private/page"))
    verify_site(app, site.id)
    assert checks(session, site)["private/page"].outcome == "blocked"
    assert "/site/private/page" not in web.paths()
    assert [request.path for request, _ in engine.log] == ["/robots.txt"]


def test_more_than_five_redirects_or_a_loop_read_as_no_robots_txt(app, session, web):
    """Google follows five hops, then reads robots.txt as a 404: everything is allowed."""
    _hops(web, 6)
    site = _site(session, f"{web.base}/site/", pages=("private/page",))
    assert verify_site(app, site.id).counts == {"ok": 1}
    assert web.paths()[:6] == ["/robots.txt", *(f"/hop/{n}" for n in range(1, 6))]
    assert "/config/robots.txt" not in web.paths()  # the sixth redirect is not followed

    web.reset()
    web.moved.update({"/robots.txt": "/hop/1", "/hop/1": "/robots.txt"})
    assert verify_site(app, site.id).counts == {"ok": 1}
    assert web.paths() == ["/robots.txt", "/hop/1", "/site/private/page"]


def test_a_redirect_to_an_address_not_allowed_stops_the_run_and_records_nothing(app, session,
                                                                              web):
    """robots.txt on the site's host sends the verifier to another host, which this server's
    own rule refuses: what that host would answer is unknown, so the run stops, failed,
    naming the rule, and each URL keeps its last check."""
    site = _site(session, f"{web.base}/site/", pages=("", "private/page"))
    assert verify_site(app, site.id).counts == {"ok": 1, "blocked": 1}
    before = checks(session, site)
    web.reset()
    port = web.base.rsplit(":", 1)[1]
    web.moved["/robots.txt"] = f"http://127.0.0.2:{port}/robots.txt"  # not in OUTBOUND_ALLOW
    with pytest.raises(StoppedByOwnRules) as stopped:
        verify_site(app, site.id)
    said = str(stopped.value)
    assert "127.0.0.2" in said and "a loopback address" in said and "OUTBOUND_ALLOW" in said
    assert web.paths() == ["/robots.txt"]
    assert checks(session, site) == before


def test_robots_txt_past_500_kib_is_read_up_to_it(app, session, engine):
    """Google reads a robots.txt's first 500 KiB and ignores the rest; a line cut there is no
    rule (cut, `Disallow: /private/` could read `Disallow: /`)."""
    head = "User-agent: *\nDisallow: /site/private/\n"
    filler = "#" * ((500 << 10) - len(head) - 12) + "\n"
    engine.expect_request("/robots.txt").respond_with_data(
        head + filler + "Disallow: /site/everything\nDisallow: /\n", content_type="text/plain")
    engine.expect_request("/site/a").respond_with_data("<p>a</p>", content_type="text/html")
    site = _site(session, engine.url_for("/site/"), pages=("a", "private/b"))
    assert verify_site(app, site.id).counts == {"ok": 1, "blocked": 1}
    assert checks(session, site)["private/b"].outcome == "blocked"
