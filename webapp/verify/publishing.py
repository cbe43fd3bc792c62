"""What verification changes in a published sitemap: URLs whose last check falls in the
site's `leave_out` are left out (and counted), and each lastmod comes from `lastmod_source`.
Generation (webapp.sitemaps) asks here; nothing here writes files."""

from __future__ import annotations

from collections.abc import Callable, Collection
from datetime import datetime

from sqlalchemy import ColumnElement, func, or_, select, true
from sqlalchemy.orm import Session

from webapp.models import Site, Url, UrlCheck
from webapp.protocol import normalize_lastmod
from webapp.verify.settings import left_out

LastmodOf = Callable[[str | None, datetime | None], str | None]


def kept(site: Site) -> ColumnElement[bool]:
    """The condition a live URL (outer-joined with its check) meets to be published."""
    outcomes = left_out(site.leave_out)
    if not outcomes:
        return true()
    return or_(UrlCheck.outcome.is_(None), UrlCheck.outcome.not_in(outcomes))


def left_out_of(site: Site) -> frozenset[str]:
    """The outcomes that keep a URL out of the site's files."""
    return frozenset(left_out(site.leave_out))


def lastmod_of(source: str) -> LastmodOf:
    """(given lastmod, content changed at) -> the lastmod to publish. `content` and `newest`
    fall back on the given date for a URL verification has not dated yet."""
    if source == "content":
        return lambda given, changed: normalize_lastmod(changed) if changed else given
    if source == "newest":
        def newest(given: str | None, changed: datetime | None) -> str | None:
            content = normalize_lastmod(changed) if changed else None
            # One format for both (YYYY-MM-DD sorts before that day's times): text order is
            # time order.
            return max(filter(None, (given, content)), default=None)
        return newest
    return lambda given, changed: given


def left_out_counts(session: Session, site_ids: Collection[int],
                    sites: dict[int, Site]) -> dict[int, dict[str, int]]:
    """Per site, its live URLs that its `leave_out` keeps out of the files, by outcome."""
    wanted = [site_id for site_id in site_ids if left_out(sites[site_id].leave_out)]
    found: dict[int, dict[str, int]] = {}
    if not wanted:
        return found
    rows = session.execute(
        select(UrlCheck.site_id, UrlCheck.outcome, func.count())
        .join(Url, Url.id == UrlCheck.url_id)
        .where(UrlCheck.site_id.in_(wanted), Url.deleted_at.is_(None))
        .group_by(UrlCheck.site_id, UrlCheck.outcome))
    for site_id, outcome, count in rows:
        if outcome in left_out(sites[site_id].leave_out):
            found.setdefault(site_id, {})[outcome] = count
    return found


def describe(counts: dict[str, int] | None) -> str:
    """`left out: 3 broken, 1 noindex`, or empty."""
    if not counts:
        return ""
    return "left out: " + describe_counts(counts)


def describe_counts(counts: dict[str, int]) -> str:
    """`3 broken, 1 noindex`."""
    return ", ".join(f"{count} {outcome}" for outcome, count in sorted(counts.items()))


def counts_as_change(site: Site, changed: Collection[str]) -> bool:
    """Whether writing these fields of a URL changes what is published: with lastmod taken
    from the content, a new given lastmod alone changes nothing (a CMS that touches every
    date each night makes no file change and announces nothing)."""
    return site.lastmod_source != "content" or bool(set(changed) - {"lastmod"})
