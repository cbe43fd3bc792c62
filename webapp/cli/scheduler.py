"""`flask scheduler run|status`: the scheduler process, and what it will do next."""

from __future__ import annotations

import logging
import signal

import click
from apscheduler.schedulers.blocking import BlockingScheduler
from flask import current_app
from flask.cli import AppGroup

from webapp import scheduler
from webapp.cli import friendly_errors
from webapp.db import session_scope
from webapp.models import utcnow

group = AppGroup("scheduler", help="Regenerate on schedule and after changes; send announcements.")


@group.command("run")
@click.option("--once", is_flag=True, help="Do what is due now, then exit (for cron or tests).")
@friendly_errors
def scheduler_run(once):
    """Run the scheduler until stopped (Ctrl-C or SIGTERM finish the work in hand first)."""
    app = current_app._get_current_object()
    if once:
        generations = scheduler.run_due_sites(app)
        scheduler.deliver_due(app)
        click.echo(f"{len(generations)} sites generated")
        return
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    logging.getLogger("webapp.config").info(current_app.extensions["settings"].said())
    logging.getLogger("apscheduler").setLevel(logging.WARNING)  # not a line per tick
    runner = BlockingScheduler(timezone="UTC")
    scheduler.add_jobs(runner, app)

    def stop(signum, frame) -> None:
        # Runs in the main thread: wait here for the job in hand, so the process does not
        # begin shutting down under it.
        click.echo("stopping: finishing the work in hand", err=True)
        if runner.running:
            runner.shutdown(wait=True)

    signal.signal(signal.SIGTERM, stop)
    signal.signal(signal.SIGINT, stop)
    click.echo(f"scheduler running, checking every {app.config['SCHEDULER_TICK_SECONDS']} s; "
               "Ctrl-C stops it", err=True)
    runner.start()
    click.echo("scheduler stopped", err=True)


def _ago(seconds: float) -> str:
    return f"{seconds:.1f} s"


@group.command("status")
@friendly_errors
def scheduler_status():
    """Each site: schedule, next run, last run with its outcome and duration."""
    now = utcnow()
    with session_scope() as session:
        for row in scheduler.status(session):
            parts = [row.slug, row.schedule + ("" if row.timezone == "UTC" or not
                                                row.schedule.startswith("cron:")
                                                else f" ({row.timezone})")]
            parts.append(f"next {row.next_run_at:%Y-%m-%d %H:%M:%S} UTC" if row.next_run_at
                         else "next: not scheduled")
            if row.running:
                parts.append(f"running now ({row.running})")
            elif row.pending_changes:
                parts.append("changes waiting")
            last = row.last
            if last is None:
                parts.append("never run")
            else:
                took = (last.finished_at - last.started_at).total_seconds() if last.finished_at \
                    else (now - last.started_at).total_seconds()
                outcome = last.status + (f": {last.error}" if last.error else "")
                parts.append(f"last {last.started_at:%Y-%m-%d %H:%M:%S} UTC, {outcome}, "
                             f"took {_ago(took)}")
            click.echo("\t".join(parts))
