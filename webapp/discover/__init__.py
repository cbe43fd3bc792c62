"""Discovering a site's URLs from the live site: a crawl within its scope and robots.txt
(`crawl`, reading pages with `pages` and robots.txt with `robots`), and the review list it
leaves, to accept or ignore (`review`). Others use the names below."""

from __future__ import annotations

from webapp import front_door

# Each name others may use, and its module: loaded on first use (PEP 562).
_HOMES = {"CrawlReport": "crawl", "Limits": "crawl", "check_limits": "crawl", "crawl": "crawl",
          "accept": "review", "counts": "review", "ignore": "review", "rows": "review"}

__getattr__ = front_door(__name__, _HOMES)

__all__ = ["CrawlReport", "Limits", "accept", "check_limits", "counts", "crawl", "ignore",
           "rows"]
