"""What a site owner should hear about a site's URLs, found with a few aggregate queries."""

from __future__ import annotations

from dataclasses import dataclass

from sqlalchemy import func, or_, select
from sqlalchemy.orm import Session

from webapp.models import Site, Url, utcnow


@dataclass(frozen=True)
class Warning:
    title: str
    detail: str


def live_count(session: Session, site: Site) -> int:
    return session.scalar(select(func.count()).select_from(Url).where(
        Url.site_id == site.id, Url.deleted_at.is_(None))) or 0


def warnings(session: Session, site: Site, total: int | None = None) -> list[Warning]:
    """The warnings for a site with `total` live URLs (counted when not given)."""
    live = (Url.site_id == site.id, Url.deleted_at.is_(None))
    total = live_count(session, site) if total is None else total
    found: list[Warning] = []
    if not total:
        return [Warning("No URLs yet", "Add URLs or import a file: an empty site publishes no "
                        "sitemap.")]
    priority = func.coalesce(Url.priority, site.default_priority)
    # "All high" is "none below": the first URL below 0.8 (or without one) ends the search.
    below = select(Url.id).where(*live, or_(priority < 0.8, priority.is_(None))).limit(1)
    if total >= 10 and session.scalar(below) is None:
        found.append(Warning("Every URL has a high priority", "Priority is relative to your "
                             "other pages: when all are 0.8 or more, it tells crawlers nothing."))
    now = utcnow().strftime("%Y-%m-%dT%H:%M:%S+00:00")
    future = session.scalar(select(func.count()).select_from(Url).where(*live, Url.lastmod > now))
    if future:
        found.append(Warning(f"{future} URLs have a lastmod in the future", "Crawlers distrust "
                             "lastmod values that cannot be true; fix the dates at the source."))
    shared = _majority_lastmod(session, live, total)
    if shared and total >= 10:
        found.append(Warning(f"{shared[1]} of {total} URLs share the lastmod {shared[0]}",
                             "A lastmod that says when the page content last changed helps "
                             "crawlers; one date for everything (a deploy date) does not."))
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
