"""The clock of the scheduler process: one job list with explicit ids, started only by
`flask --app webapp scheduler run`, never inside web workers or the reloader.

Schedules live in the database, not in the scheduler: each tick reads which sites are due, so
a changed schedule takes effect at the next tick and a deleted site simply stops being found.
Every run takes the site's lease and every delivery is claimed, so two scheduler processes
on one database (a standby, or a mistake) never do the same work twice.
"""

from __future__ import annotations

import functools
import logging
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta

from apscheduler.schedulers.base import BaseScheduler
from apscheduler.triggers.interval import IntervalTrigger
from flask import Flask
from sqlalchemy import or_, select
from sqlalchemy.exc import InterfaceError, OperationalError
from sqlalchemy.orm import Session

from webapp import jobs, leases, notify
from webapp.db import new_session
from webapp.leases import SiteBusy
from webapp.models import Generation, Site, utcnow
from webapp.scheduler.schedules import next_run

log = logging.getLogger(__name__)


def max_wait(site: Site) -> timedelta:
    """The longest that changes wait while edits keep coming: ten delays, at least a minute."""
    return timedelta(seconds=max(10 * site.change_delay, 60))


def _due(site: Site, now: datetime) -> tuple[bool, bool]:
    """(its schedule is due, URL changes are ready: quiet for change_delay since the last one,
    or waiting for max_wait since the first; not while a failed run's retry time is ahead)."""
    scheduled = site.schedule != "off" and (site.next_run_at is None or site.next_run_at <= now)
    quiet = site.changed_at is None or site.changed_at + timedelta(seconds=site.change_delay) <= now
    overdue = site.pending_since is not None and site.pending_since + max_wait(site) <= now
    changed = site.change_seq > site.generated_seq and (quiet or overdue) and (
        site.retry_at is None or site.retry_at <= now)
    return scheduled, changed


def run_due_sites(app: Flask, now: datetime | None = None) -> list[Generation]:
    """Generate every site that is due, then plan its announcements; the runs made.

    After downtime a site whose schedule was missed many times runs once (coalesced), and its
    next run is counted from now.
    """
    now = now or utcnow()
    with new_session(app) as session:
        candidates = session.scalars(select(Site).where(or_(
            Site.schedule != "off", Site.change_seq > Site.generated_seq)).order_by(Site.id)).all()
        due_ids = [site.id for site in candidates if any(_due(site, now))]

    def still_due(session: Session, site: Site) -> bool:
        scheduled, changed = _due(site, now)  # read again under the lease
        if scheduled:
            site.next_run_at = next_run(site.schedule, site.timezone, now)
            session.commit()
        return scheduled or changed

    generations = []
    for site_id in due_ids:
        try:
            generation = jobs.regenerate(site_id, app, when=still_due)
        except SiteBusy:
            continue  # another process is on it
        except Exception:
            log.exception("scheduled run of site %s could not start", site_id)
            continue
        if generation is None:
            continue
        generations.append(generation)
        if generation.status in ("succeeded", "unchanged"):
            try:
                notify.announce(site_id, app)
            except Exception:  # planned again after the next generation; other sites go on
                log.exception("announcements of site %s could not be planned", site_id)
    return generations


def deliver_due(app: Flask) -> None:
    notify.deliver(app)


def _database_may_fail(job: Callable[[Flask], object]) -> Callable[[Flask], None]:
    """While the database is unreachable, each tick says so in one line and the next tick
    tries again: the process keeps running and recovers by itself."""

    @functools.wraps(job)
    def tick(app: Flask) -> None:
        try:
            job(app)
        except (OperationalError, InterfaceError) as exc:
            reason = str(getattr(exc, "orig", exc)).strip().splitlines()[0]
            log.warning("%s: the database is unreachable (%s); trying again at the next tick",
                        job.__name__, reason)

    return tick


def add_jobs(scheduler: BaseScheduler, app: Flask) -> None:
    """The one job list. A tick that is still running when the next is due is not doubled."""
    tick = IntervalTrigger(seconds=app.config["SCHEDULER_TICK_SECONDS"], timezone=UTC)
    options = {"coalesce": True, "max_instances": 1, "misfire_grace_time": None,
               "replace_existing": True, "next_run_time": datetime.now(UTC)}  # first tick at once
    scheduler.add_job(_database_may_fail(run_due_sites), tick, args=[app],
                      id="regenerate-due-sites", **options)
    scheduler.add_job(_database_may_fail(deliver_due), tick, args=[app],
                      id="deliver-due-announcements", **options)


@dataclass(frozen=True)
class SiteStatus:
    slug: str
    schedule: str
    timezone: str
    next_run_at: datetime | None
    pending_changes: bool
    running: str | None
    last: Generation | None


def status(session: Session) -> list[SiteStatus]:
    """Each site's schedule, next run, whether changes wait, who runs it now, its last run."""
    found = []
    now = utcnow()
    for site in session.scalars(select(Site).order_by(Site.id)):
        running = site.run_owner if site.run_owner and site.run_lease_until \
            and site.run_lease_until > now and not leases.gone(site.run_owner) else None
        last = session.scalar(select(Generation).where(Generation.site_id == site.id)
                              .order_by(Generation.id.desc()).limit(1))
        found.append(SiteStatus(site.slug, site.schedule, site.timezone, site.next_run_at,
                                site.change_seq > site.generated_seq, running, last))
    return found
