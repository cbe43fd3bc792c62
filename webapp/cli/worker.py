"""`flask worker [CELERY ARGS]`: a Celery worker that runs the app's background work."""

from __future__ import annotations

import logging

import click
from flask import current_app

from webapp import tasks


@click.command("worker", context_settings={"ignore_unknown_options": True,
                                           "allow_extra_args": True})
@click.argument("celery_args", nargs=-1, type=click.UNPROCESSED)
def worker(celery_args):
    """Run a worker until stopped (Ctrl-C or SIGTERM let the task in hand finish first).

    Arguments go to `celery worker` as they are, e.g. `--concurrency 4` or `--pool threads`.
    Every worker of a deployment shares DATABASE_URL, SECRET_KEY and CELERY_BROKER_URL.
    """
    app = current_app._get_current_object()
    logging.basicConfig(level=logging.INFO,
                        format="%(asctime)s %(levelname)s %(processName)s %(name)s: %(message)s")
    logging.getLogger("webapp.config").info(app.extensions["settings"].said())
    celery = tasks.celery_of(app)
    broker = app.config["CELERY_BROKER_URL"] or "the embedded queue in the instance folder"
    click.echo(f"worker taking tasks from {broker.split('@')[-1]}", err=True)
    celery.worker_main(["worker", "--loglevel", "INFO", "--without-gossip", "--without-mingle",
                        *celery_args])
