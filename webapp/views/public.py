"""Public serving for crawlers: published sitemap files, robots.txt and the IndexNow key file.

Files are answered from the site's published set at `/sitemaps/<slug>/<name>`, and at their
public paths when the request's host is the one in the site's sitemap URL (a site can then
reverse-proxy its sitemap paths here). No sign-in, no database query per request, and a
conditional request is answered from the manifest without opening the file.
"""

from __future__ import annotations

from flask import Blueprint, Response, abort, current_app, request, send_file

from webapp.sitemaps import get_store
from webapp.sitemaps.publish import PublishedFile
from webapp.sitemaps.routing import SiteRoute, SiteRoutes, request_origin

bp = Blueprint("public", __name__)

XML = "application/xml; charset=utf-8"
TYPES = {"urlset": XML, "index": XML, "stylesheet": "text/xsl"}  # werkzeug adds text/*'s charset
# Crawlers and proxies may keep a copy but must revalidate it, so an index and its files
# are never served from two different generations by a cache.
CACHE_CONTROL = "no-cache"


def _routes() -> SiteRoutes:
    return current_app.extensions["site_routes"]


def _text(body: str) -> Response:
    return Response(body, mimetype="text/plain", headers={"Cache-Control": CACHE_CONTROL})


@bp.get("/sitemaps/<slug>/<name>")
def sitemap_file(slug: str, name: str):
    route = _routes().by_slug(slug)
    if route is None:
        abort(404, f"There is no site {slug!r}.")
    return _serve(route, name)


@bp.before_app_request
def site_hosts():
    """Answer requests sent to a site's own host: its sitemap files, robots.txt, key file."""
    if request.method not in ("GET", "HEAD"):
        return None
    origin = request_origin(request.scheme, request.host)
    path = request.path
    if path == "/robots.txt" or path.endswith(".txt"):
        for route in _routes().site_host(origin):
            if path == "/robots.txt":
                return _text(route.robots_txt)
            if path == f"/{route.indexnow_key}.txt":
                return _text(route.indexnow_key)
    candidates = _routes().sitemap_candidates(origin, path)
    for route, name in candidates:
        published = get_store().published(route.storage_key)
        if published is not None and name.removesuffix(".gz") in published.files:
            return _serve(route, name)
    if len(candidates) == 1 and candidates[0][1] == candidates[0][0].entry_name:
        return _serve(*candidates[0])  # explains why the entry sitemap is missing
    return None


def _serve(route: SiteRoute, name: str) -> Response:
    published = get_store().published(route.storage_key)
    if published is None:
        abort(404, f"Site {route.slug!r} has no published sitemaps yet: nothing was generated, "
                   "or the site has no URLs.")
    if name in published.files:
        file = published.files[name]
        if file.gzip_size is None:
            return _file_response(file, gzip_twin=False)
        gzip_encoded = request.accept_encodings["gzip"] > 0
        response = _file_response(file, gzip_twin=gzip_encoded, gzip_encoded=gzip_encoded)
        response.vary.add("Accept-Encoding")
        return response
    plain = published.files.get(name.removesuffix(".gz"))
    if name.endswith(".gz") and plain is not None and plain.gzip_size is not None:
        return _file_response(plain, gzip_twin=True)
    abort(404, f"Site {route.slug!r} publishes no file {name!r}.")


def _file_response(file: PublishedFile, gzip_twin: bool, gzip_encoded: bool = False) -> Response:
    """The file, or its `.gz` twin as a file of its own or as the gzip-encoded file; a 304
    is decided from the manifest before anything is opened."""
    etag = f"{file.sha256[:32]}-gz" if gzip_twin else file.sha256[:32]
    headers = {"X-Robots-Tag": "noindex", "Cache-Control": CACHE_CONTROL}
    if _not_modified(etag, file):
        response = Response(status=304, headers=headers)
        response.set_etag(etag)
        response.last_modified = file.lastmod
        return response
    path = file.path.with_name(file.name + ".gz") if gzip_twin else file.path
    mimetype = "application/gzip" if gzip_twin and not gzip_encoded else TYPES[file.kind]
    response = send_file(path, mimetype=mimetype, etag=etag, last_modified=file.lastmod,
                         conditional=True, max_age=None)
    response.headers.update(headers)
    if gzip_encoded:
        response.headers["Content-Encoding"] = "gzip"
    return response


def _not_modified(etag: str, file: PublishedFile) -> bool:
    if request.if_none_match:
        return request.if_none_match.contains(etag)
    since = request.if_modified_since
    return since is not None and file.lastmod is not None and file.lastmod.replace(microsecond=0) <= since
