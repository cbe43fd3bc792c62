"""Verification of a site's URLs on the live site, and what it changes in the sitemap.

`check` checks one URL (with `page` reading what came back and `robots` saying what may be
fetched), `runs` checks a whole site and stores the findings (resumable), `publishing` is
what generation asks (which URLs to leave out, which lastmod to write), `health` what the
dashboard shows, and `settings` the site settings' rules. (When verifications are due is
the clock's to decide: webapp.scheduler.clock.)
"""

from __future__ import annotations

from webapp import front_door

# Each name others may use, and its module: loaded on first use (PEP 562), so that generation,
# which asks `publishing`, loads neither the crawler nor lxml.
_HOMES = {"Summary": "runs", "VerifyBusy": "runs", "verify_site": "runs"}

__getattr__ = front_door(__name__, _HOMES)

__all__ = ["Summary", "VerifyBusy", "verify_site"]
