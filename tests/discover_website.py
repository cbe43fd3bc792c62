"""A small website for discovery crawls, served on 127.0.0.1 by pytest-httpserver: a link graph
with depth, hreflang alternates, nofollow (by rel and by meta robots), a canonical duplicate,
robots.txt disallows, redirects in and out of the site, links out of scope, a page in Shift_JIS,
and a page that answers slower than any deadline.

The site is `<server>/site/`; everything else on the server is outside its scope. The server's
log (`server.log`) says what the crawler fetched.
"""

from __future__ import annotations

import threading
import time

from pytest_httpserver import HTTPServer
from werkzeug import Response

PREFIX = "/site/"
JAPANESE = "日本語"
JAPANESE_LOC_PATH = "/site/ja/%E6%97%A5%E6%9C%AC%E8%AA%9E"  # UTF-8, as the site's encoding says
JAPANESE_PATH = f"/site/ja/{JAPANESE}"  # as the server reads it (decoded)

# Paths a polite crawler of /site/ must never request.
FORBIDDEN = {"/outside/page", "/site/private/secret", "/site/b", "/site/never", "/elsewhere",
             "/site/tmp/scratch", "/site/a/deep/deeper"}


def html(body: str, head: str = "") -> str:
    return f"<!doctype html><html><head>{head}</head><body>{body}</body></html>"


def pages(origin: str) -> dict[str, str]:
    """Each page's HTML by path (the Shift_JIS page is served apart)."""
    other_host = origin.replace("127.0.0.1", "localhost")
    return {
        "/site/": html(
            '<a href="a">A</a> <a href="/site/b" rel="nofollow">B</a> '
            '<a href="/outside/page">outside</a> <a href="http://other.invalid/x">far</a> '
            '<a href="/site/tmp/scratch">scratch</a> <a href="/site/private/secret">private</a> '
            '<a href="/site/go-away">away</a> <a href="/site/moved">moved</a> '
            '<a href="/site/dup?utm_source=news&amp;id=7#top">dup</a> '
            '<a href="/site/quiet">quiet</a> <a href="/site/hidden">hidden</a> '
            '<a href="/site/down">down</a>',
            '<link rel="alternate" hreflang="ja" href="/site/ja/">'
            f'<link rel="alternate" hreflang="en" href="{origin}/site/">'),
        "/site/a": html('<a href="/site/a/deep">deeper</a> <a href="/site/">home</a>'),
        "/site/a/deep": html('<a href="/site/a/deep/deeper">deepest</a>'),
        "/site/a/deep/deeper": html("too deep"),
        "/site/c": html("moved here"),
        "/site/dup": html("a copy of A", '<link rel="canonical" href="/site/a">'),
        "/site/quiet": html('<a href="/site/never">never</a>',
                            '<meta name="robots" content="index, nofollow">'),
        "/site/hidden": html("not for search", '<meta name="robots" content="noindex">'),
        "/site/b": html("only linked with nofollow"),
        "/site/never": html("only linked from a nofollow page"),
        "/site/private/secret": html("disallowed"),
        "/site/tmp/scratch": html("excluded"),
        "/outside/page": html("outside the site's scope"),
        "/elsewhere": html(f"another host: {other_host}"),
        JAPANESE_PATH: html("日本語のページ"),
    }


class SlowPage:
    """/site/slow: it answers only once released, and notes when it was asked."""

    def __init__(self) -> None:
        self.release = threading.Event()
        self.asked_at: float | None = None

    def answer(self, _request) -> Response:
        self.asked_at = time.monotonic()
        self.release.wait(30)  # released when the test ends
        return Response("late", content_type="text/html")


def serve(server: HTTPServer, slow: SlowPage | None = None, robots_hops: int = 0) -> str:
    """Register the website on `server`; its base URL (`<origin>/site/`). With `robots_hops`,
    /robots.txt is that many 301s from its rules (/robots.txt, /hop/1, ... /config/robots.txt)."""
    origin = f"http://127.0.0.1:{server.port}"
    other_host = f"http://localhost:{server.port}"
    chain = ["/robots.txt", *(f"/hop/{n}" for n in range(1, robots_hops)), "/config/robots.txt"]
    for path, target in zip(chain, chain[1:]) if robots_hops else ():
        server.expect_request(path).respond_with_response(
            Response(status=301, headers={"Location": target}))
    server.expect_request(chain[-1] if robots_hops else "/robots.txt").respond_with_data(
        "User-agent: *\nDisallow: /site/private/\n", content_type="text/plain")
    for path, body in pages(origin).items():
        server.expect_request(path).respond_with_data(body, content_type="text/html; charset=utf-8")
    server.expect_request("/site/ja/").respond_with_data(
        html(f'<a href="/site/ja/{JAPANESE}">日本語</a>',
             '<meta charset="shift_jis">').encode("shift_jis"), content_type="text/html")
    server.expect_request("/site/go-away").respond_with_response(
        Response(status=302, headers={"Location": f"{other_host}/elsewhere"}))
    server.expect_request("/site/moved").respond_with_response(
        Response(status=301, headers={"Location": "/site/c"}))
    server.expect_request("/site/down").respond_with_data("gone", status=404)
    if slow is not None:
        server.expect_request("/site/slow").respond_with_handler(slow.answer)
    return origin + PREFIX


def requested(server: HTTPServer) -> list[str]:
    """The paths the crawler asked for, in order."""
    return [request.path for request, _ in server.log]
