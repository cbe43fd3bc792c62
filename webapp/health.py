"""What a site owner should hear about a site's URLs, found with a few aggregate queries."""

from __future__ import annotations

from dataclasses import dataclass

from sqlalchemy import func, select
from sqlalchemy.orm import Session

from webapp.models import Site, Url, utcnow


@dataclass(frozen=True)
class Warning:
    title: str
    detail: str


def warnings(session: Session, site: Site) -> list[Warning]:
    live = (Url.site_id == site.id, Url.deleted_at.is_(None))
    total = session.scalar(select(func.count()).select_from(Url).where(*live)) or 0
    found: list[Warning] = []
    if not total:
        return [Warning("No URLs yet", "Add URLs or import a file: an empty site publishes no "
                        "sitemap.")]
    priority = func.coalesce(Url.priority, site.default_priority)
    high = session.scalar(select(func.count()).select_from(Url).where(*live, priority >= 0.8))
    if total >= 10 and high == total:
        found.append(Warning("Every URL has a high priority", "Priority is relative to your "
                             "other pages: when all are 0.8 or more, it tells crawlers nothing."))
    now = utcnow().strftime("%Y-%m-%dT%H:%M:%S+00:00")
    future = session.scalar(select(func.count()).select_from(Url).where(*live, Url.lastmod > now))
    if future:
        found.append(Warning(f"{future} URLs have a lastmod in the future", "Crawlers distrust "
                             "lastmod values that cannot be true; fix the dates at the source."))
    common = session.execute(select(Url.lastmod, func.count()).where(
        *live, Url.lastmod.is_not(None)).group_by(Url.lastmod)
        .order_by(func.count().desc()).limit(1)).first()
    if common and total >= 10 and common[1] > total / 2:
        found.append(Warning(f"{common[1]} of {total} URLs share the lastmod {common[0]}",
                             "A lastmod that says when the page content last changed helps "
                             "crawlers; one date for everything (a deploy date) does not."))
    return found
