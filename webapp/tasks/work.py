"""The tasks workers run. Each takes plain JSON arguments (ids, not objects), as its annotations
say (arguments.py checks them where it starts), and is safe to run twice: a generation holds the
site's lease and asks again whether it is due, an announcement is claimed before it is sent, a
recorded task that has finished is not run again.

Work asked for by a person or a program (`regenerate_now`, `notify_now`, `import_urls`,
`preflight`, `check_setup`) writes its progress and outcome to its task record; scheduled and after-change
work (`regenerate_due`, `deliver`) is recorded where it always was: generations and the ledger.
"""

from __future__ import annotations

import gzip
import io
import logging
import shutil
from collections.abc import Callable
from pathlib import Path
from typing import Annotated

from celery.signals import task_revoked
from flask import Flask, current_app

from webapp import discover, jobs, notify
from webapp import verify as verification
from webapp.db import new_session, session_scope
from webapp.errors import InvalidValue, NotFound, rule_text
from webapp.leases import SiteBusy
from webapp.models import TRIGGERS, Site
from webapp.outbound import OutboundError, Policy, StoppedByOwnRules
from webapp.said import Line, said, said_plural, verbatim
from webapp.sitemaps import get_store
from webapp.sites import setup_check
from webapp.tasks import queue, records, spool
from webapp.tasks.arguments import Id, Rule, TaskId, checked, what_is_wrong
from webapp.urls import ENCODINGS, ImportFormatError, fetch_source, import_opened, open_import

log = logging.getLogger(__name__)

# What the work raises for input it refuses or a site that is busy: said to the person, and
# logged in one line at INFO, as any other expected answer (a bad upload is not a fault).
EXPECTED = (InvalidValue, NotFound, ImportFormatError, SiteBusy, OutboundError,
            StoppedByOwnRules, verification.VerifyBusy)


def _app() -> Flask:
    return current_app._get_current_object()


Trigger = Annotated[str, Rule(TRIGGERS.__contains__, f"one of {', '.join(TRIGGERS)}")]
Encoding = Annotated[str, Rule(ENCODINGS.__contains__, f"one of {', '.join(ENCODINGS)}")]


def _recorded(task_id: str, work: Callable[[records.Progress], list[Line]]) -> None:
    """Run `work(progress)` for a task record; its return value is the closing message, as
    lines its readers hear in their own language (said.py). Whatever the outcome, finishing
    drops the record's upload (so does a cancellation: _revoked); only a task whose worker
    died keeps it, to be retried."""
    app = _app()
    progress = records.begin(app, task_id)
    if progress is None:
        return  # finished already: the message was delivered a second time
    try:
        message, status = work(progress), "done"
    except Exception as exc:  # shown on the page: the work's own errors say what to do
        if isinstance(exc, EXPECTED):
            log.info("task %s refused: %s", task_id, " ".join(str(exc).split()))
        else:
            log.exception("task %s failed", task_id)
        if isinstance(exc, EXPECTED) and hasattr(exc, "said_line"):
            message = [exc.said_line()]  # in each reader's language, where it has words of its own
        else:
            message = [verbatim(str(exc) or type(exc).__name__)]
        status = "failed"
    records.finish(progress, status, message)


def regenerate_due(site_ids: list[Id] | Id) -> None:
    """The scheduled or after-change runs of some sites, then the sending of their
    announcements. The clock hands sites over in small batches: ten thousand due sites are a
    few hundred messages, not ten thousand, and the small sites of a batch are generated
    together (jobs.regenerate_many_if_due)."""
    app = _app()
    ids = [site_ids] if isinstance(site_ids, int) else list(site_ids)
    queue.unmark(app, ids)  # from now on, a new change enqueues a run of its own
    ran = jobs.regenerate_many_if_due(ids, app)
    if any(status is not None for status in ran.values()):
        try:
            queue.enqueue(app, "deliver")
        except queue.QueueUnavailable as exc:  # the clock queues deliveries that are due
            log.warning("delivery of %d sites' announcements not queued (%s)", len(ids), exc)
    queue.again_when_ready(app, ids)


def deliver(site_id: Id | None = None, only: list[Id] | None = None) -> None:
    """One attempt at every announcement that is due (of a site, or only some)."""
    notify.deliver(_app(), site_id=site_id, only=frozenset(only) if only else None)


def regenerate_now(task_id: TaskId, site_id: Id, trigger: Trigger | None = None) -> None:
    """"Regenerate now", asked for with the dashboard's button or the API (`trigger`)."""
    app = _app()
    _recorded(task_id, lambda progress: [jobs.regenerate_now(site_id, app, progress,
                                                             trigger)])


def notify_now(task_id: TaskId, site_id: Id) -> None:
    app = _app()

    def work(_progress) -> list[Line]:
        planned, attempted = notify.notify_site(site_id, app)
        if not planned and not attempted:
            return [said("Nothing to announce: no generation changed anything since the last "
                         "time.")]
        return [said_plural("%(num)s announcement planned, %(sent)s sent; see Announcements.",
                            "%(num)s announcements planned, %(sent)s sent; see Announcements.",
                            len(planned), sent=len(attempted))]

    _recorded(task_id, work)


def _detached_site(app: Flask, site_id: int) -> Site:
    with new_session(app) as session:
        site = session.get(Site, site_id)
        if site is None:
            raise NotFound("the site was deleted")
        session.expunge(site)
        return site


def preflight(task_id: TaskId, site_id: Id) -> None:
    app = _app()

    def work(_progress) -> list[Line]:
        findings = notify.preflight.check(_detached_site(app, site_id), app.config)
        return [said("OK: %(finding)s", finding=f.said) if f.ok
                else said("Problem: %(finding)s", finding=f.said) for f in findings]

    _recorded(task_id, work)


def check_setup(task_id: TaskId, site_id: Id) -> None:
    """"Test my setup": fetch through the site's own host what crawlers fetch, and say what
    each address answered."""
    app = _app()

    def work(_progress) -> list[Line]:
        site = _detached_site(app, site_id)
        outcomes, notes = setup_check.check_setup(
            site, get_store(app).published(site.storage_key), Policy.of(app.config))
        return setup_check.said_lines(outcomes, notes)

    _recorded(task_id, work)


def import_urls_task(task_id: TaskId, site_id: Id, source_url: str | None = None,
                     rewrite_origin: bool = False, encoding: Encoding = "utf-8") -> None:
    """Import what the task's record carries (an upload, gzip-compressed) or what
    `source_url` answers, fetched here on the worker; `rewrite_origin`: see
    urls.import_opened; `encoding` is that of a CSV or list."""
    app = _app()
    policy = Policy.of(app.config)

    def work(progress: records.Progress) -> list[Line]:
        site = _detached_site(app, site_id)
        with spool.spooled(app, task_id) as handle:
            if source_url:
                handle.write(fetch_source(site, source_url, policy))
            else:
                payload = records.take_payload(app, task_id)
                if payload is None:
                    raise NotFound("the uploaded file is no longer kept; upload it again")
                with gzip.GzipFile(fileobj=io.BytesIO(payload)) as upload:
                    shutil.copyfileobj(upload, handle, 1 << 20)
            handle.flush()
            with session_scope(app) as session, open_import(
                    Path(handle.name), source_url or rule_text("the uploaded file"), site.base_url,
                    source_url or None, policy, encoding,
                    max_unpacked=app.config["MAX_UNPACKED_MB"] << 20) as stream:
                report = import_opened(session, session.get(Site, site_id), stream,
                                       rewrite_origin, progress)
        progress.result["rejected"] = report.rejected  # the site's health shows it
        return report.report_lines() + report.listed()

    _recorded(task_id, work)


def discover_task(task_id: TaskId, site_id: Id, max_pages: int, max_depth: int,
                  max_minutes: float) -> None:
    """A discovery crawl of the site; what it found waits on the site's Discover page."""
    app = _app()

    def work(progress: records.Progress) -> list[Line]:
        limits = discover.check_limits(max_pages, max_depth, max_minutes)
        report = discover.crawl(app, site_id, limits, progress)
        progress.result.update(found=report.found, new=report.new, known=report.known,
                               excluded=report.excluded, accepted=report.accepted)
        lines: list[Line] = [said(
            "%(found)s found: %(new)s new, %(known)s known, %(excluded)s excluded",
            found=report.found, new=report.new, known=report.known, excluded=report.excluded)]
        if report.robots:
            lines.append(report.robots)
        if report.cut():
            lines.append(verbatim(report.cut()))
        if report.stopped_by:
            lines.append(said("stopped at the %(limit)s limit", limit=report.stopped_by))
        if report.accepted:
            lines.append(said_plural("%(num)s new URL added (the site's discover_mode is add)",
                                     "%(num)s new URLs added (the site's discover_mode is add)",
                                     report.accepted))
        return lines

    _recorded(task_id, work)


def verify_now(task_id: TaskId, site_id: Id) -> None:
    """Verify a site's URLs (continuing its unfinished run, if any), with progress."""
    app = _app()

    def work(progress: records.Progress) -> list[Line]:
        report = verification.verify_site(app, site_id, progress)
        counts = report.counts
        return [said("%(checked)s checked: %(ok)s ok, %(broken)s broken, %(redirected)s "
                     "redirected, %(noindex)s noindex, %(canonical)s canonical elsewhere, "
                     "%(unreachable)s unreachable", checked=report.checked,
                     **{name: counts.get(name, 0) for name in (
                         "ok", "broken", "redirected", "noindex", "canonical", "unreachable")})
                ] + ([report.note] if report.note else [])

    _recorded(task_id, work)


@task_revoked.connect
def _revoked(sender=None, request=None, **_kwargs) -> None:
    """A recorded task revoked (`celery control revoke`), before it started or, with
    --terminate, while it ran: its record says it was cancelled, and keeps no upload."""
    names = {f"webapp.{name}" for name in KINDS.values()}
    if sender is None or sender.name not in names or not getattr(request, "args", None):
        return
    task_id = request.args[0]
    if not what_is_wrong(task_id, TaskId, "task_id"):
        records.cancel(sender.flask_app, task_id)


# The tasks by name: what the web asks for (by `kind` of its record) and what the clock and
# changes enqueue; each checks its arguments first.
TASKS = {name: checked(f"webapp.{name}", function) for name, function in {
    "regenerate_due": regenerate_due, "deliver": deliver, "regenerate_now": regenerate_now,
    "notify_now": notify_now, "preflight": preflight, "check_setup": check_setup,
    "import_urls": import_urls_task,
    "discover": discover_task, "verify_now": verify_now}.items()}
KINDS = {"regenerate": "regenerate_now", "notify": "notify_now", "import": "import_urls",
         "pre-flight check": "preflight", "setup check": "check_setup", "discover": "discover",
         "verify": "verify_now"}
