"""Background work on Celery: the application and its broker (`engine`), the tasks workers run
(`work`), handing work over (`queue`), the records of what people asked for (`records`) and
asking for work (`asking`: start, read, retry).

Web processes never run work themselves: they record what was asked and enqueue it; the
scheduler process is the clock that queues what is due; workers (`flask --app webapp worker`)
run it. Others use the names below. Each is loaded from its module on first use (PEP 562), and
the Celery application is made the first time work is queued: a command or a page that queues
nothing loads neither Celery nor the work's domains.
"""

from __future__ import annotations

from flask import Flask

from webapp import front_door

# Each name others may use, and the module that defines it.
_HOMES = {
    "QueueUnavailable": "queue", "enqueue": "queue", "queue_due": "queue", "soon": "queue",
    "celery_of": "engine", "latest": "records", "prune": "records",
    "start": "asking", "read": "asking", "retry": "asking",
}

__all__ = ["init_app", *_HOMES]


__getattr__ = front_door(__name__, _HOMES)


def init_app(app: Flask) -> None:
    from webapp.urls import urls_changed

    app.extensions["tasks"] = True  # this app queues a site's run when its URLs change
    urls_changed.connect(_changed)


def _changed(app: Flask, site_id: int) -> None:
    if "tasks" in app.extensions:
        from webapp.tasks import queue

        queue.soon(app, site_id)
