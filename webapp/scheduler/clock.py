"""The clock of the scheduler process: one job list with explicit ids, started only by
`flask --app webapp scheduler run`, never inside web workers or the reloader.

The clock decides and enqueues; Celery workers do the work. Schedules live in the database,
not in the scheduler: each tick reads which sites are due, so a changed schedule takes effect
at the next tick and a deleted site simply stops being found. A site gets one queued run at
a time, every run takes the site's lease and every delivery is claimed, so two scheduler
processes on one database (a standby, or a mistake) never do the same work twice.
"""

from __future__ import annotations

import functools
import logging
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime

from apscheduler.schedulers.base import BaseScheduler
from apscheduler.triggers.interval import IntervalTrigger
from flask import Flask
from sqlalchemy import select, update
from sqlalchemy.exc import InterfaceError, OperationalError
from sqlalchemy.orm import Session

from webapp import jobs, leases, notify, tasks
from webapp.db import new_session
from webapp.models import Generation, Site, utcnow
from webapp.schedules import next_run

log = logging.getLogger(__name__)


def run_due_sites(app: Flask, now: datetime | None = None) -> list[Generation]:
    """Generate, here and now, every site that is due, then plan its announcements; the runs
    made (`scheduler run --once`). After downtime a site whose schedule was missed many times
    runs once (coalesced), and its next run is counted from now."""
    now = now or utcnow()
    generations = []
    for site_id in _due_ids(app, now):
        try:
            generation = jobs.regenerate_if_due(site_id, app, now)
        except Exception:
            log.exception("scheduled run of site %s could not start", site_id)
            continue
        if generation is not None:
            generations.append(generation)
    return generations


def _due_ids(app: Flask, now: datetime) -> list[int]:
    with new_session(app) as session:
        return jobs.due_site_ids(session, now)


def enqueue_due_sites(app: Flask, now: datetime | None = None) -> list[int]:
    """The tick: queue a run of every site that is due and has none queued; the ids queued."""
    queued = tasks.queue_due(app, now or utcnow())
    if queued:
        log.info("queued %d due sites", len(queued))
    return queued


def enqueue_due_verifications(app: Flask, now: datetime | None = None) -> list[int]:
    """The tick: record and queue a verification of every site whose verify_schedule is due;
    the ids. Each site is claimed by moving its next time on with a conditional UPDATE, so two
    clocks never both queue one."""
    now = now or utcnow()
    queued = []
    with new_session(app) as session:
        due = session.scalars(select(Site).where(
            Site.verify_schedule != "off", Site.verify_next_run_at <= now)).all()
        for site in due:
            following = next_run(site.verify_schedule, site.timezone, now)
            won = session.execute(update(Site).where(
                Site.id == site.id, Site.verify_next_run_at == site.verify_next_run_at)
                .values(verify_next_run_at=following)
                .execution_options(synchronize_session=False)).rowcount
            if won:
                tasks.start(session, app, "verify", site)
                queued.append(site.id)
        session.commit()
    if queued:
        log.info("queued verification of %d sites", len(queued))
    return queued


def deliver_due(app: Flask) -> None:
    """Deliver due announcements here and now (`scheduler run --once`)."""
    notify.deliver(app)


def enqueue_delivery(app: Flask) -> None:
    """The tick: when any announcement is due, queue a delivery; forget old task records."""
    now = utcnow()
    with new_session(app) as session:
        due = notify.due(session, now, notify.delivery_lease(app.config), limit=1)
        tasks.prune(session, now)
        session.commit()
    if due:
        tasks.enqueue(app, "deliver")


def _database_may_fail(job: Callable[[Flask], object]) -> Callable[[Flask], None]:
    """While the database or the task queue is unreachable, each tick says so in one line and
    the next tick tries again: the process keeps running and recovers by itself."""

    @functools.wraps(job)
    def tick(app: Flask) -> None:
        try:
            job(app)
        except (OperationalError, InterfaceError) as exc:
            reason = str(getattr(exc, "orig", exc)).strip().splitlines()[0]
            log.warning("%s: the database is unreachable (%s); trying again at the next tick",
                        job.__name__, reason)
        except tasks.QueueUnavailable as exc:
            log.warning("%s: %s; trying again at the next tick", job.__name__, exc)

    return tick


def add_jobs(scheduler: BaseScheduler, app: Flask) -> None:
    """The one job list. A tick that is still running when the next is due is not doubled."""
    tick = IntervalTrigger(seconds=app.config["SCHEDULER_TICK_SECONDS"], timezone=UTC)
    options = {"coalesce": True, "max_instances": 1, "misfire_grace_time": None,
               "replace_existing": True, "next_run_time": datetime.now(UTC)}  # first tick at once
    scheduler.add_job(_database_may_fail(enqueue_due_sites), tick, args=[app],
                      id="queue-due-sites", **options)
    scheduler.add_job(_database_may_fail(enqueue_delivery), tick, args=[app],
                      id="queue-due-announcements", **options)
    scheduler.add_job(_database_may_fail(enqueue_due_verifications), tick, args=[app],
                      id="queue-due-verifications", **options)


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
