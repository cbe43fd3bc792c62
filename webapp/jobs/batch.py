"""Runs of many sites at once: the small ones generated together in one transaction, the
others one by one, and their announcements planned together."""

from __future__ import annotations

import logging
import time
from datetime import datetime

from flask import Flask, current_app
from sqlalchemy import bindparam, case, insert, update
from sqlalchemy.orm import Session

from webapp import leases, many_rows, notify
from webapp.db import new_session
from webapp.errors import NotFound
from webapp.jobs.due import due
from webapp.jobs.numbers import next_numbers
from webapp.jobs.run import _announce, _generate_if_due, log_run
from webapp.models import UNFINISHED_RUN, Generation, Site, utcnow
from webapp.schedules import next_run
from webapp.sitemaps import (
    get_store,
    is_small,
    published_forward,
    record_small_sets,
    write_small_sites,
)

log = logging.getLogger("webapp.jobs")  # one logger for every run, whichever module ran it


def regenerate_many_if_due(site_ids: list[int], app: Flask | None = None,
                           now: datetime | None = None) -> dict[int, str | None]:
    """`regenerate_if_due` for a batch of sites (generate_many_if_due), then the planning of
    their announcements, together (notify.announce_many)."""
    app = app or current_app._get_current_object()
    outcome = generate_many_if_due(site_ids, app, now)
    done = [site_id for site_id, status in outcome.items() if status in ("succeeded", "unchanged")]
    if done:
        try:
            notify.announce_many(done, app)
        except Exception:  # each on its own, so that one site's trouble stays its own
            log.exception("announcements of %d sites could not be planned together", len(done))
            for site_id in done:
                _announce(app, site_id)
    return outcome


def generate_many_if_due(site_ids: list[int], app: Flask | None = None,
                         now: datetime | None = None) -> dict[int, str | None]:
    """The scheduled and after-change runs of a batch of sites: the small ones
    (sitemaps.small_sites) are generated together in one transaction, the others one by one,
    as are all of them should the batch fail. Per site, how its run ended (None: nothing was
    due, another process has it, or it failed before it could be recorded, which is logged)."""
    app = app or current_app._get_current_object()
    now = now or utcnow()
    try:
        outcome = _regenerate_small_sites(app, site_ids, now)
    except Exception:
        log.exception("the batch of %d sites failed; each is run on its own", len(site_ids))
        outcome = {}
    for site_id in site_ids:
        if site_id in outcome:
            continue
        try:
            generation = _generate_if_due(site_id, app, now)
        except NotFound:
            generation = None  # deleted meanwhile
        except Exception:  # recorded on the generation; the other sites go on
            log.exception("the run of site %s failed", site_id)
            generation = None
        outcome[site_id] = None if generation is None else generation.status
    return outcome


def _regenerate_small_sites(app: Flask, site_ids: list[int], now: datetime,
                            ) -> dict[int, str | None]:
    """Of `site_ids`, generate those due and small in one transaction (with their leases);
    per site decided here, the status of its run or None when it was not due. Sites another
    process holds, and those not small, are left out, for `regenerate_if_due`."""
    started = time.monotonic()
    owner = leases.new_owner()
    store = get_store(app)
    with new_session(app) as session:
        sites = leases.claim_many(session, site_ids, now, owner)
        claimed = [site.id for site in sites]
        outcome: dict[int, str | None] = {}
        scheduled: set[int] = set()
        small = []
        for site in sites:
            on_schedule, changed = due(site, now)
            if not (on_schedule or changed):
                outcome[site.id] = None
            elif is_small(site):
                small.append(site)
                if on_schedule:
                    scheduled.add(site.id)
        runs, _ = write_small_sites(session, small, now)
        statuses = _record_small_runs(session, store, owner, runs, scheduled, now)
        run_ids = {run.site.id for run in runs}
        leases.release_many(session, owner, [{"site": site_id} for site_id in claimed
                                             if site_id not in run_ids])
        live = [(run.site, generation_id) for run, (status, generation_id)
                in zip(runs, statuses) if status == "succeeded"]
        stale = store.stale_generations(session, {site.id: generation_id
                                                  for site, generation_id in live},
                                        app.config["SITEMAP_KEEP_GENERATIONS"])
        outcome.update({run.site.id: status for run, (status, _) in zip(runs, statuses)})
        keys = [site.storage_key for site, _ in live]
        logged = [(run.site.slug, "schedule" if run.site.id in scheduled else "change", status,
                   generation_id, run.file.url_count)
                  for run, (status, generation_id) in zip(runs, statuses)]
        session.commit()
    seconds = time.monotonic() - started  # the batch's: its sites were written together
    for slug, trigger, status, generation_id, url_count in logged:
        log_run(slug, trigger, status, seconds, generation_id, url_count)
    # Committed: the outcome stands whatever happens now (it decides the announcements).
    try:
        for key in keys:
            store.forget(key)
        if stale:
            store.drop_generations(stale)
    except Exception:  # pruned at a later run of these sites
        log.exception("old generations of %d sites could not be pruned", len(keys))
    return outcome


def _record_small_runs(session: Session, store, owner: str, runs, scheduled: set[int],
                       now: datetime) -> list[tuple[str, int]]:
    """Record the generations of `runs` as finished (triggered by the schedule for the sites
    of `scheduled`, else by a change), give their sites' leases back and publish their sets,
    in the session's transaction, with one statement per table for all of them (one UPDATE
    of the sites' rows: lease, schedule and set); the status and generation id of each run."""
    if not runs:
        return []
    started = utcnow()
    site_ids = [run.site.id for run in runs]
    session.execute(update(Generation).where(
        many_rows.among(session, Generation.site_id, site_ids), UNFINISHED_RUN,
    ).values(status="failed", finished_at=started,
             error="interrupted: the run stopped unfinished"))
    table = Generation.__table__
    numbers = next_numbers(session, site_ids)
    ids = dict(many_rows.insert_rows(
        session, table, statement=insert(table).returning(table.c.site_id, table.c.id), rows=[
            {"site_id": run.site.id, "number": numbers[run.site.id],
             "status": "unchanged" if run.unchanged else "succeeded",
             "started_at": started, "finished_at": started, "change_seq": run.site.change_seq,
             "layout": run.layout, "url_count": run.file.url_count, "file_count": 1,
             "bytes": run.file.bytes, "error": None, "rollback_of": None,
             "trigger": "schedule" if run.site.id in scheduled else "change"}
            for run in runs]).all())
    record_small_sets(session, store, [(run, ids[run.site.id]) for run in runs
                                       if not run.unchanged])
    seq = bindparam("seq", type_=Site.change_seq.type)
    served = dict(leases.release_many(session, owner, [
        {"site": run.site.id, "seq": run.site.change_seq,
         "next": next_run(run.site.schedule, run.site.timezone, now)
         if run.site.id in scheduled else run.site.next_run_at,
         "generation": None if run.unchanged else ids[run.site.id]} for run in runs],
        returning=(Site.id, Site.published_generation_id),
        generated_seq=seq, retry_at=None,
        next_run_at=bindparam("next", type_=Site.next_run_at.type),
        pending_since=case((Site.change_seq > seq, Site.changed_at), else_=None),
        published_generation_id=published_forward(
            bindparam("generation", type_=Site.published_generation_id.type))))
    superseded = [ids[run.site.id] for run in runs
                  if not run.unchanged and served.get(run.site.id) != ids[run.site.id]]
    if superseded:  # a newer set is published already
        session.execute(update(Generation).where(Generation.id.in_(superseded))
                        .values(status="superseded"))
        store.drop_sets(session, superseded)
    return [("unchanged" if run.unchanged else "superseded" if ids[run.site.id] in superseded
             else "succeeded", ids[run.site.id]) for run in runs]
