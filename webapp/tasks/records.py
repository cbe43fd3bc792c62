"""What became of each piece of work a person or a program asked for: a row any web node
reads, written by the worker that runs it."""

from __future__ import annotations

import time
import uuid
from datetime import datetime, timedelta

from flask import Flask
from sqlalchemy import and_, delete, or_, select, update
from sqlalchemy.exc import OperationalError
from sqlalchemy.orm import Session

from webapp import leases
from webapp.db import new_session
from webapp.models import Site, Task, utcnow
from webapp.said import Line, english, said, said_plural

KEEP = timedelta(days=7)  # finished tasks are shown this long
# A running task whose worker has not written for this long stopped with its worker (on
# another machine; on the same one, a gone process is seen at once).
SILENT = timedelta(minutes=10)
UNTAKEN = timedelta(minutes=2)  # queued this long: the page asks whether a worker runs
QUICK_MS, BUSY_MS = 50, 30_000  # SQLite's wait for the write lock: progress, and as db.py sets


def create(session: Session, kind: str, site: Site, payload: bytes | None = None,
           arguments: dict | None = None) -> Task:
    """A queued task record in the caller's transaction: the work is enqueued once it commits.
    `arguments` (JSON) are the work's besides its ids, kept to start it again (retry)."""
    task = Task(id=uuid.uuid4().hex, kind=kind, site_id=site.id, site_label=site.slug,
                status="queued", done=0, message="", created_at=utcnow(), payload=payload,
                arguments=arguments)
    session.add(task)
    return task


class Progress:
    """Given to the work: (done, total) are written at most five times a second, with a
    heartbeat, in a session of their own so the work's transactions are not touched."""

    def __init__(self, app: Flask, task_id: str):
        self.app, self.task_id, self.written = app, task_id, 0.0
        self.values: dict = {}
        self.result: dict = {}  # figures for others to read once the task has finished

    def __call__(self, done: int, total: int | None = None) -> None:
        self.values.update(done=done, total=total)
        if time.monotonic() - self.written > 0.2:
            self.save()

    def save(self, **values) -> None:
        """Write what changed; with `values` (the outcome), wait as long as it takes."""
        self.values.update(values)
        final = bool(values)
        with new_session(self.app) as session:
            sqlite = session.get_bind().dialect.name == "sqlite"
            try:
                if sqlite and not final:
                    # SQLite has one writer at a time and the work may be it: a progress
                    # figure is not worth waiting for; it goes with the next one.
                    session.connection().exec_driver_sql(f"PRAGMA busy_timeout={QUICK_MS}")
                session.execute(update(Task).where(Task.id == self.task_id)
                                .values(heartbeat_at=utcnow(), **self.values))
                session.commit()
            except OperationalError:
                if final or not sqlite:
                    raise
                session.rollback()
                return
            finally:
                if sqlite and not final:
                    session.connection().exec_driver_sql(f"PRAGMA busy_timeout={BUSY_MS}")
        self.values = {}
        self.written = time.monotonic()


def begin(app: Flask, task_id: str) -> Progress | None:
    """Mark the task running (again, when a dead worker's task is given out anew); None when
    there is no such task or it has finished already (a second delivery of the message)."""
    owner, now = leases.new_owner(), utcnow()
    with new_session(app) as session:
        # A task given out again soon after its worker died runs again; one that comes back
        # hours later (Redis's visibility timeout) does not: its page has long said it failed,
        # and an old import run again would undo the edits made since.
        claimed = session.execute(
            update(Task).where(Task.id == task_id, or_(
                Task.status == "queued",
                and_(Task.status == "running", Task.heartbeat_at > now - SILENT)))
            .values(status="running", worker=owner, started_at=utcnow(), heartbeat_at=utcnow(),
                    done=0, total=None)).rowcount
        session.commit()
    return Progress(app, task_id) if claimed else None


def finish(progress: Progress, status: str, message: str | list[Line]) -> None:
    """Record the outcome: text, or lines (said.py) kept in English in `message` (the API's)
    and as they are for pages that say them in their reader's language. The upload, if any,
    is dropped with it: a finished task is never run again."""
    if isinstance(message, list):
        progress.result["said"] = message
        message = english(message)
    progress.save(status=status, message=message, finished_at=utcnow(),
                  result=progress.result or None, payload=None)


def cancel(app: Flask, task_id: str) -> None:
    """The task was cancelled (revoked) before it finished: it has finished, as failed, and
    its upload is dropped."""
    lines = [said("cancelled before it finished")]
    with new_session(app) as session:
        session.execute(update(Task).where(
            Task.id == task_id, Task.status.in_(("queued", "running"))).values(
            status="failed", finished_at=utcnow(), payload=None, message=english(lines),
            result={"said": lines}))
        session.commit()


def take_payload(app: Flask, task_id: str) -> bytes | None:
    with new_session(app) as session:
        return session.scalar(select(Task.payload).where(Task.id == task_id))


def stopped(task: Task, now: datetime) -> bool:
    if task.status != "running" or task.worker is None:
        return False
    return leases.gone(task.worker) or (task.heartbeat_at or task.created_at) + SILENT < now


def _runs_again(task: Task, now: datetime, redelivers: bool) -> bool:
    """Whether a stopped task may still run: only where the broker gives a dead worker's
    message out again at once (`redelivers`, engine.redelivers), and only while begin()
    would take it."""
    return redelivers and (task.heartbeat_at or task.created_at) + SILENT > now


def _kept_upload(session: Session, task_id: str) -> bool:
    return bool(session.scalar(select(Task.payload.is_not(None)).where(Task.id == task_id)))


def as_dict(task: Task, redelivers: bool = False, retriable: bool = False) -> dict:
    """A task as pages and the API show it; a task whose worker stopped is reported failed,
    saying whether it runs again (`redelivers`: see _runs_again). `said`: the message as
    lines for a page to say in its reader's language (said.py), when the work wrote it so.
    `retriable`: the task stopped for good and kept its upload, to be started again (retry)."""
    result = dict(task.result or {})
    state = {"id": task.id, "kind": task.kind, "site": task.site_label, "site_id": task.site_id,
             "status": task.status, "done": task.done, "total": task.total,
             "message": task.message, "said": result.pop("said", None), "result": result,
             "created_at": task.created_at, "started_at": task.started_at,
             "finished_at": task.finished_at, "retriable": retriable}
    now = utcnow()
    lines = None
    if stopped(task, now):
        state["status"] = "failed"
        if _runs_again(task, now, redelivers):
            lines = [said_plural(
                "the worker running it stopped; the task queue gives it to the next worker "
                "that asks, which runs it again if that is within %(num)s minute",
                "the worker running it stopped; the task queue gives it to the next worker "
                "that asks, which runs it again if that is within %(num)s minutes",
                int(SILENT.total_seconds() // 60))]
        else:
            lines = [said("the worker running it stopped, and the task queue does not give it "
                          "to another worker: it will not run again")]
    elif task.status == "queued" and task.created_at + UNTAKEN < now:
        lines = [said_plural("no worker has taken it for %(num)s minute: is a worker running "
                             "(`flask --app webapp worker`)?",
                             "no worker has taken it for %(num)s minutes: is a worker running "
                             "(`flask --app webapp worker`)?", int(UNTAKEN.total_seconds() // 60))]
    if lines:
        state.update(message=english(lines), said=lines)
    return state


def _retriable(session: Session, task: Task, now: datetime, redelivers: bool) -> bool:
    return (stopped(task, now) and not _runs_again(task, now, redelivers)
            and task.site_id is not None and task.arguments is not None
            and _kept_upload(session, task.id))


def read(session: Session, task_id: str, redelivers: bool = False) -> dict | None:
    """The task as as_dict shows it, or None when there is no such task."""
    if not (len(task_id) == 32 and all(c in "0123456789abcdef" for c in task_id)):
        return None
    task = session.get(Task, task_id)
    if task is None:
        return None
    return as_dict(task, redelivers, _retriable(session, task, utcnow(), redelivers))


def latest(session: Session, kind: str, site_id: int) -> dict | None:
    """The newest finished task of this kind for this site (for the site's health)."""
    task = session.scalar(select(Task).where(
        Task.kind == kind, Task.site_id == site_id, Task.status.in_(("done", "failed")))
        .order_by(Task.created_at.desc()).limit(1))
    return None if task is None else as_dict(task)


def hand_over(session: Session, task_id: str, redelivers: bool) -> tuple[Task, bytes] | None:
    """A task whose worker died and that will not run again, closed in the caller's
    transaction (failed, its upload dropped) with that upload, to start anew from; None
    when it is not such a task, or when it ran again or was retried meanwhile."""
    task = session.get(Task, task_id) if len(task_id) == 32 else None
    if task is None or not _retriable(session, task, utcnow(), redelivers):
        return None
    payload = session.scalar(select(Task.payload).where(Task.id == task_id))
    closed = session.execute(
        update(Task).where(Task.id == task_id, Task.status == "running",
                           Task.worker == task.worker, Task.payload.is_not(None))
        .values(status="failed", finished_at=utcnow(), payload=None)
        .execution_options(synchronize_session=False)).rowcount
    return (task, payload) if closed else None


def retried(session: Session, task: Task, new_id: str) -> None:
    """Say on a task handed over where it went on."""
    lines = [said("the worker running it stopped; it was started again as task %(task)s",
                  task=new_id)]
    session.execute(update(Task).where(Task.id == task.id).values(
        message=english(lines), result={**(task.result or {}), "said": lines})
        .execution_options(synchronize_session=False))


def prune(session: Session, now: datetime) -> int:
    """Forget tasks finished (or asked for) more than KEEP ago."""
    return session.execute(delete(Task).where(Task.created_at < now - KEEP)).rowcount
