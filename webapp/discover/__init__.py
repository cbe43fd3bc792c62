"""Discovering a site's URLs from the live site: a crawl within its scope and robots.txt
(`crawl`, reading pages with `pages` and robots.txt with `robots`), and the review list it
leaves, to accept or ignore (`review`). Others use the names below."""

from __future__ import annotations

from webapp.discover.crawl import CrawlReport, Limits, check_limits, crawl
from webapp.discover.review import accept, counts, ignore, rows

__all__ = ["CrawlReport", "Limits", "accept", "check_limits", "counts", "crawl", "ignore",
           "rows"]
