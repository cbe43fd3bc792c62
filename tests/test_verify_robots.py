"""What a verification makes of a robots.txt it cannot read: a host that does not answer
makes its URLs unreachable (not "blocked by robots.txt"); a server error (5xx, 429)
disallows everything for the run, as Google reads it, and keeps what was seen before; a
missing file (4xx) allows everything."""

from __future__ import annotations

import socket

import pytest
from werkzeug import Response

from tests.builders import make_site
from tests.test_verify import checks
from webapp.models import Url
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
