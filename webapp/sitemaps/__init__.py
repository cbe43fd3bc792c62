"""Sitemap files, from the database to the published set: `rows` streams a site's URLs, `build`
writes XML, `generate` ties a run together (`incremental` when the last set can be reused,
`sections` and `sectioned` when the site is split into sections),
`publish` stores sets in the database (shared by every node; `housekeeping` removes,
prunes and exports them), `news` writes a news
publisher's news files, `small_sites` writes and
publishes many small sites at once, `cache` keeps their bodies on this node, `history`
compares two of them. Others use the names below.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from flask import Flask, current_app

from webapp import front_door
from webapp.db import new_session

if TYPE_CHECKING:
    from webapp.sitemaps.publish import SitemapStore

# Each name others may use, and its module: loaded on first use (PEP 562).
_HOMES = {
    "STYLESHEET": "build", "Limits": "build", "SitemapLimitError": "build",
    "replace_file": "build",
    "Published": "generate", "generate_site": "generate", "republish_site": "generate",
    "diff": "history",
    "news_sitemap_names": "news", "news_stem": "news",
    "MissingBody": "publish", "PublishedFile": "publish", "PublishedSet": "publish",
    "SitemapStore": "publish", "published_forward": "publish",
    "assign_sections": "sectioned",
    "is_small": "small_sites", "record_small_sets": "small_sites",
    "write_small_sites": "small_sites",
}

__getattr__ = front_door(__name__, _HOMES)

__all__ = ["get_store", "init_app", *_HOMES]


def init_app(app: Flask) -> None:
    from webapp.sitemaps.publish import SitemapStore

    app.extensions["sitemap_store"] = SitemapStore(
        app.config["SITEMAPS_DIR"], lambda: new_session(app),
        ttl=app.config["PUBLISHED_TTL_SECONDS"])


def get_store(app: Flask | None = None) -> SitemapStore:
    return (app or current_app).extensions["sitemap_store"]
