"""The WSGI layer that answers crawlers from the published files (see the package's
docstring for what it serves where), and the memory of small bodies it keeps."""

from __future__ import annotations

import functools
import hashlib
import os
import threading
import time
from collections import OrderedDict
from collections.abc import Callable, Iterable

from sqlalchemy.exc import SQLAlchemyError
from werkzeug.http import http_date, parse_date, parse_etags
from werkzeug.wsgi import FileWrapper

from webapp.sitemaps import (
    STYLESHEET,
    MissingBody,
    PublishedFile,
    PublishedSet,
    SitemapStore,
    replace_file,
)
from webapp.views.display import readable_url
from webapp.views.public import view_words
from webapp.views.public.routes import (
    SiteRoute,
    SiteRoutes,
    entry_published,
    host_robots_txt,
    news_sitemaps,
    request_origin,
)

XML = "application/xml; charset=utf-8"
TYPES = {"urlset": XML, "index": XML, "news": XML, "stylesheet": "text/xsl; charset=utf-8"}
# Crawlers and proxies may keep a copy but must revalidate it, so an index and its files
# are never served from two different generations by a cache.
COMMON = [("Cache-Control", "no-cache"), ("X-Robots-Tag", "noindex"),
          ("X-Content-Type-Options", "nosniff")]  # a browser never reads a file as another type
# The HTML view of a sitemap: its own inline style, links, and nothing that runs.
VIEW_POLICY = ("default-src 'none'; style-src 'unsafe-inline'; frame-ancestors 'none'; "
               "base-uri 'none'; form-action 'none'")
BLOCK = 64 * 1024
RECHECK = 0.1  # seconds: how stale the published generation may be when a name is unknown

Headers = list[tuple[str, str]]
Answer = tuple[str, Headers, Iterable[bytes]]


class FileMemory:
    """Bodies of recently served small files, up to a byte budget per process.

    Published bodies never change (a path names a digest), so a body read once can be sent
    from memory until it is crowded out: one send instead of open, stat, seek and
    sendfile, each of which makes a worker thread queue again for the GIL.
    """

    def __init__(self, budget: int):
        self.budget, self.used = budget, 0
        self._bodies: OrderedDict[str, bytes] = OrderedDict()
        self._lock = threading.Lock()

    def get(self, path: str, size: int) -> bytes | None:
        """The body kept for `path`, else read and kept if small enough."""
        with self._lock:
            body = self._bodies.get(path)
            if body is not None:
                self._bodies.move_to_end(path)
                return body
        if size > self.budget // 8:
            return None
        try:
            with open(path, "rb") as handle:
                body = handle.read()
        except FileNotFoundError:
            return None
        with self._lock:
            if path not in self._bodies:
                self._bodies[path] = body
                self.used += len(body)
                while self.used > self.budget:
                    self.used -= len(self._bodies.popitem(last=False)[1])
        return body


def _display_url(_context, loc: str) -> str:
    return readable_url(loc)


@functools.cache
def _transform():
    """The sitemap stylesheet, compiled by the first view a browser asks for, not by every
    process that serves (or runs a command). The server-side view shows URLs decoded, as the
    dashboard does (display:url in the stylesheet)."""
    from lxml import etree

    return etree.XSLT(etree.parse(str(STYLESHEET)),
                      extensions={("urn:sitemap-dashboard:display", "url"): _display_url})


# Part of each cached rendering's name, so that a changed stylesheet is rendered afresh.
VIEW_VERSION = hashlib.sha256(STYLESHEET.read_bytes()).hexdigest()[:12]
_transform_lock = threading.Lock()  # an XSLT object must not run in two threads at once


def render_html(path, folder: str = "", view: str = "", language: str = "en") -> bytes:
    """The sitemap file at `path` through the sitemap stylesheet: the table a browser shows.

    With `folder` (where the site's sitemap files are published) and `view` (where their
    views are), links from an index lead to the views of its files; its words in `language`.
    """
    from lxml import etree  # loaded by the first view, not by every process that serves

    document = etree.parse(str(path), etree.XMLParser(resolve_entities=False, no_network=True,
                                                      huge_tree=True))
    with _transform_lock:
        return bytes(_transform()(document, folder=etree.XSLT.strparam(folder),
                                view=etree.XSLT.strparam(view),
                                **{name: etree.XSLT.strparam(text)
                                   for name, text in view_words.words(language).items()}))


def _text(status: str, body: str) -> Answer:
    data = body.encode()
    return status, [("Content-Type", "text/plain; charset=utf-8"),
                    ("Content-Length", str(len(data))), ("Cache-Control", "no-cache"),
                    ("X-Content-Type-Options", "nosniff")], [data]


def _busy() -> Answer:
    status, headers, body = _text("503 Service Unavailable",
                                  "The sitemaps were just republished; ask again.\n")
    return status, [*headers, ("Retry-After", "1")], body


def _not_after_now(file: PublishedFile) -> str:
    """The file's Last-Modified, or now if that is later (RFC 9110 8.8.2.1): a lastmod may
    run a second ahead of the clock for each run within one second (generate.later_than)."""
    now = time.time()
    return file.last_modified if file.lastmod.timestamp() <= now else http_date(now)


def _accepts_gzip(value: str) -> bool:
    """Whether an Accept-Encoding header allows gzip: an explicit entry decides over `*`."""
    qualities = {}
    for member in value.split(","):
        coding, *params = member.split(";")
        quality = 1.0
        for param in params:
            name, _, number = param.partition("=")
            if name.strip().lower() == "q":
                try:
                    quality = float(number)
                except ValueError:
                    quality = 0.0
        qualities[coding.strip().lower()] = quality
    explicit = [qualities[c] for c in ("gzip", "x-gzip") if c in qualities]
    return (max(explicit) if explicit else qualities.get("*", 0.0)) > 0


class PublicFiles:
    """WSGI middleware that answers crawler requests and passes everything else on."""

    def __init__(self, next_app: Callable, store: SitemapStore, routes: SiteRoutes,
                 memory: FileMemory):
        self.next_app, self.store, self.routes, self.memory = next_app, store, routes, memory
        self._render_lock = threading.Lock()

    def __call__(self, environ: dict, start_response: Callable) -> Iterable[bytes]:
        answer = self.answer(environ) if environ["REQUEST_METHOD"] in ("GET", "HEAD") else None
        if answer is None:
            return self.next_app(environ, start_response)
        status, headers, body = answer
        start_response(status, headers)
        if environ["REQUEST_METHOD"] == "HEAD":
            if hasattr(body, "close"):
                body.close()
            return []
        return body

    def answer(self, environ: dict) -> Answer | None:
        path = environ.get("PATH_INFO") or "/"
        host = environ.get("HTTP_HOST") or f"{environ['SERVER_NAME']}:{environ['SERVER_PORT']}"
        origin = request_origin(environ["wsgi.url_scheme"], host)
        slug, slash, name = path[len("/sitemaps/"):].partition("/") \
            if path.startswith("/sitemaps/") else ("", "", "")
        # /sitemaps/<slug>/ belongs to the site with that slug, whatever another site's
        # sitemap URL says: no site can shadow another's files there.
        owner = self.routes.by_slug(slug) if slash else None
        answer = self.site_host(environ, origin, path, owner)
        if answer is not None or not path.startswith("/sitemaps/"):
            return answer
        route = owner or self.routes.by_slug(slug)
        if route is None:
            return _text("404 Not Found", f"There is no site {slug!r}.\n")
        if name.startswith("view/"):
            return self.view(environ, route, name.removeprefix("view/"))
        return self.file(environ, route, name)

    def site_host(self, environ: dict, origin: str, path: str,
                  owner: SiteRoute | None = None) -> Answer | None:
        """Requests to a site's own host: its sitemap files at their public paths, robots.txt,
        the key file. Tried first, so a site may keep its sitemaps in a /sitemaps/ folder."""
        if path.endswith(".txt"):
            sites = self.routes.site_host(origin)
            if path == "/robots.txt" and sites:
                return _text("200 OK", host_robots_txt(
                    sites, self.publishes_entry, lambda route: news_sitemaps(self.store, route)))
            for route in sites:
                if path == f"/{route.indexnow_key}.txt":
                    return _text("200 OK", route.indexnow_key)
        # PATH_INFO carries the path's bytes as latin-1 (PEP 3333): compare them as bytes,
        # whatever encoding the site's folder names use.
        candidates = [(route, name) for route, name in self.routes.sitemap_candidates(
            origin, path.encode("latin-1", "replace")) if owner is None or route.id == owner.id]
        for route, name in candidates:
            if route.key_beside_sitemap and name == f"{route.indexnow_key}.txt":
                return _text("200 OK", route.indexnow_key)
            published = self.store.published(route.storage_key)
            if published is not None and name.removesuffix(".gz") in published.files:
                return self.file(environ, route, name, published)
        if len(candidates) == 1 and candidates[0][1] == candidates[0][0].entry_name:
            return self.file(environ, *candidates[0])  # says why the entry sitemap is missing
        return None

    def publishes_entry(self, route: SiteRoute) -> bool:
        return entry_published(self.store, route)

    def file(self, environ: dict, route: SiteRoute, name: str,
             published: PublishedSet | None = None) -> Answer:
        published = published or self.store.published(route.storage_key)
        if published is None:
            return _text("404 Not Found", f"Site {route.slug!r} has no published sitemaps yet: "
                                          "nothing was generated, or the site has no URLs.\n")
        if name not in published.files and name.removesuffix(".gz") not in published.files:
            # Perhaps a file of a generation another node published within our TTL, listed in
            # an index the crawler got there: look again, at most every RECHECK seconds.
            published = self.store.published(route.storage_key, max_age=RECHECK) or published
        file = published.files.get(name)
        if file is not None:
            if file.gzip_size is None:
                return self.send(environ, file, gzip_twin=False)
            encoded = _accepts_gzip(environ.get("HTTP_ACCEPT_ENCODING", ""))
            return self.send(environ, file, gzip_twin=encoded, gzip_encoded=encoded,
                             extra=[("Vary", "Accept-Encoding")])
        plain = published.files.get(name.removesuffix(".gz"))
        if name.endswith(".gz") and plain is not None and plain.gzip_size is not None:
            return self.send(environ, plain, gzip_twin=True)
        return _text("404 Not Found", f"Site {route.slug!r} publishes no file {name!r}.\n")

    def view(self, environ: dict, route: SiteRoute, name: str) -> Answer:
        """A published sitemap file rendered as an HTML table, for people."""
        published = self.store.published(route.storage_key)
        file = None if published is None else published.files.get(name)
        if file is None or file.kind not in ("urlset", "index", "news"):
            return _text("404 Not Found", f"Site {route.slug!r} publishes no sitemap {name!r}.\n")
        folder, links = route.sitemap_url_folder, f"/sitemaps/{route.slug}/view/"
        language = view_words.language_of(environ)
        page = self.store.view_path(file, f"{VIEW_VERSION}\n{folder}\n{links}\n{language}")
        headers = [("Content-Type", "text/html; charset=utf-8"), *COMMON,
                   ("Content-Security-Policy", VIEW_POLICY), ("Content-Language", language),
                   ("Vary", "Accept-Language")]
        try:
            if not page.exists():  # rendered once per body and site, then sent like any file
                with self._render_lock:
                    if not page.exists():
                        html = render_html(self.store.local(file), folder, links, language)
                        try:
                            replace_file(page, html)
                        except PermissionError:  # a read-only cache: serve it, keep nothing
                            return "200 OK", [*headers, ("Content-Length", str(len(html)))], [html]
            handle = open(page, "rb")
        except (FileNotFoundError, MissingBody, SQLAlchemyError):  # pruned meanwhile
            return _busy()
        return "200 OK", [*headers, ("Content-Length", str(os.fstat(handle.fileno()).st_size))], \
            environ.get("wsgi.file_wrapper", FileWrapper)(handle, BLOCK)

    def send(self, environ: dict, file: PublishedFile, gzip_twin: bool, gzip_encoded: bool = False,
             extra: Headers = ()) -> Answer:
        """The file, or its `.gz` twin as a file of its own or as the gzip-encoded file."""
        etag = f"{file.sha256[:32]}-gz" if gzip_twin else file.sha256[:32]
        headers = [("ETag", f'"{etag}"'), *COMMON, *extra]
        if file.last_modified:
            headers.append(("Last-Modified", _not_after_now(file)))
        if self._not_modified(environ, etag, file):
            return "304 Not Modified", headers, []
        if gzip_twin and not gzip_encoded:
            headers.append(("Content-Type", "application/gzip"))
        else:
            headers.append(("Content-Type", TYPES[file.kind]))
        if gzip_encoded:
            headers.append(("Content-Encoding", "gzip"))
        path = file.gzip_path if gzip_twin else file.path
        size = file.gzip_size if gzip_twin else file.size
        headers.append(("Content-Length", str(size)))
        body = self.memory.get(str(path), size)
        if body is None and not path.exists():  # not in this node's cache yet
            try:
                self.store.local(file)
            except (MissingBody, SQLAlchemyError):  # pruned after this set was read
                return _busy()
            body = self.memory.get(str(path), size)
        if body is not None:
            return "200 OK", headers, [body]
        try:
            handle = open(path, "rb")
        except FileNotFoundError:  # trimmed from the cache a moment ago
            return _busy()
        return "200 OK", headers, environ.get("wsgi.file_wrapper", FileWrapper)(handle, BLOCK)

    @staticmethod
    def _not_modified(environ: dict, etag: str, file: PublishedFile) -> bool:
        if "HTTP_IF_NONE_MATCH" in environ:  # weak comparison, as RFC 9110 13.1.2 asks
            return parse_etags(environ["HTTP_IF_NONE_MATCH"]).contains_weak(etag)
        since = parse_date(environ.get("HTTP_IF_MODIFIED_SINCE"))
        return since is not None and file.lastmod is not None and file.lastmod <= since
