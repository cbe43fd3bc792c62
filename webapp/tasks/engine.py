"""The Celery application of a Flask app: where work is queued, how it is delivered, and
tasks that run inside the app's context.

Delivery is at least once: a task is acknowledged only when it has finished
(`task_acks_late`), and a worker that dies mid-task gives it back (`reject_on_worker_lost`).
The work is written so that running it twice does no harm: a generation holds the site's
lease and asks again whether it is due, an announcement is claimed before it is sent.
"""

from __future__ import annotations

import threading
import weakref
from pathlib import Path

from celery import Celery, Task
from celery.signals import worker_process_init
from flask import Flask

from webapp.config import private_folder

BROKER_TIMEOUT = 3.0  # seconds a broker may take to answer before a request gives up


def embedded_broker(app: Flask) -> tuple[str, dict]:
    """A broker in the instance folder (kombu's filesystem transport): nothing to install,
    enough for processes on one machine. Messages are files moved in and out of one folder."""
    folder = private_folder(Path(app.config["INSTANCE_PATH"]) / "broker")
    for part in ("queue", "control"):
        private_folder(folder / part)
    return "filesystem://", {"data_folder_in": str(folder / "queue"),
                             "data_folder_out": str(folder / "queue"),
                             "control_folder": str(folder / "control"),
                             "polling_interval": 0.2}


def redelivers(app: Flask) -> bool:
    """Whether the broker gives a task whose worker died to another worker at once: RabbitMQ
    does when the dead worker's connection closes. Redis does only after its visibility
    timeout (below), hours later, and the embedded queue never: a message leaves its folder
    when a worker takes it. (When only a worker's child process dies, its parent gives the
    task back at once on every broker: task_reject_on_worker_lost.)"""
    return app.config["CELERY_BROKER_URL"].startswith(("amqp://", "amqps://", "pyamqp://"))


def celery_of(app: Flask) -> Celery:
    """The app's Celery application, made the first time work is queued or a worker starts."""
    celery = app.extensions.get("celery")
    if celery is None:
        with _making:
            celery = app.extensions.get("celery")
            if celery is None:
                from webapp.tasks.work import TASKS  # the work's domains, loaded with it

                celery = app.extensions["celery"] = make_celery(app, TASKS)
    return celery


_making = threading.Lock()


def make_celery(app: Flask, tasks: dict) -> Celery:
    """A Celery app for `app`, with `tasks` (name -> function) registered on it."""
    url = app.config["CELERY_BROKER_URL"]
    options: dict = {}
    transport = None  # the URL's own
    if not url:
        url, options = embedded_broker(app)
        transport = "webapp.tasks.owner_only_broker:Transport"  # files only their owner reads
    elif url.startswith(("redis://", "rediss://")):
        if url.startswith("redis://"):  # rediss:// keeps kombu's own: its scheme sets TLS
            transport = "webapp.tasks.malformed_messages:RedisTransport"  # drops non-messages
        # A task that runs longer than this is handed to another worker as well: longer than
        # any run, so only a dead worker's tasks are given out again. A Redis that accepts
        # connections but does not answer fails a request in seconds instead of hanging it.
        options = {"visibility_timeout": 3 * 3600, "socket_timeout": BROKER_TIMEOUT,
                   "socket_connect_timeout": BROKER_TIMEOUT}
    elif url.startswith(("amqp://", "amqps://", "pyamqp://")):
        options = {"read_timeout": BROKER_TIMEOUT, "write_timeout": BROKER_TIMEOUT}

    class AppTask(Task):
        flask_app = app  # for signal handlers (work.py), which are given the task

        def __call__(self, *args, **kwargs):
            with app.app_context():
                return self.run(*args, **kwargs)

    celery = Celery(app.import_name, task_cls=AppTask, set_as_current=False)
    celery.conf.update(
        broker_url=url, broker_transport=transport, broker_transport_options=options,
        broker_connection_retry_on_startup=True, broker_connection_timeout=BROKER_TIMEOUT,
        worker_consumer="webapp.tasks.malformed_messages:Consumer",  # one line a bad message
        task_default_queue=app.config["CELERY_QUEUE"], task_serializer="json", accept_content=["json"],
        task_ignore_result=True,  # outcomes are kept in the database (Generation, Task, ledger)
        task_acks_late=True, task_reject_on_worker_lost=True,
        worker_prefetch_multiplier=1,  # a long run never holds back tasks another worker could take
        task_always_eager=bool(app.config["CELERY_TASK_ALWAYS_EAGER"]),
        worker_hijack_root_logger=False, worker_redirect_stdouts=False,
        enable_utc=True, timezone="UTC",
    )
    for name, function in tasks.items():
        celery.task(name=f"webapp.{name}")(function)

    if "db_engine" in app.extensions:
        _engines.add(app.extensions["db_engine"])
    return celery


_engines: weakref.WeakSet = weakref.WeakSet()


@worker_process_init.connect
def _own_connections(**_kwargs) -> None:
    """A forked worker process must not share its parent's database connections."""
    for engine in list(_engines):
        engine.dispose(close=False)
