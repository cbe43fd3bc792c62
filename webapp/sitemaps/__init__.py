"""Sitemap files, from the database to the published set: `rows` streams a site's URLs, `build`
writes XML, `generate` ties a run together (`incremental` when the last set can be reused,
`sections` and `sectioned` when the site is split into sections),
`publish` stores sets in the database (shared by every node), `news` writes a news
publisher's news files, `small_sites` writes and
publishes many small sites at once, `cache` keeps their bodies on this node, `history`
compares two of them. Others use the names below.
"""

from __future__ import annotations

from flask import Flask, current_app

from webapp.db import new_session
from webapp.sitemaps.build import STYLESHEET, Limits, SitemapLimitError, replace_file
from webapp.sitemaps.generate import Published, generate_site, republish_site
from webapp.sitemaps.history import diff
from webapp.sitemaps.news import news_sitemap_names, news_stem
from webapp.sitemaps.publish import (
    MissingBody,
    PublishedFile,
    PublishedSet,
    SitemapStore,
    published_forward,
)
from webapp.sitemaps.sectioned import assign as assign_sections
from webapp.sitemaps.small_sites import is_small, record_small_sets, write_small_sites

__all__ = ["STYLESHEET", "Limits", "MissingBody", "Published", "PublishedFile", "PublishedSet",
           "SitemapLimitError", "SitemapStore", "assign_sections", "diff", "generate_site",
           "get_store", "init_app", "is_small", "news_sitemap_names", "news_stem",
           "published_forward",
           "record_small_sets", "replace_file", "republish_site", "write_small_sites"]


def init_app(app: Flask) -> None:
    app.extensions["sitemap_store"] = SitemapStore(
        app.config["SITEMAPS_DIR"], lambda: new_session(app),
        ttl=app.config["PUBLISHED_TTL_SECONDS"])


def get_store(app: Flask | None = None) -> SitemapStore:
    return (app or current_app).extensions["sitemap_store"]
