"""`flask worker [CELERY ARGS]`: a Celery worker that runs the app's background work."""

from __future__ import annotations

import logging
from pathlib import Path

import click
from flask import current_app

from webapp import tasks


@click.command("worker", context_settings={"ignore_unknown_options": True,
                                           "allow_extra_args": True})
@click.option("--ready-file", type=click.Path(dir_okay=False),
              help="A file to create once the worker takes tasks (make run waits for it).")
@click.argument("celery_args", nargs=-1, type=click.UNPROCESSED)
def worker(ready_file, celery_args):
    """Run a worker until stopped (Ctrl-C or SIGTERM let the task in hand finish first).

    Arguments go to `celery worker` as they are, e.g. `--concurrency 4` or `--pool threads`.
    Every worker of a deployment shares DATABASE_URL, SECRET_KEY and CELERY_BROKER_URL.
    """
    app = current_app._get_current_object()
    logging.basicConfig(level=logging.INFO,
                        format="%(asctime)s %(levelname)s %(processName)s %(name)s: %(message)s")
    logging.getLogger("webapp.config").info(app.extensions["settings"].said())
    celery = tasks.celery_of(app)
    if ready_file:
        from celery.signals import worker_ready

        worker_ready.connect(lambda **_: Path(ready_file).touch(), weak=False)
    broker = app.config["CELERY_BROKER_URL"] or "the embedded queue in the instance folder"
    click.echo(f"worker taking tasks from {broker.split('@')[-1]}", err=True)
    celery.worker_main(["--quiet", "worker", "--loglevel", "INFO", "--without-gossip", "--without-mingle",
                        *celery_args])
