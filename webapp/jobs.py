"""The work a worker runs for a site: generate and publish when due, roll back, "regenerate
now".

Job functions are importable and module-level, each owning its own transactions, and safe to
run twice or by two processes at once: a run holds the site's lease (leases.py) and is
recorded as a generation whatever happens."""

from __future__ import annotations

import contextlib
import logging
import time
from collections.abc import Callable
from datetime import datetime, timedelta

from flask import Flask, current_app
from sqlalchemy import bindparam, case, insert, or_, select, update
from sqlalchemy.orm import Session

from webapp import leases, many_rows, notify
from webapp.db import new_session
from webapp.errors import NotFound
from webapp.leases import SiteBusy
from webapp.models import UNFINISHED_RUN, Generation, Site, utcnow
from webapp.said import Line, said, said_plural
from webapp.schedules import next_run
from webapp.sitemaps import (
    Limits,
    Published,
    PublishedSet,
    SitemapLimitError,
    assign_sections,
    diff,
    generate_site,
    get_store,
    is_small,
    published_forward,
    record_small_sets,
    republish_site,
    write_small_sites,
)
from webapp.urls import committed_change_seq
from webapp.verify import publishing

log = logging.getLogger(__name__)

RETRY_AFTER_FAILURE = timedelta(minutes=5)


def _start(session: Session, site: Site, **fields) -> Generation:
    """A committed record for a new run. The caller holds the site's lease, so a run of the
    site still marked running stopped without being able to say so."""
    now = utcnow()
    session.execute(update(Generation).where(Generation.site_id == site.id, UNFINISHED_RUN).values(
        status="failed", finished_at=now, error="interrupted: the run stopped unfinished"))
    generation = Generation(site_id=site.id, status="running", started_at=now, **fields)
    session.add(generation)
    session.commit()
    return generation


def _recorded_run(app: Flask, session: Session, site: Site, generation: Generation,
                  work: Callable[[Callable[[], None]], Published]) -> Generation:
    """Run `work` and record how it ended, whatever happens; the caller's next commit (the
    lease's release) writes the outcome and, in the same transaction, publishes the set.

    `work` gets a function to call just before the new set goes live: it commits the run's
    records first, so a published set always has them.
    """

    def publishing() -> None:
        generation.status = "publishing"
        session.commit()

    try:
        result = work(publishing)
    except BaseException as exc:
        session.rollback()
        if isinstance(exc, SitemapLimitError):
            generation.error = str(exc)  # a site owner can act on these words as they are
        elif isinstance(exc, Exception):
            log.exception("generation %s of site %s failed", generation.id, site.slug)
            generation.error = f"{type(exc).__name__}: {exc}"
        else:
            generation.error = f"interrupted ({type(exc).__name__})"
        generation.status = "failed"
        generation.finished_at = utcnow()
        if not isinstance(exc, Exception):
            session.commit()
            raise
        return generation  # committed with the lease's release
    if result.unchanged:
        generation.status = "unchanged"  # same bytes as the published set: nothing to do
    else:
        generation.status = "succeeded" if result.published else "superseded"
    generation.url_count = result.url_count
    generation.file_count = len(result.files)
    generation.bytes = result.bytes
    generation.error = None  # a run taken for dead while it was slow finished after all
    generation.finished_at = utcnow()
    return generation  # committed, and the set published, with the lease's release


def log_run(slug: str, trigger: str | None, outcome: str, seconds: float,
            generation_id: int | None, url_count: int) -> None:
    """The one line a run leaves in the log of the scheduler or worker that made it."""
    log.info("run of site %s: trigger=%s outcome=%s duration=%.2fs generation=%s urls=%s",
             slug, trigger or "unknown", outcome, seconds, generation_id, url_count)


def _log_generation(slug: str, generation: Generation, started: float) -> None:
    log_run(slug, generation.trigger, generation.status, time.monotonic() - started,
            generation.id, generation.url_count)


def _leased(app: Flask, site_id: int, run: Callable[[Session, Site], Generation],
            when: Callable[[Session, Site], bool] | None = None) -> Generation | None:
    """Run `run` while holding the site's lease (leases.SiteBusy when another process has it),
    and log how it ended in one line.

    `when`, asked once the lease is held, can decide that the run is not needed after all
    (another process just did it): then nothing runs and None is returned.
    """
    started = time.monotonic()
    owner = leases.new_owner()
    with new_session(app) as session:
        site = session.get(Site, site_id)
        if site is None:
            raise NotFound(f"no site with id {site_id}")
        # Held uncommitted until the run's record is written, so that taking the lease and
        # starting the run cost one commit, and a site found not due costs none.
        leases.claim(session, site_id, utcnow(), owner, commit=False)
        session.refresh(site)  # as it is now that the lease is held, not as first read
        generation = None
        try:
            if when is not None and not when(session, site):
                session.rollback()  # the claim was never committed: nothing to give back
                return None
            with leases.Keeper(lambda: new_session(app), site_id, owner):
                generation = run(session, site)
        except BaseException:
            session.rollback()
            leases.release(session, site_id, owner, **_after(generation))
            if generation is not None:
                with contextlib.suppress(Exception):  # the run's own error matters more
                    _log_generation(site.slug, generation, started)
            raise
        # One commit: the run's outcome, the published set (sitemaps.publish) and the lease.
        values = _after(generation)
        try:
            leases.release(session, site_id, owner, **values)
        except Exception as exc:  # the commit failed: nothing of it was published
            session.rollback()
            log.exception("generation %s of site %s could not be committed", generation.id,
                          site.slug)
            session.execute(update(Generation).where(Generation.id == generation.id).values(
                status="failed", finished_at=utcnow(),
                error=f"{type(exc).__name__}: {exc}"[:2000]))
            leases.release(session, site_id, owner, retry_at=utcnow() + RETRY_AFTER_FAILURE)
            session.refresh(generation)
        _log_generation(site.slug, generation, started)
    if generation.status == "succeeded":
        get_store(app).prune(site.storage_key, app.config["SITEMAP_KEEP_GENERATIONS"])
    return generation


def _after(generation: Generation | None) -> dict:
    """What a finished run changes on its site: the changes it covered are generated; after a
    failure, changes wait a while before they trigger another run."""
    if generation is None or generation.change_seq is None:
        return {}
    if generation.status == "failed":
        return {"retry_at": utcnow() + RETRY_AFTER_FAILURE}
    return {"generated_seq": generation.change_seq, "retry_at": None,
            "pending_since": case((Site.change_seq > generation.change_seq, Site.changed_at),
                                  else_=None)}


def regenerate(site_id: int, app: Flask | None = None, now: datetime | None = None,
               limits: Limits | None = None,
               when: Callable[[Session, Site], str | None] | None = None,
               progress: Callable[[int, int], None] | None = None,
               trigger: str | None = None) -> Generation | None:
    """Generate and publish one site's sitemaps; the run is recorded whatever happens, with
    what started it (`trigger`, one of models.TRIGGERS).

    With `when`, only if it still says so once the site's lease is held: it answers the
    trigger (the schedule or a change), or None when nothing is due.
    """
    app = app or current_app
    chosen = {"trigger": trigger}

    def decide(session: Session, site: Site) -> bool:
        chosen["trigger"] = when(session, site) or None
        return chosen["trigger"] is not None

    def run(session: Session, site: Site) -> Generation:
        generation = _start(session, site, change_seq=committed_change_seq(session, site.id),
                            trigger=chosen["trigger"])

        def work(publishing: Callable[[], None]) -> Published:
            # Sections are computed and committed first: the run then holds no write lock
            # on its URLs (SQLite's one lock) while it writes.
            if assign_sections(session, site, generation.change_seq):
                session.commit()
            return generate_site(session, site, generation, get_store(app), limits, now,
                                 publishing, progress)

        return _recorded_run(app, session, site, generation, work)

    return _leased(app, site_id, run, decide if when is not None else None)


def rollback(site_id: int, target_id: int, app: Flask | None = None,
             now: datetime | None = None) -> Generation:
    """Publish again the files of an older generation, as a new generation that says so.

    A new id keeps "a newer generation is never replaced by an older one" true; files whose
    content changes get a new lastmod; the next regeneration rebuilds from the database.
    """
    app = app or current_app
    store = get_store(app)

    def run(session: Session, site: Site) -> Generation:
        target = session.get(Generation, target_id)
        if target is None or target.site_id != site_id or target.status != "succeeded":
            raise NotFound(f"generation {target_id} is not a successful generation of this site")
        kept = store.generation_set(site.storage_key, target_id)
        entry = site.sitemap_url.rsplit("/", 1)[-1]
        urlsets = [f for f in (kept.files.values() if kept else ()) if f.kind == "urlset"]
        entry_file = kept.files.get(entry) if kept else None
        if kept is not None and kept.files and not (
                entry_file and (entry_file.kind == "index" or urlsets == [entry_file])):
            raise NotFound(f"generation {target_id} was published under another sitemap URL "
                           f"(it has no {entry}); regenerate instead")
        if kept is None:
            raise NotFound(f"the files of generation {target_id} are no longer kept (only the "
                           f"last {app.config['SITEMAP_KEEP_GENERATIONS']} are)")
        generation = _start(session, site, rollback_of=target_id, trigger="rollback")
        live = store.current_set(site.storage_key) or PublishedSet(0, {})
        done = _recorded_run(app, session, site, generation, lambda publishing: republish_site(
            session, site, generation, store, target, now, publishing))
        if done.status == "succeeded":
            _announce_rollback(app, session, site, done, live, kept)
        return done

    return _leased(app, site_id, run)


def _announce_rollback(app: Flask, session: Session, site: Site, generation: Generation,
                       live: PublishedSet, target: PublishedSet) -> None:
    """Records, committed with the rollback, of the URLs whose entries differ between the set
    that was live and the one rolled back to (added, removed or changed): the change log
    knows nothing of a rollback, so engines that announce URLs hear of it here."""
    def changed() -> list[str]:
        found = diff(live, target, store.local)
        return [*found.added, *found.removed, *(loc for loc, _ in found.changed)]

    store = get_store(app)
    try:
        notify.announce_locs(session, site, generation.id, changed, app.config)
    except Exception:  # the rollback stands; the next regeneration announces what it changes
        log.exception("the URLs rollback %s changed could not be planned for announcement",
                      generation.id)


def regenerate_now(site_id: int, app: Flask | None = None,
                   progress: Callable[[int, int], None] | None = None,
                   trigger: str | None = None) -> Line:
    """"Regenerate now" of the dashboard ("button") and the API ("api"): generate, then
    announce what changed; the outcome in a sentence (said.py), or RuntimeError when the
    generation failed."""
    app = app or current_app._get_current_object()  # notify sends from threads
    generation = regenerate(site_id, app, progress=progress, trigger=trigger)
    if generation.status == "failed":
        raise RuntimeError(f"generation {generation.id} failed: {generation.error}")
    planned, _ = notify.notify_site(site_id, app)
    said_line = [said_plural(
        "generation %(id)s: %(status)s, %(urls)s in %(num)s file; %(announcements)s.",
        "generation %(id)s: %(status)s, %(urls)s in %(num)s files; %(announcements)s.",
        generation.file_count, id=generation.id, status=said(generation.status),
        urls=said_plural("%(num)s URL", "%(num)s URLs", generation.url_count),
        announcements=said_plural("%(num)s announcement planned",
                                  "%(num)s announcements planned", len(planned)))]
    if generation.left_out:
        said_line.append(said(" Left out of the sitemap by verification: %(counts)s.",
                              counts=publishing.describe_counts(generation.left_out)))
    return said_line


def max_wait(site: Site) -> timedelta:
    """The longest that changes wait while edits keep coming: ten delays, at least a minute."""
    return timedelta(seconds=max(10 * site.change_delay, 60))


def due(site, now: datetime) -> tuple[bool, bool]:
    """(its schedule is due, URL changes are ready: quiet for change_delay since the last one,
    or waiting for max_wait since the first; not while a failed run's retry time is ahead).

    `site` is a Site or a row with the same columns."""
    scheduled = site.schedule != "off" and (site.next_run_at is None or site.next_run_at <= now)
    quiet = site.changed_at is None or site.changed_at + timedelta(seconds=site.change_delay) <= now
    overdue = site.pending_since is not None and site.pending_since + max_wait(site) <= now
    retry_passed = site.retry_at is None or site.retry_at <= now
    changed = site.change_seq > site.generated_seq and (quiet or overdue) and retry_passed
    # A news article of the published files turned two days old (sitemaps.news).
    aged = site.news_due_at is not None and site.news_due_at <= now and retry_passed
    return scheduled, changed or aged


def due_site_ids(session: Session, now: datetime, *where) -> list[int]:
    """Ids of the sites due at `now` (of those matching `where`), read from the few columns
    `due` needs, with no object per site."""
    rows = session.execute(select(
        Site.id, Site.schedule, Site.next_run_at, Site.changed_at, Site.change_delay,
        Site.pending_since, Site.change_seq, Site.generated_seq, Site.retry_at,
        Site.news_due_at).where(
        or_(Site.schedule != "off", Site.change_seq > Site.generated_seq,
            Site.news_due_at <= now), *where)
        .order_by(Site.id)).all()
    return [row.id for row in rows if any(due(row, now))]


def changes_ready_at(site: Site) -> datetime | None:
    """When the site's waiting changes will be ready to generate (None: none wait)."""
    if site.change_seq <= site.generated_seq:
        return None
    ready = site.changed_at + timedelta(seconds=site.change_delay) if site.changed_at else utcnow()
    if site.pending_since is not None:
        ready = min(ready, site.pending_since + max_wait(site))
    return max(ready, site.retry_at) if site.retry_at else ready


def regenerate_if_due(site_id: int, app: Flask | None = None,
                      now: datetime | None = None) -> Generation | None:
    """The scheduled and after-change run of a site: generate if its schedule or its changes
    say so (asked again once the lease is held), then plan the announcements of what changed.

    None when nothing was due, or another process is generating the site."""
    app = app or current_app._get_current_object()
    generation = _generate_if_due(site_id, app, now or utcnow())
    if generation is not None and generation.status in ("succeeded", "unchanged"):
        _announce(app, site_id)
    return generation


def _generate_if_due(site_id: int, app: Flask, now: datetime) -> Generation | None:
    def still_due(session: Session, site: Site) -> str | None:
        scheduled, changed = due(site, now)
        if scheduled:  # committed with the run's first record
            site.next_run_at = next_run(site.schedule, site.timezone, now)
        return "schedule" if scheduled else "change" if changed else None

    try:
        return regenerate(site_id, app, now, when=still_due)  # the clock it was due by
    except SiteBusy:
        return None  # another process is on it


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
    ids = dict(many_rows.insert_rows(
        session, table, statement=insert(table).returning(table.c.site_id, table.c.id), rows=[
            {"site_id": run.site.id, "status": "unchanged" if run.unchanged else "succeeded",
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


def _announce(app: Flask, site_id: int) -> None:
    try:
        notify.announce(site_id, app)
    except Exception:  # planned again after the next generation
        log.exception("announcements of site %s could not be planned", site_id)
