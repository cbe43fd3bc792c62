"""Background work on Celery: the application and its broker (`engine`), the tasks workers run
(`work`), handing work over (`queue`) and the records of what people asked for (`records`).

Web processes never run work themselves: they record what was asked and enqueue it; the
scheduler process is the clock that queues what is due; workers (`flask --app webapp worker`)
run it. Others use the names below.
"""

from __future__ import annotations

from flask import Flask, current_app

from webapp.models import Site
from webapp.tasks import engine, queue, records, work
from webapp.tasks.queue import QueueUnavailable, celery_of, enqueue, queue_due, soon
from webapp.tasks.records import latest, prune
from webapp.urls import urls_changed

__all__ = ["QueueUnavailable", "celery_of", "enqueue", "init_app", "latest", "prune",
           "queue_due", "read", "retry", "soon", "start"]


def init_app(app: Flask) -> None:
    app.extensions["celery"] = engine.make_celery(app, work.TASKS)
    urls_changed.connect(_changed)


def _changed(app: Flask, site_id: int) -> None:
    if "celery" in app.extensions:
        queue.soon(app, site_id)


def start(session, app: Flask, kind: str, site, payload: bytes | None = None,
          **arguments) -> str:
    """Record work of `kind` ("regenerate", "notify", "import", "pre-flight check",
    "discover") asked for on `site`, to be queued when the caller commits; its task id."""
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
