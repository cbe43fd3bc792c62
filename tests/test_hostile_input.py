"""Every reader of what the network sends (pages, headers, robots.txt, sitemaps, URLs a site
names, engines' answers), timed on hostile input by size: its time may grow with the input's
length, never with its square. A reader that rescans what follows at every `<` without a `>`
held verification's loop for 27 s on one 60,000-character Link header.

Each case runs the reader on input of size n and 4n (each timed over as many calls as the
small one needs to take 5 ms, so noise is small), the best of a few runs each: the ratio of
the two is about 4 for a linear reader, about 16 for a quadratic one; it must stay under 8.
No clock threshold: a busy machine slows both sizes alike.
"""

from __future__ import annotations

import gc
import time
from collections import Counter
from collections.abc import Callable
from urllib.robotparser import RobotFileParser

import h11
import pytest

from webapp import protocol
from webapp.discover import pages as discover_pages
from webapp.discover.robots import Robots as DiscoverRobots
from webapp.errors import InvalidValue
from webapp.outbound import Page, Policy, excerpt, page_charset, retry_after_seconds
from webapp.outbound import robots as outbound_robots
from webapp.outbound import urls as outbound_urls
from webapp.outbound.crawler import MAX_HEAD, _headers
from webapp.urls import sitemap_reader
from webapp.verify import page as verify_page
from webapp.verify.robots import Robots as VerifyRobots
from webapp.verify.robots import _rules

FOUR_TIMES = 8  # the most t(4n) / t(n) may be: 4 is linear, 16 quadratic
ENOUGH = 0.005  # seconds the small input's calls must take, so that noise is small beside it


def _best(run: Callable[[object], object], value: object, reps: int, tries: int = 3) -> float:
    """The shortest of `tries` runs of `reps` calls, in this thread's CPU time: the time the
    reader itself took, not the time other processes held the core (a busy machine made the
    wall-clock ratio of the same reader 8 to 20)."""
    best = float("inf")
    for _ in range(tries):
        start = time.thread_time()
        for _ in range(reps):
            run(value)
        best = min(best, time.thread_time() - start)
    return best


def growth(run: Callable[[object], object], make: Callable[[int], object],
           n: int = 4096) -> float:
    """t(make(4n)) / t(make(n)), each timed over as many calls as the small one needs to
    take ENOUGH, the garbage collector paused (its passes over every object the process
    holds are no cost of the reader's)."""
    small, large = make(n), make(4 * n)
    gc.collect()
    gc.disable()
    try:
        reps = 1
        while _best(run, small, reps, 1) < ENOUGH and reps < 4096:
            reps *= 2
        ratio = _best(run, large, reps) / _best(run, small, reps)
        for _ in range(2):  # again, in case the machine was busy for one of them
            if ratio < FOUR_TIMES:
                break
            ratio = min(ratio, _best(run, large, reps) / _best(run, small, reps))
    finally:
        gc.enable()
    return ratio


def assert_linear(run, make, n: int = 4096) -> None:
    ratio = growth(run, make, n)
    assert ratio < FOUR_TIMES, f"4x the input ({n} -> {4 * n}) took {ratio:.1f}x the time"


# Pages and their headers (verification reads them on its loop; discovery in a worker)

PAGE_SHAPES = {
    "many < without >": lambda n: "<" * n,
    "attributes never closed": lambda n: '<a href="' * n,
    "comments never closed": lambda n: "<!--" * n,
    "end tags never closed": lambda n: "</" * n,
    "declarations never closed": lambda n: "<!" * n,
    "processing instructions never closed": lambda n: "<?" * n,
    "CDATA never closed": lambda n: "<![CDATA[" * n,
    "character references never ended": lambda n: "&#" * n,
    "tags never closed": lambda n: "<a " * n,
    "deep nesting": lambda n: "<div>" * n,
    "a script of <": lambda n: "<script>" + "<" * n,
    "meta without >": lambda n: "<meta" * n,
    "meta charset without a value": lambda n: "<meta charset" * n,
    "robots meta of many directives": lambda n: '<meta name="robots" content="'
                                                 + "noindex:," * n + '">',
    "many robots metas": lambda n: '<meta name="robots" content="index">' * n,
    "a canonical of a long href": lambda n: '<link rel="canonical" href="/' + "a" * n + '">',
    "many links": lambda n: '<a href="/x">x</a>' * n,
    "XML declaration never closed": lambda n: "<?xml" + " " * n,
    "XML declaration with a version never closed": lambda n: "<?xml version='1.0'" + "\t\n" * n,
    "white space before an XML declaration": lambda n: " " * n + "<?xml",
}


def _verify_reads(body: bytes) -> None:
    """What a verification check reads of a 200 HTML page."""
    headers = {"Content-Type": "text/html"}
    tree = verify_page.parse(headers, body)
    verify_page.noindex(headers, tree)
    verify_page.canonical("https://example.com/a", headers, tree)
    verify_page.fingerprint(tree, body, ())


@pytest.mark.parametrize("shape", PAGE_SHAPES)
def test_verification_reads_a_hostile_page_in_linear_time(shape):
    assert_linear(_verify_reads, lambda n: PAGE_SHAPES[shape](n).encode())


@pytest.mark.parametrize("shape", PAGE_SHAPES)
def test_discovery_reads_a_hostile_page_in_linear_time(shape):
    """(The standard library's html.parser took a minute for 180 KB of `<a href="`.)"""
    assert_linear(lambda body: discover_pages.read_page("https://example.com/a", "text/html",
                                                        body),
                  lambda n: PAGE_SHAPES[shape](n).encode())


LINK_SHAPES = {
    "many < without >": lambda n: "<" * n,
    "many <a without >": lambda n: "<a" * n,
    "< then a long target": lambda n: "<" + "a" * n,
    "many ;": lambda n: "<a>" + ";" * n,
    "many ; and spaces": lambda n: "<a>" + " ; " * n,
    "white space without ;": lambda n: "<a>;" + " " * n + "x",
    "many rel without =": lambda n: "<a>" + ";rel" * n,
    "many rel= without a value": lambda n: "<a>" + ';rel="' * n,
    "many links": lambda n: '<a>; rel="preload", ' * n,
    "a long rel": lambda n: '<a>; rel="' + "canonica " * n,
}


@pytest.mark.parametrize("shape", LINK_SHAPES)
def test_a_hostile_link_header_is_read_in_linear_time(shape):
    assert_linear(lambda value: verify_page.canonical("https://example.com/a",
                                                      {"Link": value}, None),
                  LINK_SHAPES[shape])


HEADER_SHAPES = {
    "many ;": lambda n: "text/html" + ";" * n,
    "many charset=": lambda n: "text/html" + ";charset=" * n,
    "charset and white space": lambda n: "text/html; charset" + " " * n,
    "many ,": lambda n: "," * n,
    "many :": lambda n: ":" * n,
    "many directives": lambda n: "googlebot: noindex, " * n,
}


@pytest.mark.parametrize("shape", HEADER_SHAPES)
def test_hostile_content_type_and_x_robots_tag_are_read_in_linear_time(shape):
    def reads(value: str) -> None:
        page_charset(value, b"")
        verify_page.noindex({"X-Robots-Tag": value}, None)
        discover_pages.read_page("https://example.com/", value, b"<p>x</p>", value)

    assert_linear(reads, HEADER_SHAPES[shape])


# What the crawler reads off the wire: the head of an answer (capped at MAX_HEAD)

HEAD_SHAPES = {
    "one header many times": lambda n: b"Link: a\r\n" * n,
    "a value of white space": lambda n: b"X: " + b" " * n + b"a\r\n",
    "a value of many words": lambda n: b"X: " + b"a " * n + b"a\r\n",
    "a long header name": lambda n: b"X-" + b"a" * n + b": a\r\n",
}


def _answer_head(lines: bytes) -> None:
    conn = h11.Connection(h11.CLIENT, max_incomplete_event_size=MAX_HEAD)
    conn.send(h11.Request(method="GET", target="/", headers=[("Host", "example.com")]))
    conn.send(h11.EndOfMessage())
    conn.receive_data(b"HTTP/1.1 200 OK\r\n" + lines + b"Content-Length: 0\r\n\r\n")
    _headers(conn.next_event().headers)


@pytest.mark.parametrize("shape", HEAD_SHAPES)
def test_a_hostile_answer_head_is_read_in_linear_time(shape):
    assert_linear(_answer_head, HEAD_SHAPES[shape], n=MAX_HEAD // 64)


# robots.txt (read once per run; each URL then asks it)

ROBOTS_SHAPES = {
    "many agents": lambda n: "User-agent: a\n" * n + "Disallow: /\n",
    "many rules": lambda n: "User-agent: *\n" + "Disallow: /a\n" * n,
    "many escapes": lambda n: "User-agent: *\nDisallow: /" + "%" * n + "\n",
    "a long rule": lambda n: "User-agent: *\nDisallow: /" + "a" * n + "\n",
    "many :": lambda n: ":" * n,
    "many #": lambda n: "#" * n,
    "many blank lines": lambda n: "User-agent: *\n" + "\n" * n + "Disallow: /\n",
}


@pytest.mark.parametrize("shape", ROBOTS_SHAPES)
def test_a_hostile_robots_txt_is_read_in_linear_time(shape):
    def reads(text: str) -> None:
        found = outbound_robots._Chain("https://example.com").answered(
            Page("https://example.com/robots.txt", 200, {}, text.encode()))
        VerifyRobots(_rules(list(found.lines)), "sitemap-dashboard").allowed(
            "https://example.com/a/b")
        rules = RobotFileParser()
        rules.parse(list(found.lines))
        DiscoverRobots(rules).allows("https://example.com/a/b")

    assert_linear(reads, ROBOTS_SHAPES[shape])


# URLs a site names (links, redirects, canonicals): normalised, then asked for

URL_SHAPES = {
    "a long host then a space": lambda n: "http://" + "a" * n + " ",
    "many ? then a space": lambda n: "http://a/" + "?" * n + " ",
    "many # then a space": lambda n: "http://a/#" + "#" * n + " ",
    "a long port": lambda n: "http://a:" + "1" * n + "/",
    "many %": lambda n: "http://a/" + "%" * n,
    "many dot segments": lambda n: "http://a" + "/.." * n,
    "many encoded dots": lambda n: "http://a/" + "%2e%2E/" * n,
    "many labels": lambda n: "http://" + "a." * n + "!/",
    "many hyphens": lambda n: "http://" + "a-" * n + "/",
    "many non-ASCII": lambda n: "http://a/" + "é" * n,
    "a query of bad escapes": lambda n: "http://a/?" + "%zz" * n,
    "many colons in brackets": lambda n: "http://[" + ":" * n + "]/",
}


@pytest.mark.parametrize("shape", URL_SHAPES)
def test_a_hostile_url_is_read_in_linear_time(shape):
    def reads(url: str) -> None:
        outbound_urls.parts(url)
        try:
            protocol.normalize_url(url)
        except InvalidValue:
            pass

    assert_linear(reads, URL_SHAPES[shape])


# Sitemaps fetched to import them

URLSET = b'<urlset xmlns="http://www.sitemaps.org/schemas/sitemap/0.9">'
SITEMAP_SHAPES = {
    "many urls": lambda n: URLSET + b"<url><loc>https://example.com/a</loc></url>" * n
                           + b"</urlset>",
    "a long lastmod": lambda n: URLSET + b"<url><loc>https://example.com/a</loc><lastmod>"
                                + b"2020-01-01T00:00:00." + b"1" * n + b"x</lastmod></url>"
                                + b"</urlset>",
    "a long loc": lambda n: URLSET + b"<url><loc>https://example.com/" + b"%" * n
                            + b"</loc></url></urlset>",
    "urls never closed": lambda n: URLSET + b"<url>" * n,
    "many <": lambda n: URLSET + b"<" * n,
    "a long tag name": lambda n: URLSET + b"<" + b"a" * n + b"></b>",
    "many undefined entities": lambda n: URLSET + b"<url><loc>" + b"&x" * n,
}


@pytest.mark.parametrize("shape", SITEMAP_SHAPES)
def test_a_hostile_sitemap_is_read_in_linear_time(shape):
    def reads(data: bytes) -> None:
        try:
            for _ in sitemap_reader.read_sitemap(data, "sitemap.xml", {"example.com"},
                                                 Policy(1), Counter()):
                pass
        except (sitemap_reader.ImportFormatError, InvalidValue):
            pass

    assert_linear(reads, SITEMAP_SHAPES[shape])


# Engines' answers

ANSWER_SHAPES = {
    "white space": lambda n: " " * n,
    "many words": lambda n: "a " * n,
    "many digits": lambda n: "1" * n,
    "a date of many commas": lambda n: "Mon, " + "," * n,
}


@pytest.mark.parametrize("shape", ANSWER_SHAPES)
def test_an_engines_hostile_answer_is_read_in_linear_time(shape):
    def reads(text: str) -> None:
        retry_after_seconds(text)
        excerpt(text)

    assert_linear(reads, ANSWER_SHAPES[shape])
