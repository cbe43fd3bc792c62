"""Sitemap files: `build` writes XML, `publish` stores sets atomically, `generate` ties them to the database."""

from __future__ import annotations

from flask import Flask, current_app

from webapp.sitemaps.publish import SitemapStore
from webapp.sitemaps.routing import SiteRoutes


def init_app(app: Flask) -> None:
    app.extensions["sitemap_store"] = SitemapStore(app.config["SITEMAPS_DIR"])
    app.extensions["site_routes"] = SiteRoutes(app.extensions["db_sessionmaker"],
                                               ttl=app.config["SITE_CACHE_SECONDS"])


def get_store(app: Flask | None = None) -> SitemapStore:
    return (app or current_app).extensions["sitemap_store"]
