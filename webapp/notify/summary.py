"""What a site's search engines have heard, engine by engine (each ping address on its own):
the newest submission and how it went, how many URLs reached the engine, the next retry; and
the URLs submitted to IndexNow, one row per URL. Read from the ledger."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

from sqlalchemy import case, func, select
from sqlalchemy.orm import Session

from webapp.models import Delivery, Generation, Site
from webapp.notify import gsc, indexnow, ping

RECEIVED = ("delivered", "accepted")


@dataclass
class EngineReport:
    engine: str  # indexnow, gsc or ping
    name: str  # as people read it
    target: str | None  # a ping address
    configured: bool  # set up in the site's settings now
    last: Delivery | None = None  # the newest record
    last_submitted: datetime | None = None  # the newest attempt
    urls_submitted: int = 0  # URLs the engine received (for sitemaps: in the last one received)
    next_retry: datetime | None = None  # the earliest next attempt of a record that waits
    waiting: int = 0
    failed: int = 0


def engines(session: Session, site: Site) -> list[EngineReport]:
    """One report per engine set up for the site or with records in its ledger."""
    reports: dict[tuple[str, str | None], EngineReport] = {}
    if indexnow.enabled(site):
        reports["indexnow", None] = EngineReport("indexnow", indexnow.NAME, None, True)
    if site.gsc_property:
        reports["gsc", None] = EngineReport("gsc", gsc.NAME, None, True)
    for target in ping.targets(site):
        reports["ping", target] = EngineReport("ping", ping.NAME, target, True)
    target = case((Delivery.engine == "ping", Delivery.target), else_=None).label("group_target")
    rows = session.execute(select(
        Delivery.engine, target, func.max(Delivery.id), func.max(Delivery.last_attempt_at),
        func.sum(case((Delivery.status.in_(RECEIVED), Delivery.url_count), else_=0)),
        func.min(case((Delivery.status == "pending", Delivery.next_attempt_at), else_=None)),
        func.sum(case((Delivery.status.in_(("pending", "sending")), 1), else_=0)),
        func.sum(case((Delivery.status == "failed", 1), else_=0)),
    ).where(Delivery.site_id == site.id).group_by(Delivery.engine, target)).all()
    newest = {row[2] for row in rows}
    records = {d.id: d for d in session.scalars(select(Delivery).where(Delivery.id.in_(newest)))}
    for engine, group, last_id, attempted, urls, retry, waiting, failed in rows:
        report = reports.get((engine, group))
        if report is None:
            name = {"indexnow": indexnow.NAME, "gsc": gsc.NAME}.get(engine, ping.NAME)
            report = reports[engine, group] = EngineReport(engine, name, group, False)
        report.last, report.last_submitted = records.get(last_id), attempted
        report.urls_submitted, report.next_retry = int(urls or 0), retry
        report.waiting, report.failed = int(waiting or 0), int(failed or 0)
        if engine != "indexnow":
            report.urls_submitted = _sitemap_urls(session, site, engine, group)
    return sorted(reports.values(), key=lambda r: (("indexnow", "gsc", "ping").index(r.engine),
                                                   r.target or ""))


def _sitemap_urls(session: Session, site: Site, engine: str, target: str | None) -> int:
    """URLs in the sitemap the engine last received: its generation's count."""
    query = select(Generation.url_count).join(
        Delivery, Delivery.generation_id == Generation.id).where(
        Delivery.site_id == site.id, Delivery.engine == engine,
        Delivery.status.in_(RECEIVED)).order_by(Delivery.id.desc()).limit(1)
    if target is not None:
        query = query.where(Delivery.target == target)
    return session.scalar(query) or 0


@dataclass(frozen=True)
class Submission:
    loc: str
    delivery: Delivery


def indexnow_urls(session: Session, site: Site, limit: int = 200) -> tuple[list[Submission], bool]:
    """The newest IndexNow submissions, one per URL and record (newest first), at most
    `limit`; and whether there are more."""
    found: list[Submission] = []
    query = select(Delivery).where(Delivery.site_id == site.id, Delivery.engine == "indexnow",
                                   Delivery.urls.is_not(None)).order_by(Delivery.id.desc())
    for delivery in session.scalars(query.limit(limit)):
        for loc in delivery.urls.split("\n"):
            if len(found) == limit:
                return found, True
            found.append(Submission(loc, delivery))
    return found, False


def submitted_in(delivery: Delivery, loc: str) -> bool:
    """Whether `loc` is one of the URLs of an IndexNow record."""
    return delivery.engine == "indexnow" and loc in (delivery.urls or "").split("\n")
