"""Background work on Celery: the application and its broker (`engine`), the tasks workers run
(`work`), handing work over (`queue`) and the records of what people asked for (`records`).

Web processes never run work themselves: they record what was asked and enqueue it; the
scheduler process is the clock that queues what is due; workers (`flask --app webapp worker`)
run it. Others use the names below.
"""

from __future__ import annotations

from flask import Flask

from webapp.tasks import engine, queue, work
from webapp.tasks.queue import QueueUnavailable, celery_of, enqueue, queue_due, soon
from webapp.tasks.records import latest, prune, read
from webapp.urls import urls_changed

__all__ = ["QueueUnavailable", "celery_of", "enqueue", "init_app", "latest", "prune",
           "queue_due", "read", "soon", "start"]


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


