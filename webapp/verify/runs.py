"""A verification run of one site: every live URL checked on the live site, a few at a time
per host with a pause between requests, the findings written in batches. A run records on
each check that it made it, so a run that stopped (a restart, an error) is continued by the
next one instead of starting again.

Findings that change what is published (a URL entering or leaving the sitemap by the site's
`leave_out`, a lastmod taken from content that moved) take a change number like any other
write of the site's URLs: incremental regeneration and IndexNow carry exactly those.
"""

from __future__ import annotations

import asyncio
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime, timedelta

from flask import Flask
from sqlalchemy import func, or_, select, update
from sqlalchemy.dialects import postgresql, sqlite
from sqlalchemy.orm import Session

from webapp import leases
from webapp.db import new_session
from webapp.errors import NotFound
from webapp.models import Site, Url, UrlCheck, VerifyRun, utcnow
from webapp.outbound import Crawler, Policy, StoppedByOwnRules
from webapp.said import Line
from webapp.schedules import next_run
from webapp.urls import next_change_seq
from webapp.verify.check import OUTCOMES, Scope, Seen, check
from webapp.verify.robots import robots_for
from webapp.verify.settings import ignore_patterns, left_out, user_agent_of

BATCH = 500  # checks written per commit
SILENT = timedelta(minutes=10)  # a running run unheard of for this long has stopped
_SEEN_FIELDS = ("outcome", "status", "final_url", "noindex", "canonical", "content_type",
                "etag", "last_modified", "fingerprint", "error")


class VerifyBusy(Exception):
    """Another process is verifying the site now."""


@dataclass(frozen=True)
class Summary:
    """How a run ended: its outcomes counted, and notes (robots.txt) worth reading."""

    run_id: int
    counts: dict[str, int]
    note: Line | None = None  # webapp.said

    @property
    def checked(self) -> int:
        return sum(self.counts.get(name, 0) for name in OUTCOMES)

    def line(self) -> str:
        """The one line the command ends with."""
        c = self.counts
        return (f"{self.checked} checked: {c.get('ok', 0)} ok, {c.get('broken', 0)} broken, "
                f"{c.get('redirected', 0)} redirected, {c.get('noindex', 0)} noindex, "
                f"{c.get('canonical', 0)} canonical elsewhere, "
                f"{c.get('unreachable', 0)} unreachable")


@dataclass(frozen=True)
class Settings:
    """What a run needs of the app's configuration."""

    policy: Policy
    concurrency: int
    delay: float

    @classmethod
    def of(cls, config) -> Settings:
        return cls(Policy(config["VERIFY_TIMEOUT"], Policy.of(config).allow),
                   config["VERIFY_CONCURRENCY"], config["VERIFY_DELAY_MS"] / 1000)


def _claim(session: Session, site: Site, owner: str, now: datetime) -> VerifyRun:
    """The site's unfinished run, taken over, or a new one; VerifyBusy while a live process
    runs one."""
    last = session.scalar(select(VerifyRun).where(VerifyRun.site_id == site.id)
                          .order_by(VerifyRun.id.desc()).limit(1))
    if last is not None and last.status == "running" and last.owner \
            and not leases.gone(last.owner) and (last.heartbeat_at or last.started_at) > now - SILENT:
        raise VerifyBusy(f"site {site.slug} is being verified by {last.owner} (run {last.id}); "
                         "its progress is on the Verification page")
    if last is not None and last.status != "done":
        taken = session.execute(update(VerifyRun).where(
            VerifyRun.id == last.id, VerifyRun.owner.is_(None) if last.owner is None
            else VerifyRun.owner == last.owner).values(
            status="running", owner=owner, heartbeat_at=now, error=None)).rowcount
        if not taken:
            raise VerifyBusy(f"site {site.slug}: another process took run {last.id} just now")
        run = last
    else:
        run = VerifyRun(site_id=site.id, status="running", owner=owner, started_at=now,
                        heartbeat_at=now, total=0, done=0)
        session.add(run)
    site.verify_next_run_at = next_run(site.verify_schedule, site.timezone, now)
    session.commit()
    return run


def _pending(session: Session, site_id: int, run_id: int, after_id: int, limit: int):
    """Live URLs the run has not checked yet, in id order, with what their last check saw."""
    return session.execute(
        select(Url.id, Url.loc, Url.lastmod, UrlCheck.given_lastmod, UrlCheck.content_changed_at,
               *(getattr(UrlCheck, name) for name in _SEEN_FIELDS))
        .outerjoin(UrlCheck, UrlCheck.url_id == Url.id)
        .where(Url.site_id == site_id, Url.deleted_at.is_(None), Url.id > after_id,
               or_(UrlCheck.run_id.is_(None), UrlCheck.run_id != run_id))
        .order_by(Url.id).limit(limit)).all()


def _before(row) -> Seen | None:
    values = dict(zip(_SEEN_FIELDS, row[5:]))
    return None if values["outcome"] is None else Seen(**values)


def _upsert(session: Session, rows: list[dict]) -> None:
    """Insert or replace checks by URL: one statement, executed for many rows."""
    dialect = postgresql if session.get_bind().dialect.name == "postgresql" else sqlite
    statement = dialect.insert(UrlCheck)
    statement = statement.on_conflict_do_update(
        index_elements=["url_id"],
        set_={name: statement.excluded[name] for name in rows[0] if name != "url_id"})
    session.connection().execute(statement, rows)


def _write(session: Session, site: Site, run: VerifyRun, results: list, now: datetime) -> None:
    """Store a batch of findings; URLs whose published entry they change get a change number."""
    outs = left_out(site.leave_out)
    dated = site.lastmod_source != "given"
    rows, changed, unchanged = [], [], []
    for row, before, seen in results:
        changed_at = row.content_changed_at
        fingerprint = seen.fingerprint or (before.fingerprint if before else None)
        if seen.fingerprint and seen.fingerprint != (before.fingerprint if before else None):
            changed_at = now  # the first time seen, or the content moved
        elif seen.fingerprint and row.given_lastmod and row.lastmod != row.given_lastmod:
            run.dates_moved = (run.dates_moved or 0) + 1  # the date moved, the page did not
        if (dated and changed_at != row.content_changed_at) or \
                (seen.outcome in outs) != (before is not None and before.outcome in outs):
            changed.append(row.id)
        values = {name: getattr(seen, name) for name in _SEEN_FIELDS}
        values.update(url_id=row.id, site_id=site.id, run_id=run.id, checked_at=now,
                      fingerprint=fingerprint, content_changed_at=changed_at,
                      given_lastmod=row.lastmod)
        if seen.outcome == "blocked" and before is not None:  # not fetched: keep what was seen
            values.update({name: getattr(before, name) for name in _SEEN_FIELDS
                           if name not in ("outcome", "error")})
        if before is not None and row.given_lastmod == row.lastmod \
                and changed_at == row.content_changed_at \
                and all(values[name] == getattr(before, name) for name in _SEEN_FIELDS):
            unchanged.append(row.id)  # as stored (a 304, mostly): only the run and time move
        else:
            rows.append(values)
    if rows:
        _upsert(session, rows)
    if unchanged:
        session.execute(update(UrlCheck).where(UrlCheck.url_id.in_(unchanged))
                        .values(run_id=run.id, checked_at=now)
                        .execution_options(synchronize_session=False))
    if changed:
        seq = next_change_seq(session, site.id)
        session.execute(update(Url).where(Url.id.in_(changed)).values(change_seq=seq)
                        .execution_options(synchronize_session=False))
    run.done += len(results)
    run.heartbeat_at = utcnow()
    session.commit()


def _counts(session: Session, run_id: int) -> dict[str, int]:
    return dict(session.execute(select(UrlCheck.outcome, func.count())
                                .where(UrlCheck.run_id == run_id)
                                .group_by(UrlCheck.outcome)).all())


def verify_site(app: Flask, site_id: int,
                progress: Callable[[int, int], None] | None = None,
                batch: int = BATCH) -> Summary:
    """Check every live URL of the site (continuing its unfinished run, if any)."""
    settings, owner = Settings.of(app.config), leases.new_owner()
    with new_session(app) as session:
        site = session.get(Site, site_id)
        if site is None:
            raise NotFound(f"no site with id {site_id}")
        run = _claim(session, site, owner, utcnow())
        run.total = session.scalar(select(func.count()).select_from(Url).where(
            Url.site_id == site_id, Url.deleted_at.is_(None))) or 0
        run.done = session.scalar(select(func.count()).select_from(UrlCheck).where(
            UrlCheck.run_id == run.id)) or 0
        session.commit()
        try:
            note = asyncio.run(_run(session, site, run, settings, progress, batch))
        except BaseException as exc:
            session.rollback()
            run.status, run.error = "failed", (str(exc) if isinstance(exc, StoppedByOwnRules)
                                               else f"{type(exc).__name__}: {exc}")[:2000]
            run.owner, run.finished_at = None, utcnow()
            session.commit()
            raise
        run.counts = _counts(session, run.id)
        run.status, run.finished_at, run.owner = "done", utcnow(), None
        session.commit()
        return Summary(run.id, dict(run.counts), note)


async def _run(session: Session, site: Site, run: VerifyRun, settings: Settings,
               progress: Callable[[int, int], None] | None, batch: int) -> Line | None:
    """robots.txt, then the run's remaining URLs, on this thread's own asyncio loop (see
    outbound.Crawler); what robots.txt gave to note."""
    agent = user_agent_of(site.user_agent)
    async with Crawler(settings.policy, agent, connections=settings.concurrency) as crawler:
        robots = await robots_for(crawler, site.base_url, agent)
        scope = Scope(site.base_url, robots, ignore_patterns(site.verify_ignore),
                      site.encoding or "utf-8")
        await _check_all(session, site, run, crawler, scope, settings, progress, batch)
    return robots.note


async def _check_all(session: Session, site: Site, run: VerifyRun, crawler: Crawler,
                     scope: Scope, settings: Settings,
                     progress: Callable[[int, int], None] | None, batch: int) -> None:
    """Check the run's remaining URLs, `settings.concurrency` at a time (a task each, pausing
    between its requests), writing each batch as it fills: the URLs are read from the
    database a batch at a time, so memory stays flat whatever the site's size."""
    queue: deque = deque()
    finished: list = []
    after, exhausted = 0, False

    def next_row():
        nonlocal after, exhausted
        if not queue and not exhausted:
            rows = _pending(session, site.id, run.id, after, batch)
            exhausted = len(rows) < batch
            if rows:
                after = rows[-1].id
            queue.extend(rows)
        return queue.popleft() if queue else None

    def write() -> None:
        _write(session, site, run, finished[:batch], utcnow())
        del finished[:batch]  # the same list: a task awaiting its check appends to it
        if progress:
            progress(run.done, run.total)

    async def work() -> None:
        while (row := next_row()) is not None:
            before = _before(row)
            seen = await check(crawler, scope, row.loc, before)
            finished.append((row, before, seen))
            if len(finished) >= batch:
                write()
            if settings.delay:
                await asyncio.sleep(settings.delay)  # politeness: a pause between requests

    try:
        async with asyncio.TaskGroup() as group:
            for _ in range(settings.concurrency):
                group.create_task(work())
    except BaseExceptionGroup as failed:
        raise failed.exceptions[0]  # what went wrong, not that a task group failed
    if finished:
        write()
