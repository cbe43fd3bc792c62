"""Work people ask for: start it, read what became of it, retry it when its worker died."""

from __future__ import annotations

from flask import Flask, current_app

from webapp.models import Site
from webapp.tasks import engine, queue, records, work


def start(session, app: Flask, kind: str, site, payload: bytes | None = None,
          **arguments) -> str:
    """Record work of `kind` (a key of work.KINDS: "regenerate", "pre-flight check", "setup
    check", ...) asked for on `site`, to be queued when the caller commits; its task id."""
    return queue.start(session, app, kind, site, work.KINDS[kind], payload, **arguments)


def read(session, task_id: str) -> dict | None:
    """What became of a task (records.as_dict), as this app's broker makes it true."""
    return records.read(session, task_id, engine.redelivers(current_app))


def retry(session, app: Flask, task_id: str) -> str | None:
    """Start again, as a new task, a task whose worker died and that will not run again, from
    the upload it kept (the new task has it now); the new task's id, queued when the caller
    commits. None when the task cannot be retried (see records.hand_over)."""
    handed = records.hand_over(session, task_id, engine.redelivers(app))
    if handed is None:
        return None
    task, payload = handed
    new_id = start(session, app, task.kind, session.get(Site, task.site_id), payload,
                   **task.arguments)
    records.retried(session, task, new_id)
    return new_id
