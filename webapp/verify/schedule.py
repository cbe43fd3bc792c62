"""When verifications are due: the clock's part. Sites whose `verify_schedule` has come round
are claimed (their next time moved on, by a conditional UPDATE, so two clocks never both
queue one) and a verification task is recorded and queued for each."""

from __future__ import annotations

import logging
from datetime import datetime

from flask import Flask
from sqlalchemy import select, update

from webapp.db import new_session
from webapp.models import Site
from webapp.schedules import next_run

log = logging.getLogger(__name__)


def queue_due_verifications(app: Flask, now: datetime) -> list[int]:
    """Record and queue a verification of every site whose verify_schedule is due; the ids."""
    from webapp import tasks  # the clock's work: tasks needs the app's queue

    queued = []
    with new_session(app) as session:
        due = session.scalars(select(Site).where(
            Site.verify_schedule != "off", Site.verify_next_run_at <= now)).all()
        for site in due:
            following = next_run(site.verify_schedule, site.timezone, now)
            won = session.execute(update(Site).where(
                Site.id == site.id, Site.verify_next_run_at == site.verify_next_run_at)
                .values(verify_next_run_at=following)
                .execution_options(synchronize_session=False)).rowcount
            if won:
                tasks.start(session, app, "verify", site)
                queued.append(site.id)
        session.commit()
    if queued:
        log.info("queued verification of %d sites", len(queued))
    return queued
