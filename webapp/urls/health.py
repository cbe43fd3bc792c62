"""What a site owner should hear about a site's URLs, found with a few aggregate queries."""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass

from sqlalchemy import exists, func, or_, select
from sqlalchemy.orm import Session

from webapp.models import Site, Url, utcnow
from webapp.urls import hreflang
from webapp.urls.exclusions import Rules


@dataclass(frozen=True)
class Warning:
    title: str
    detail: str
    action: str | None = None  # the dashboard endpoint of a button that fixes it
    action_label: str | None = None


def live_count(session: Session, site: Site) -> int:
    return session.scalar(select(func.count()).select_from(Url).where(
        Url.site_id == site.id, Url.deleted_at.is_(None))) or 0


NO_URLS = Warning("No URLs yet", "Add URLs or import a file: an empty site publishes no "
                  "sitemap.")


def _all_high() -> Warning:
    return Warning("Every URL has a high priority", "Priority is relative to your other pages: "
                   "when all are 0.8 or more, it tells crawlers nothing.")


def _future(count: int) -> Warning:
    return Warning(f"{count} URLs have a lastmod in the future", "Crawlers distrust lastmod "
                   "values that cannot be true; fix the dates at the source.")


def _shared(lastmod: str, count: int, total: int) -> Warning:
    return Warning(f"{count} of {total} URLs share the lastmod {lastmod}", "A lastmod that says "
                   "when the page content last changed helps crawlers; one date for everything "
                   "(a deploy date) does not.")


def _now() -> str:
    return utcnow().strftime("%Y-%m-%dT%H:%M:%S+00:00")


def warnings(session: Session, site: Site, total: int | None = None) -> list[Warning]:
    """The warnings for a site with `total` live URLs (counted when not given)."""
    live = (Url.site_id == site.id, Url.deleted_at.is_(None))
    total = live_count(session, site) if total is None else total
    found: list[Warning] = []
    if not total:
        return [NO_URLS]
    priority = func.coalesce(Url.priority, site.default_priority)
    # "All high" is "none below": the first URL below 0.8 (or without one) ends the search.
    below = select(Url.id).where(*live, or_(priority < 0.8, priority.is_(None))).limit(1)
    if total >= 10 and session.scalar(below) is None:
        found.append(_all_high())
    future = session.scalar(select(func.count()).select_from(Url).where(*live,
                                                                        Url.lastmod > _now()))
    if future:
        found.append(_future(future))
    shared = _majority_lastmod(session, live, total)
    if shared and total >= 10:
        found.append(_shared(*shared, total))
    unreturned = hreflang.unreturned(session, site)
    if unreturned.count:
        found.append(_unreturned(unreturned))
    return found


def _unreturned(unreturned: hreflang.Unreturned) -> Warning:
    return Warning(f"{unreturned.count} hreflang alternates do not list their page back",
                   "Search engines ignore an alternate that does not list the page back. "
                   f"{unreturned.describe()} Completing the clusters adds the missing links "
                   "wherever every page of a cluster is a URL of this site.",
                   "dashboard.urls_complete_hreflang", "Complete hreflang clusters")


def page_warnings(session: Session, sites: Sequence[Site]) -> dict[int, list[Warning]]:
    """`warnings` for each of these sites (a page of a list), in three queries for them all,
    with each site's kept live URL count (`Site.url_count`) as its total."""
    ids = [site.id for site in sites if site.url_count]
    high, future, shared = set(), {}, {}
    if ids:
        live = (Url.site_id == Site.id, Url.deleted_at.is_(None))
        priority = func.coalesce(Url.priority, Site.default_priority)
        below = exists().where(*live, or_(priority < 0.8, priority.is_(None)))
        high = set(session.scalars(select(Site.id).where(Site.id.in_(ids), Site.url_count >= 10,
                                                         ~below)))
        future = dict(session.execute(
            select(Url.site_id, func.count()).where(Url.site_id.in_(ids), Url.deleted_at.is_(None),
                                                    Url.lastmod > _now())
            .group_by(Url.site_id)).all())
        # A lastmod more than half the live URLs share; grouping reads the (site_id, lastmod,
        # id, deleted_at) index of these sites once.
        count = func.count()
        shared = {site_id: (lastmod, n) for site_id, lastmod, n in session.execute(
            select(Url.site_id, Url.lastmod, count).join(Site, Site.id == Url.site_id)
            .where(Url.site_id.in_(ids), Url.deleted_at.is_(None), Url.lastmod.is_not(None),
                   Site.url_count >= 10)
            .group_by(Url.site_id, Url.lastmod, Site.url_count)
            .having(count * 2 > Site.url_count))}
    found: dict[int, list[Warning]] = {}
    for site in sites:
        if not site.url_count:
            found[site.id] = [NO_URLS]
            continue
        found[site.id] = ([_all_high()] if site.id in high else []) + \
            ([_future(future[site.id])] if site.id in future else []) + \
            ([_shared(*shared[site.id], site.url_count)] if site.id in shared else [])
    return found


def _majority_lastmod(session: Session, live: tuple, total: int) -> tuple[str, int] | None:
    """The lastmod more than half of the `total` live URLs share, and how many share it.

    Sorted by lastmod, such a value fills a run longer than half the list, so it stands in the
    middle: read the middle row, then count its value. Both read only the (site_id, lastmod,
    id, deleted_at) index, where grouping by lastmod would look up every row of a large site.
    """
    middle = session.scalar(select(Url.lastmod).where(*live).order_by(Url.lastmod)
                            .offset(total // 2).limit(1))
    if middle is None:
        return None
    shared = session.scalar(select(func.count()).select_from(Url).where(
        *live, Url.lastmod == middle)) or 0
    return (middle, shared) if shared > total / 2 else None


# Stored URLs a page reads to count those the exclusion rules match: a few seconds at most.
EXCLUDED_SCAN = 100_000


def excluded_stored(session: Session, site: Site, rules: Rules | None = None,
                    scan: int | None = None) -> tuple[Counter[str], list[int]]:
    """Live URLs stored before the exclusion rules (the site's, or `rules` to try) refused
    them: how many by each rule, and their ids. The rules apply to URLs as they come in;
    these stay published until deleted. Reads the site's locs once (the first `scan` of
    them when given), a thousand at a time."""
    rules = Rules.of(site) if rules is None else rules
    counts: Counter[str] = Counter()
    ids: list[int] = []
    if not rules.exclude:
        return counts, ids
    query = select(Url.id, Url.loc).where(Url.site_id == site.id, Url.deleted_at.is_(None))
    if scan is not None:
        query = query.order_by(Url.id).limit(scan)
    rows = session.execute(query.execution_options(yield_per=1000))
    for url_id, loc in rows:
        rule = rules.excluding(loc)
        if rule is not None:
            counts[rule] += 1
            ids.append(url_id)
    return counts, ids
