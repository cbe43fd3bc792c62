"""From a change to a search engine: plan the ledger's records for what the published sitemaps
changed, then claim, send and record each one that is due.

A record is claimed and committed before it is sent and its outcome committed after, so a
sender that dies leaves the record to be taken over once its lease runs out, and two senders
never hold the same record at once.
"""

from __future__ import annotations

import logging
import random
from datetime import datetime, timedelta

from flask import Flask, current_app
from sqlalchemy.exc import IntegrityError
from sqlalchemy.orm import Session

from webapp.db import new_session
from webapp.errors import NotFound
from webapp.models import Site, utcnow
from webapp.notify import gsc, indexnow, ledger, ping
from webapp.outbound import OutboundError

log = logging.getLogger(__name__)

# Every engine, in the order its records are planned. Each module says what it announces
# (`ANNOUNCES`: changed URLs or the sitemap) and sends one record with `deliver`.
ENGINES = {"indexnow": indexnow, "gsc": gsc, "ping": ping}


def announce(site_id: int, app: Flask | None = None, now: datetime | None = None) -> list[int]:
    """Write the delivery records for what the site's published sitemaps changed; their ids.

    Planning twice at once is harmless: the cursors move conditionally, and the second
    planner's records are rolled back with its transaction.
    """
    app = app or current_app
    with new_session(app) as session:
        site = session.get(Site, site_id)
        if site is None:
            raise NotFound(f"no site with id {site_id}")
        try:
            planned = ledger.plan(session, site, ENGINES, app.config, now or utcnow())
            session.commit()
        except (ledger.PlanConflict, IntegrityError):
            session.rollback()
            return []
        return [delivery.id for delivery in planned]


def notify_site(site_id: int, app: Flask | None = None,
                hold: frozenset[str] = frozenset()) -> tuple[list[int], list[int]]:
    """Plan what the site's published sitemaps changed and send what is due for the site:
    (ids planned, ids attempted)."""
    app = app or current_app
    return announce(site_id, app), deliver(app, site_id=site_id, hold=hold)


def delivery_lease(config: dict) -> timedelta:
    """How long a claimed record stays with its sender: a token request and a submission."""
    return timedelta(seconds=2 * config["NOTIFY_TIMEOUT"] + 30)


def deliver(app: Flask | None = None, now: datetime | None = None, site_id: int | None = None,
            hold: frozenset[str] = frozenset(), only: frozenset[int] | None = None,
            rng: random.Random | None = None) -> list[int]:
    """Make one attempt at every record that is due (of a site, not of held engines, only
    some); ids of the records attempted."""
    app = app or current_app
    config = app.config
    lease = delivery_lease(config)
    attempted: list[int] = []
    with new_session(app) as session:
        while ids := [i for i in ledger.due(session, now or utcnow(), lease, site_id, hold, only)
                      if i not in attempted]:
            for delivery_id in ids:
                attempted.append(delivery_id)
                _attempt(session, delivery_id, config, now, lease, rng)
    return attempted


def _attempt(session: Session, delivery_id: int, config: dict, now: datetime | None,
             lease: timedelta, rng: random.Random | None) -> None:
    delivery = ledger.claim(session, delivery_id, now or utcnow(), lease)
    session.commit()
    if delivery is None:
        return  # another sender has it
    site = session.get(Site, delivery.site_id)
    session.commit()  # hold no transaction while waiting for the engine (objects stay loaded)
    try:
        answer = ENGINES[delivery.engine].deliver(site, delivery, config)
    except OutboundError as exc:
        ledger.failed(session, delivery, exc, now or utcnow(), config["NOTIFY_RETRY_SECONDS"], rng)
    except Exception as exc:  # a bug here must not stop the other deliveries
        log.exception("delivery %s failed unexpectedly", delivery_id)
        ledger.failed(session, delivery, OutboundError(
            f"unexpected error: {type(exc).__name__}: {exc}"), now or utcnow(),
            config["NOTIFY_RETRY_SECONDS"], rng)
    else:
        ledger.succeeded(session, delivery, answer, now or utcnow())
    session.commit()
