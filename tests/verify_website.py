"""A small website for verification tests, served on 127.0.0.1 by the test suite: pages that
change, redirect chains, 404/410/500, noindex by header and by meta, canonical elsewhere,
robots.txt disallows, a slow page, a redirect that leaves the site, pages in Shift_JIS and
EUC-JP, a PDF with validators, and any path made to redirect (`moved`: robots.txt's own
redirects; its rules are at /config/robots.txt too). Every request is logged (method, path,
headers) so that tests can assert what the verifier asked for, and never asked for.

The site lives under /site/; /robots.txt is at the root; /outside/ is beyond the site's scope.
"""

from __future__ import annotations

import hashlib
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field

from werkzeug.serving import make_server
from werkzeug.wrappers import Request, Response

ROBOTS = """User-agent: pickybot
Disallow: /site/

User-agent: *
Disallow: /site/private/
"""

JAPANESE = "<html><head><title>サイトマップ</title></head><body><p>日本語のページです</p></body></html>"


@dataclass
class Website:
    """The site's state (what tests change) and what it was asked."""

    version: int = 1  # /site/changing shows it
    stamp: int = 0  # /site/ shows it in a script and as a "generated" line
    log: list[dict] = field(default_factory=list)
    in_flight: int = 0
    most_in_flight: int = 0
    release_slow: threading.Event = field(default_factory=threading.Event)
    lock: threading.Lock = field(default_factory=threading.Lock)
    base: str = ""
    moved: dict[str, str] = field(default_factory=dict)  # path -> where a 301 sends it

    def paths(self, method: str | None = None) -> list[str]:
        return [entry["path"] for entry in self.log if method in (None, entry["method"])]

    def reset(self) -> None:
        with self.lock:
            self.log.clear()
            self.most_in_flight = 0
            self.moved.clear()

    def __call__(self, environ, start_response):
        request = Request(environ)
        counted = request.path != "/site/slow"  # may outlive the test that asked for it
        with self.lock:
            self.log.append({"method": request.method, "path": request.path,
                             "target": request.full_path.rstrip("?"),
                             "headers": dict(request.headers), "at": time.monotonic()})
            self.in_flight += counted
            self.most_in_flight = max(self.most_in_flight, self.in_flight)
        try:
            response = self.answer(request)
        finally:
            with self.lock:
                self.in_flight -= counted
        return response(environ, start_response)

    def html(self, body: str, status: int = 200, headers: dict | None = None) -> Response:
        return Response(f"<!doctype html><html><head>{body}", status,
                        headers=headers, content_type="text/html; charset=utf-8")

    def answer(self, request: Request) -> Response:
        path = request.path
        if path in self.moved:
            return Response(status=301, headers={"Location": self.moved[path]})
        if path in ("/robots.txt", "/config/robots.txt"):
            return Response(ROBOTS, content_type="text/plain")
        if path == "/site/":
            return self.html(f"<title>Home</title><script>var nonce={self.stamp};</script>"
                             f"<style>.x{{}}</style></head><body><p>Welcome</p>"
                             f"<p>Generated at {self.stamp}</p></body></html>")
        if path == "/site/changing":
            return self.html(f"</head><body><p>Version {self.version}</p></body></html>")
        if path == "/site/etag":
            tag = f'"v{self.version}"'
            if request.headers.get("If-None-Match") == tag:
                return Response(status=304, headers={"ETag": tag})
            return self.html(f"</head><body>Version {self.version}</body></html>",
                             headers={"ETag": tag})
        if path == "/site/r1":
            return Response(status=301, headers={"Location": "/site/r2"})
        if path == "/site/r2":
            return Response(status=302, headers={"Location": f"{self.base}/site/final"})
        if path == "/site/final":
            return self.html("</head><body>Final</body></html>")
        if path == "/site/leave":
            return Response(status=302, headers={"Location": "/outside/page"})
        if path == "/site/to-private":
            return Response(status=301, headers={"Location": "/site/private/page"})
        if path == "/site/missing":
            return self.html("</head><body>Not here</body></html>", 404)
        if path == "/site/gone":
            return self.html("</head><body>Gone</body></html>", 410)
        if path == "/site/error":
            return self.html("</head><body>Oops</body></html>", 500)
        if path == "/site/noindex-header":
            return self.html("</head><body>Hidden</body></html>",
                             headers={"X-Robots-Tag": "googlebot: noindex, nofollow"})
        if path == "/site/noindex-meta":
            return self.html('<meta name="robots" content="NOINDEX"></head><body>x</body></html>')
        if path == "/site/canonical-link":
            return self.html('<link rel="canonical" href="/site/"></head><body>Copy</body></html>')
        if path == "/site/canonical-header":
            return Response(b"%PDF-1.4", content_type="application/pdf",
                            headers={"Link": f'<{self.base}/site/>; rel="canonical"'})
        if path == "/site/canonical-self":
            return self.html(f'<link rel="canonical" href="{self.base}/site/canonical-self">'
                             "</head><body>Me</body></html>")
        if path == "/site/slow":
            self.release_slow.wait(120)  # until the website stops: past any time-out
            return self.html("</head><body>Late</body></html>")
        if path == "/site/sjis":
            return Response(JAPANESE.encode("shift_jis"),
                            content_type="text/html; charset=Shift_JIS")
        if path == "/site/eucjp":
            meta = JAPANESE.replace("<head>", '<head><meta charset="EUC-JP">')
            return Response(meta.encode("euc_jp"), content_type="text/html")
        if path == "/site/utf8":
            return Response(JAPANESE.encode(), content_type="text/html; charset=utf-8")
        if path == "/site/file.pdf":
            tag = f'"pdf{self.version}"'
            if request.headers.get("If-None-Match") == tag:
                return Response(status=304, headers={"ETag": tag})
            body = f"%PDF-1.4 {self.version}".encode()
            return Response(b"" if request.method == "HEAD" else body,
                            content_type="application/pdf",
                            headers={"ETag": tag, "Content-Length": str(len(body))})
        if path.startswith("/site/private/"):
            return self.html("</head><body>Private</body></html>")
        if path.startswith("/outside/"):
            return self.html("</head><body>Another site</body></html>")
        return self.html("</head><body>No such page</body></html>", 404)


PAGES = ("", "changing", "etag", "r1", "leave", "to-private", "missing", "gone", "error",
         "noindex-header", "noindex-meta", "canonical-link", "canonical-header",
         "canonical-self", "slow", "sjis", "eucjp", "utf8", "file.pdf", "private/page")


def digest_of_text(text: str) -> str:
    return hashlib.sha256(" ".join(text.split()).encode()).hexdigest()


@contextmanager
def serve() -> Iterator[Website]:
    """The website on a free port of 127.0.0.1 while the block runs."""
    website = Website()
    server = make_server("127.0.0.1", 0, website, threaded=True)
    website.base = f"http://127.0.0.1:{server.server_port}"
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield website
    finally:
        website.release_slow.set()
        server.shutdown()
        thread.join()
        server.server_close()
