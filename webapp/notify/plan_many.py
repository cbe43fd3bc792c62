"""The announcements of many sites planned together: a few statements for a batch.

After a batch of small sites is generated (jobs.regenerate_many_if_due), planning each site's
announcements on its own costs a transaction and three or four queries a site, more than
generating it. Here the batch's sites, their newest generations and the engines' cursors are
read with one query each, the records of every site are written with one statement, and the
cursors are moved with one more: the records and cursor positions are exactly those
`ledger.plan` gives each site on its own (the twin-site test in tests/test_small_sites.py
holds them equal).

Two planners at once are told apart as in `ledger.plan`: a cursor moves only from the
position read. Should another planner move one of the batch's cursors first, the batch is
rolled back and each site planned on its own, which plans nothing twice.
"""

from __future__ import annotations

import contextlib
from collections import defaultdict
from collections.abc import Mapping, Sequence
from datetime import datetime
from types import ModuleType
from typing import NamedTuple

from flask import Flask, current_app
from sqlalchemy import bindparam, insert, select, update
from sqlalchemy.exc import IntegrityError
from sqlalchemy.orm import Session

from webapp import many_rows
from webapp.db import new_session
from webapp.errors import NotFound
from webapp.models import Delivery, Generation, NotifyCursor, Site, utcnow
from webapp.notify import ledger
from webapp.notify.delivery import ENGINES, announce
from webapp.urls import changed_locs_many


class _Newest(NamedTuple):
    """A site's newest generations, as `ledger.plan` reads them."""

    published: int | None  # the newest succeeded one: what engines of the sitemap hear of
    seen: int | None  # the newest succeeded or unchanged one: how far the URLs were seen
    seen_seq: int | None  # its change_seq


class _Step(NamedTuple):
    """What one engine may plan for one site, decided before the cursors are read."""

    site: Site
    name: str
    engine: ModuleType
    kind: str  # "urls", "sitemap" or "not sent"
    detail: object  # the targets of a sitemap engine, the reason of one that cannot send


def announce_many(site_ids: Sequence[int], app: Flask | None = None,
                  now: datetime | None = None) -> dict[int, list[int]]:
    """`delivery.announce` for many sites in one transaction: per site, the ids of the records
    planned (sites deleted meanwhile are left out). Should another planner be at one of the
    sites, each site is planned on its own."""
    app = app or current_app
    now = now or utcnow()
    with new_session(app) as session:
        try:
            planned = plan_many(session, site_ids, ENGINES, app.config, now)
            session.commit()
            return planned
        except (ledger.PlanConflict, IntegrityError):
            session.rollback()
    planned = {}
    for site_id in site_ids:
        with contextlib.suppress(NotFound):  # deleted meanwhile
            planned[site_id] = announce(site_id, app, now)
    return planned


def plan_many(session: Session, site_ids: Sequence[int], engines: Mapping[str, ModuleType],
              config: dict, now: datetime) -> dict[int, list[int]]:
    """`ledger.plan` for each of `site_ids`, in the session's transaction: per site, the ids of
    the records written (ledger.PlanConflict or IntegrityError when another planner moved a
    cursor first)."""
    sites, newest = _sites(session, site_ids)
    steps = [step for site in sites for step in _steps(site, engines, newest[site.id], config)]
    positions = _positions(session, [step.site.id for step in steps]) if steps else {}
    rows: list[dict] = []
    moves: list[tuple[int, str, int, int]] = []  # site, engine, from, to
    locs = _changed_locs(session, steps, newest, positions)
    notified = _not_sent_before(session, steps, newest, positions)
    for step in steps:
        site, name, engine = step.site, step.name, step.engine
        start, last = positions.get((site.id, name), 0), newest[site.id]
        record = _recorder(rows, site, config, now)
        if step.kind == "urls":
            upto = _upto(last, start)
            if upto > start:
                ledger.record_chunks(site, name, engine, last.seen, locs.get(site.id, ()),
                                     record)
                moves.append((site.id, name, start, upto))
        elif step.kind == "sitemap":
            if last.published is not None and last.published > start:
                for target in step.detail:
                    record(name, generation_id=last.published, target=target)
                moves.append((site.id, name, start, last.published))
        elif last.published > start and (site.id, name, last.published) not in notified:
            record(name, generation_id=last.published, status="failed",
                   outcome=ledger.not_sent(step.detail), next_attempt_at=None, finished_at=now)
    planned = _write(session, rows)
    _move_cursors(session, positions, moves)
    return {site.id: planned.get(site.id, []) for site in sites}


def _recorder(rows: list[dict], site: Site, config: dict, now: datetime):
    """A function that adds a record's row to `rows`, as `ledger._recorder` adds a record."""
    def record(engine: str, **fields) -> None:
        rows.append({"site_id": site.id, "engine": engine, "generation_id": None,
                     "target": None, "url_count": 0, "urls": None, "status": "pending",
                     "attempts": 0, "attempt_limit": config["NOTIFY_MAX_ATTEMPTS"],
                     "outcome": None, "created_at": now, "next_attempt_at": now,
                     "finished_at": None, **fields})

    return record


def _sites(session: Session, site_ids: Sequence[int]) -> tuple[list[Site], dict[int, _Newest]]:
    """The sites (in the order of `site_ids`), each with its newest generations."""
    def newest(column, *statuses: str):
        return select(column).where(Generation.site_id == Site.id,
                                    Generation.status.in_(statuses)) \
            .order_by(Generation.id.desc()).limit(1).scalar_subquery()

    found = session.execute(select(
        Site, newest(Generation.id, "succeeded"),
        newest(Generation.id, "succeeded", "unchanged"),
        newest(Generation.change_seq, "succeeded", "unchanged"),
    ).where(many_rows.among(session, Site.id, site_ids))).all()
    by_id = {site.id: (site, _Newest(*rest)) for site, *rest in found}
    sites = [by_id[site_id][0] for site_id in dict.fromkeys(site_ids) if site_id in by_id]
    return sites, {site_id: newest for site_id, (_, newest) in by_id.items()}


def _steps(site: Site, engines: Mapping[str, ModuleType], last: _Newest,
           config: dict) -> list[_Step]:
    """What each engine may plan for the site, in the order `ledger.plan` plans them: the
    steps that need no cursor to know they plan nothing are left out."""
    steps = []
    for name, engine in engines.items():
        if engine.ANNOUNCES == "urls":
            if engine.enabled(site):
                steps.append(_Step(site, name, engine, "urls", None))
        elif targets := engine.targets(site):
            steps.append(_Step(site, name, engine, "sitemap", targets))
        elif last.published is not None and \
                (reason := engine.blocked(site, config)) is not None:
            steps.append(_Step(site, name, engine, "not sent", reason))
    return steps


def _upto(last: _Newest, start: int) -> int:
    """How far the URLs of the site were seen by its last generation (`ledger._plan_urls`)."""
    return last.seen_seq if last.seen is not None and last.seen_seq is not None else start


def _positions(session: Session, site_ids: list[int]) -> dict[tuple[int, str], int]:
    """The engines' cursors of the sites."""
    return {(site_id, engine): position for site_id, engine, position in session.execute(
        select(NotifyCursor.site_id, NotifyCursor.engine, NotifyCursor.position)
        .where(many_rows.among(session, NotifyCursor.site_id, set(site_ids))))}


def _changed_locs(session: Session, steps: list[_Step], newest: dict[int, _Newest],
                  positions: dict[tuple[int, str], int]) -> dict[int, list[str]]:
    """Per site, the locs changed since its URL engine's cursor, up to what its last generation
    saw (one URL engine: a site has one range)."""
    ranges = []
    for step in steps:
        start = positions.get((step.site.id, step.name), 0)
        if step.kind == "urls" and (upto := _upto(newest[step.site.id], start)) > start:
            ranges.append((step.site.id, start, upto))
    assert len({site_id for site_id, *_ in ranges}) == len(ranges), "one URL engine a site"
    found: dict[int, list[str]] = defaultdict(list)
    for site_id, loc in changed_locs_many(session, ranges):
        found[site_id].append(loc)
    return found


def _not_sent_before(session: Session, steps: list[_Step], newest: dict[int, _Newest],
                     positions: dict[tuple[int, str], int]) -> set[tuple[int, str, int]]:
    """(site, engine, generation) of the records already written for the newest generations
    that engines unable to send would be told of (`ledger._not_sent` writes one at most)."""
    wanted = {(step.site.id, newest[step.site.id].published) for step in steps
              if step.kind == "not sent"
              and newest[step.site.id].published > positions.get((step.site.id, step.name), 0)}
    if not wanted:
        return set()
    return {tuple(row) for row in session.execute(
        select(Delivery.site_id, Delivery.engine, Delivery.generation_id).where(
            many_rows.among(session, Delivery.site_id, {site_id for site_id, _ in wanted}),
            many_rows.among(session, Delivery.generation_id, {gen for _, gen in wanted})))}


def _write(session: Session, rows: list[dict]) -> dict[int, list[int]]:
    """Insert the records, in planning order; per site, their ids."""
    if not rows:
        return {}
    table = Delivery.__table__
    planned: dict[int, list[int]] = defaultdict(list)
    for site_id, delivery_id in sorted(many_rows.insert_rows(
            session, table, rows, insert(table).returning(table.c.site_id, table.c.id))):
        planned[site_id].append(delivery_id)
    return planned


def _move_cursors(session: Session, positions: dict[tuple[int, str], int],
                  moves: list[tuple[int, str, int, int]]) -> None:
    """Move each cursor from the position read (ledger.PlanConflict when another planner
    moved one first); a cursor not there yet is inserted (IntegrityError when another
    planner inserted it first)."""
    moved = [{"site": site_id, "of": engine, "start": start, "upto": upto}
             for site_id, engine, start, upto in moves if (site_id, engine) in positions]
    new = [{"site_id": site_id, "engine": engine, "position": upto}
           for site_id, engine, _, upto in moves if (site_id, engine) not in positions]
    if moved:
        kind = NotifyCursor.position.type
        changed = many_rows.update_rows(session, update(NotifyCursor).where(
            NotifyCursor.site_id == bindparam("site", type_=NotifyCursor.site_id.type),
            NotifyCursor.engine == bindparam("of", type_=NotifyCursor.engine.type),
            NotifyCursor.position == bindparam("start", type_=kind),
        ).values(position=bindparam("upto", type_=kind)), moved).rowcount
        if changed != len(moved):
            raise ledger.PlanConflict(f"announcements of {len(moved) - changed} of the sites "
                                      "were planned elsewhere")
    if new:
        many_rows.insert_rows(session, NotifyCursor.__table__, new)
