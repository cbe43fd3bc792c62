"""Handing work to the workers: enqueue a task by name, record-and-enqueue what a person asked
for, and the one queued regeneration per site that a burst of changes shares."""

from __future__ import annotations

import logging
from datetime import datetime, timedelta

from flask import Flask
from kombu.exceptions import OperationalError as BrokerError
from sqlalchemy import or_, select, update
from sqlalchemy.exc import DatabaseError
from sqlalchemy.orm import Session

from webapp import jobs
from webapp.db import after_commit, new_session
from webapp.models import Site, Task, utcnow
from webapp.tasks import records
from webapp.tasks.engine import celery_of

log = logging.getLogger(__name__)

# A regeneration queued this long ago (past its countdown) and never started was lost with
# its message (a broker that keeps nothing, a purged queue): the clock queues it again.
QUEUED_GRACE = timedelta(minutes=5)
# Due sites per message from the clock: small enough that workers share a burst of due sites,
# large enough that a tick over thousands of sites sends a hundred messages, and that the
# small ones among them share the fixed cost of a batch (sitemaps.small_sites) among many.
BATCH = 100
SQLITE_BUSY_SNAPSHOT = 517  # a write over a read snapshot that another connection has outdated
# Publishing gives up after this many tries, so a request does not hang on a broker that is down.
PUBLISH_RETRY = {"max_retries": 1, "interval_start": 0, "interval_step": 0.5,
                 "interval_max": 1}


class QueueUnavailable(Exception):
    """The broker did not take the task."""


def enqueue(app: Flask, name: str, *args, countdown: float | None = None, **kwargs) -> bool:
    """Put task `name` on the queue; False when it is left to the clock instead: a task
    with a countdown (even 0) where tasks run eagerly, as in most tests, which cannot wait
    and would otherwise run inside the commit that asked."""
    celery = celery_of(app)
    if celery.conf.task_always_eager and countdown is not None:
        return False
    try:
        celery.tasks[f"webapp.{name}"].apply_async(
            args, kwargs, countdown=countdown, retry=True,
            retry_policy=PUBLISH_RETRY)
    except BrokerError as exc:
        raise QueueUnavailable(f"the task queue is unreachable ({exc})") from exc
    return True


def start(session: Session, app: Flask, kind: str, site: Site, name: str,
          payload: bytes | None = None, **arguments) -> str:
    """Record a task asked for by a person or a program, in the caller's transaction; it is
    enqueued once that commits. The task's id, to follow it by."""
    record = records.create(session, kind, site, payload, arguments)
    task_id, site_id = record.id, site.id

    def hand_over() -> None:
        try:
            enqueue(app, name, task_id, site_id, **arguments)
        except QueueUnavailable as exc:
            log.error("task %s (%s) could not be queued: %s", task_id, kind, exc)
            with new_session(app) as failed:
                failed.execute(update(Task).where(Task.id == task_id).values(
                    status="failed", finished_at=utcnow(),
                    message=f"{exc}; nothing was done, try again in a moment"))
                failed.commit()

    after_commit(session, hand_over)
    return task_id


def mark(session: Session, site_ids: list[int], until: datetime, now: datetime) -> list[int]:
    """Of `site_ids`, those with no regeneration in the queue now, marked as having one due
    at `until`; committed. Two processes marking at once never both win a site."""
    won: list[int] = []
    for start_at in range(0, len(site_ids), 500):
        chunk = site_ids[start_at:start_at + 500]
        won += session.scalars(
            update(Site).where(Site.id.in_(chunk), or_(
                Site.run_queued_until.is_(None), Site.run_queued_until < now - QUEUED_GRACE))
            .values(run_queued_until=until).returning(Site.id)
            .execution_options(synchronize_session=False)).all()
    session.commit()
    return won


def unmark(app: Flask, site_ids: int | list[int]) -> None:
    """The sites' queued regeneration has started: a change from now on queues another."""
    ids = [site_ids] if isinstance(site_ids, int) else site_ids
    unmarked = update(Site).where(Site.id.in_(ids)).values(run_queued_until=None)
    with new_session(app) as session:
        connection = session.connection()
        try:
            session.execute(unmarked)
            session.commit()
        except DatabaseError as exc:
            if getattr(exc.orig, "sqlite_errorcode", None) != SQLITE_BUSY_SNAPSHOT:
                raise
            # The pooled connection still reads an old snapshot: a query of earlier work not
            # read to its end (Python 3.11's sqlite3 keeps it open across the pool's rollback).
            # SQLite refuses at once a write over a snapshot another process has written
            # since, without waiting (busy_timeout; BEGIN IMMEDIATE neither): only a new
            # snapshot helps. This write is the first of a regenerate_due task: it is made on
            # a fresh connection, and the stale one is closed (which ends its read).
            connection.invalidate()
            session.rollback()
            session.execute(unmarked)
            session.commit()


def _queue_run(app: Flask, site_id: int, countdown: float, now: datetime) -> None:
    with new_session(app) as session:
        won = mark(session, [site_id], now + timedelta(seconds=countdown), now)
    if won:
        try:
            queued = enqueue(app, "regenerate_due", [site_id], countdown=countdown)
        except QueueUnavailable as exc:
            queued = False
            log.warning("site %s: regeneration not queued (%s); the clock will", site_id, exc)
        if not queued:
            unmark(app, site_id)  # the clock's next tick finds it due


def soon(app: Flask, site_id: int) -> None:
    """URLs of the site changed: queue its regeneration for when the changes are ready
    (`change_delay` after the last), unless one is queued already (one run per burst)."""
    with new_session(app) as session:
        site = session.get(Site, site_id)
        if site is None:
            return
        ready = jobs.changes_ready_at(site)
    if ready is not None:
        now = utcnow()
        _queue_run(app, site_id, max((ready - now).total_seconds(), 0), now)


def again_when_ready(app: Flask, site_ids: list[int]) -> None:
    """After runs: changes that still wait get a run queued for when they are ready. Those
    that became ready since the run looked too: the message their commit queued was this
    one. A site whose commit queued a run meanwhile keeps that one (mark), and a site another
    process is generating is left to it (it asks the same when it is done): queueing it now
    would only find it busy again, at once, for as long as that run lasts."""
    now = utcnow()
    with new_session(app) as session:
        ready = {site.id: (jobs.changes_ready_at(site), site.run_owner is not None
                           and site.run_lease_until is not None and site.run_lease_until > now)
                 for site in session.scalars(select(Site).where(
                     Site.id.in_(site_ids), Site.change_seq > Site.generated_seq))}
    for site_id, (when, leased) in ready.items():
        if when is not None and not (leased and when <= now):
            _queue_run(app, site_id, max((when - now).total_seconds(), 0), now)


def queue_due(app: Flask, now: datetime) -> list[int]:
    """The clock's part: queue a regeneration of every site that is due and has none queued;
    the ids queued."""
    with new_session(app) as session:
        due = jobs.due_site_ids(session, now, or_(
            Site.run_queued_until.is_(None), Site.run_queued_until < now - QUEUED_GRACE))
        won = mark(session, due, now, now)
    queued: list[int] = []
    batches = [won[i:i + BATCH] for i in range(0, len(won), BATCH)]
    with celery_of(app).producer_or_acquire() as producer:
        for batch in batches:
            try:
                celery_of(app).tasks["webapp.regenerate_due"].apply_async(
                    (batch,), producer=producer, retry=True, retry_policy=PUBLISH_RETRY)
            except BrokerError as exc:
                log.warning("the task queue is unreachable (%s); %d sites wait for the next "
                            "tick", exc, len(won) - len(queued))
                with new_session(app) as session:
                    session.execute(update(Site).where(Site.id.in_(won[len(queued):]))
                                    .values(run_queued_until=None))
                    session.commit()
                break
            queued += batch
    return queued
