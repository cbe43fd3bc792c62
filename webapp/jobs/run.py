"""A site's run: generate and publish it (when due, or now), or roll it back to an older
set; each holds the site's lease (leases.py) and is recorded as a generation whatever
happens."""

from __future__ import annotations

import contextlib
import logging
import time
from collections.abc import Callable
from datetime import datetime, timedelta

from flask import Flask, current_app
from sqlalchemy import case, update
from sqlalchemy.orm import Session

from webapp import leases, notify
from webapp.db import new_session
from webapp.errors import NotFound
from webapp.jobs.due import due
from webapp.jobs.numbers import next_numbers
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
    republish_site,
)
from webapp.urls import committed_change_seq
from webapp.verify import publishing

log = logging.getLogger("webapp.jobs")  # one logger for every run, whichever module ran it

RETRY_AFTER_FAILURE = timedelta(minutes=5)


def _start(session: Session, site: Site, **fields) -> Generation:
    """A committed record for a new run. The caller holds the site's lease, so a run of the
    site still marked running stopped without being able to say so."""
    now = utcnow()
    session.execute(update(Generation).where(Generation.site_id == site.id, UNFINISHED_RUN).values(
        status="failed", finished_at=now, error="interrupted: the run stopped unfinished"))
    generation = Generation(site_id=site.id, number=next_numbers(session, [site.id])[site.id],
                            status="running", started_at=now, **fields)
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
            raise NotFound(f"generation {target.number} was published under another sitemap URL "
                           f"(it has no {entry}); regenerate instead")
        if kept is None:
            raise NotFound(f"the files of generation {target.number} are no longer kept (only the "
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
        raise RuntimeError(f"generation {generation.number} failed: {generation.error}")
    planned, _ = notify.notify_site(site_id, app)
    said_line = [said_plural(
        "generation %(id)s: %(status)s, %(urls)s in %(num)s file; %(announcements)s.",
        "generation %(id)s: %(status)s, %(urls)s in %(num)s files; %(announcements)s.",
        generation.file_count, id=generation.number, status=said(generation.status),
        urls=said_plural("%(num)s URL", "%(num)s URLs", generation.url_count),
        announcements=said_plural("%(num)s announcement planned",
                                  "%(num)s announcements planned", len(planned)))]
    if generation.left_out:
        said_line.append(said(" Left out of the sitemap by verification: %(counts)s.",
                              counts=publishing.describe_counts(generation.left_out)))
    return said_line


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


def _announce(app: Flask, site_id: int) -> None:
    try:
        notify.announce(site_id, app)
    except Exception:  # planned again after the next generation
        log.exception("announcements of site %s could not be planned", site_id)
