"""Public serving for crawlers: published sitemap files, robots.txt and the IndexNow key file.

Where crawlers find what:
    /sitemaps/<slug>/<name>        any file of a site's published set, on any host
    <sitemap folder>/<name>        the same, on the host of the site's sitemap URL
    /robots.txt, /<key>.txt        on the host of the site's base URL
and people:
    /sitemaps/<slug>/view/<name>   a sitemap file as an HTML table (the stylesheet applied
                                   here, since browsers are dropping XSLT)

This audience is served by a thin WSGI layer in front of Flask rather than by a blueprint:
Flask's per-request machinery cost about 0.7 ms, ten times what nginx needs for a whole
request, and crawlers may fetch at full speed. No sign-in, no database query per request (a
routing table and each generation's manifest are kept in memory), and a conditional request
is answered from the manifest without opening the file. Everything else goes on to Flask.

`routes` knows which site a request is for; `files` answers it.
"""

from __future__ import annotations

from flask import Flask

from webapp.views.public.files import VIEW_VERSION, FileMemory, PublicFiles
from webapp.views.public.routes import SiteRoutes, robots_txt_preview

__all__ = ["VIEW_VERSION", "FileMemory", "PublicFiles", "SiteRoutes", "init_app",
           "robots_txt_preview"]


def init_app(app: Flask) -> None:
    """Crawlers are answered before Flask sees the request; the rest goes on to Flask."""
    routes = SiteRoutes(app.extensions["db_sessionmaker"], ttl=app.config["SITE_CACHE_SECONDS"])
    routes.watch()
    app.extensions["site_routes"] = routes
    app.wsgi_app = PublicFiles(app.wsgi_app, app.extensions["sitemap_store"], routes,
                               FileMemory(app.config["SERVE_MEMORY_MB"] << 20))
