"""From a change to a search engine: plan the ledger's records for what the published sitemaps
changed, then claim, send and record each one that is due.

A record is claimed and committed before it is sent and its outcome committed after, so a
sender that dies leaves the record to be taken over once its lease runs out, and two senders
never hold the same record at once.
"""

from __future__ import annotations

import logging
import random
from collections import defaultdict
from collections.abc import Callable, Iterable
from concurrent.futures import FIRST_COMPLETED, Future, ThreadPoolExecutor, wait
from datetime import datetime, timedelta

from flask import Flask, current_app
from sqlalchemy import select
from sqlalchemy.exc import IntegrityError
from sqlalchemy.orm import Session

from webapp.db import new_session
from webapp.errors import NotFound
from webapp.models import Delivery, Site, utcnow
from webapp.notify import ledger
from webapp.notify.engines import ENGINES
from webapp.outbound import OutboundError, address

log = logging.getLogger(__name__)

MAX_LANES = 16  # destination hosts sent to at once by one deliver()
LOOK_AGAIN = 0.5  # seconds between looks for records that fell due while lanes run


def blocked(site: Site, config: dict) -> dict[str, str]:
    """The engines set up for the site that cannot send, each with the reason: what site
    health and pre-flight say, and what the ledger records as "not sent"."""
    return {name: reason for name, engine in ENGINES.items()
            if (reason := engine.blocked(site, config)) is not None}


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


def announce_locs(session: Session, site: Site, generation_id: int,
                  locs: Callable[[], Iterable[str]], config: dict,
                  now: datetime | None = None) -> list[Delivery]:
    """Records of URLs whose published entries changed outside the change log (a rollback),
    for the engines that announce URLs; `locs` is asked only when one of them is enabled.
    The caller commits."""
    if not any(engine.ANNOUNCES == "urls" and engine.enabled(site) for engine in ENGINES.values()):
        return []
    return ledger.plan_locs(session, site, ENGINES, generation_id, locs(), config,
                            now or utcnow())


def notify_site(site_id: int, app: Flask | None = None,
                hold: frozenset[str] = frozenset()) -> tuple[list[int], list[int]]:
    """Plan what the site's published sitemaps changed and send what is due for the site:
    (ids planned, ids attempted)."""
    app = app or current_app._get_current_object()
    return announce(site_id, app), deliver(app, site_id=site_id, hold=hold)


def delivery_lease(config: dict) -> timedelta:
    """How long a claimed record stays with its sender: a token request and a submission."""
    return timedelta(seconds=2 * config["NOTIFY_TIMEOUT"] + 30)


def deliver(app: Flask | None = None, now: datetime | None = None, site_id: int | None = None,
            hold: frozenset[str] = frozenset(), only: frozenset[int] | None = None,
            rng: random.Random | None = None) -> list[int]:
    """Make one attempt at every record that is due (of a site, not of held engines, only
    some), including those falling due while it runs; ids of the records attempted.

    Records go out in one lane per destination host, the lanes side by side, and records of
    other hosts that fall due meanwhile start at once: an engine that answers slowly (up to
    the deadline of each request) holds back only its own records.
    """
    app = app or current_app._get_current_object()  # the lanes run in threads of their own
    config, lease = app.config, delivery_lease(app.config)
    attempted: list[int] = []
    running: dict[str, Future] = {}  # destination host -> its lane
    waiting: dict[str, set[int]] = defaultdict(set)  # due records of a host whose lane runs
    with new_session(app) as session, ThreadPoolExecutor(MAX_LANES,
                                                         thread_name_prefix="deliver") as pool:
        while True:
            skip = set().union(*waiting.values())
            ids = [i for i in ledger.due(session, now or utcnow(), lease, site_id, hold, only,
                                         skip=skip) if i not in attempted]
            for host, lane in _lanes(session, ids, config).items():
                if host in running:
                    waiting[host].update(lane)  # after the lane that host has now
                    continue
                attempted.extend(lane)
                running[host] = pool.submit(_send_lane, app, lane, now, lease, rng)
            session.rollback()  # hold no transaction while the lanes run
            if not running:
                return attempted
            done, _ = wait(running.values(), timeout=LOOK_AGAIN, return_when=FIRST_COMPLETED)
            for host in [host for host, lane in running.items() if lane in done]:
                running.pop(host).result()
                waiting.pop(host, None)  # due again at the next look, in a lane of their own


def _lanes(session: Session, ids: list[int], config: dict) -> dict[str, list[int]]:
    """The records by the host they will be sent to, in the order they are due."""
    deliveries = {d.id: d for d in session.scalars(select(Delivery).where(Delivery.id.in_(ids)))}
    sites = {s.id: s for s in session.scalars(select(Site).where(
        Site.id.in_({d.site_id for d in deliveries.values()})))}
    lanes: dict[str, list[int]] = defaultdict(list)
    for delivery_id in ids:
        delivery = deliveries.get(delivery_id)
        site = sites.get(delivery.site_id) if delivery is not None else None
        where = address(ENGINES[delivery.engine].destination(site, delivery, config)) \
            if site is not None else ""
        lanes[where].append(delivery_id)
    return lanes


def _send_lane(app: Flask, ids: list[int], now: datetime | None, lease: timedelta,
               rng: random.Random | None) -> None:
    with new_session(app) as session:
        for delivery_id in ids:
            _attempt(session, delivery_id, app.config, now, lease, rng)


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
        if exc.by_own_rules:  # nothing reached the engine: the record waits, unspent
            ledger.held(session, delivery, exc, now or utcnow(), config["NOTIFY_RETRY_SECONDS"])
        else:
            ledger.failed(session, delivery, exc, now or utcnow(),
                          config["NOTIFY_RETRY_SECONDS"], rng)
    except Exception as exc:  # a bug here must not stop the other deliveries
        log.exception("delivery %s failed unexpectedly", delivery_id)
        ledger.failed(session, delivery, OutboundError(
            f"unexpected error: {type(exc).__name__}: {exc}"), now or utcnow(),
            config["NOTIFY_RETRY_SECONDS"], rng)
    else:
        ledger.succeeded(session, delivery, answer, now or utcnow())
    session.commit()
