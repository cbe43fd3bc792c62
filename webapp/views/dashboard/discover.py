"""The Discover page: start a crawl of the live site, review what it found (accept all, accept
by prefix, ignore by pattern), and the stored URLs the exclusion rules now refuse."""

from __future__ import annotations

from flask import current_app, flash, redirect, render_template, request, url_for
from flask_babel import gettext as _
from flask_babel import ngettext
from sqlalchemy import select

from webapp import discover, tasks
from webapp.db import get_session
from webapp.errors import InvalidValue, each_error
from webapp.models import MAX_ID, Task
from webapp.urls import delete_urls, health
from webapp.views.auth import require
from webapp.views.dashboard import bp, load_site

SHOWN = ("new", "known", "excluded", "other")


def _running(site) -> dict | None:
    """The site's crawl in progress, if any (one whose worker stopped does not count)."""
    session = get_session()
    task_id = session.scalar(select(Task.id).where(
        Task.site_id == site.id, Task.kind == "discover", Task.status.in_(("queued", "running")))
        .order_by(Task.created_at.desc()).limit(1))
    state = task_id and tasks.read(session, task_id)
    return state if state and state["status"] in ("queued", "running") else None


def _page(site, errors: dict[str, str] | None = None, form=None, status: int = 200):
    session = get_session()
    show = request.args.get("show", "new")
    show = show if show in SHOWN else "new"
    after = request.args.get("after", "")
    # Ids are 32-bit columns: a larger `after` means "past them all"; anything but ASCII
    # digits (int() refuses superscripts that isdigit() accepts) means the first page.
    start = min(int(after), MAX_ID) if after.isascii() and after.isdigit() else 0
    rows, more = discover.rows(session, site, show, start)
    excluded, _ids = health.excluded_stored(session, site, scan=health.EXCLUDED_SCAN)
    return render_template(
        "dashboard/discover.html", site=site, counts=discover.counts(session, site), rows=rows,
        show=show, shown=SHOWN, next_after=rows[-1].id if more else None,
        running=_running(site), last=tasks.latest(session, "discover", site.id),
        excluded_stored=excluded, excluded_scan=health.EXCLUDED_SCAN, errors=errors or {},
        form=form or {}), status


@bp.get("/sites/<slug>/discover")
@require("viewer")
def discover_page(slug):
    return _page(load_site(slug))


@bp.post("/sites/<slug>/discover")
@require("editor")
def discover_start(slug):
    site = load_site(slug)
    form = request.form
    try:
        limits = discover.check_limits(form.get("max_pages", ""), form.get("max_depth", ""),
                                       form.get("max_minutes", ""))
    except InvalidValue as exc:
        return _page(site, {error.field: str(error) for error in each_error(exc)}, form, 422)
    if _running(site) is not None:
        flash(_("A crawl of this site is already running."))
        return redirect(url_for("dashboard.discover_page", slug=slug))
    session = get_session()
    task_id = tasks.start(session, current_app._get_current_object(), "discover", site,
                          max_pages=limits.max_pages, max_depth=limits.max_depth,
                          max_minutes=limits.max_minutes)
    session.commit()
    return redirect(url_for("dashboard.task", task_id=task_id))


@bp.post("/sites/<slug>/discover/accept")
@require("editor")
def discover_accept(slug):
    site = load_site(slug)
    session = get_session()
    report = discover.accept(session, site, request.form.get("prefix") or None)
    session.commit()
    flash(ngettext("Added %(num)d URL to the site.", "Added %(num)d URLs to the site.",
                   report.created))
    for error in report.errors[:10]:
        flash(_("Not added: %(reason)s", reason=error.message))
    return redirect(url_for("dashboard.discover_page", slug=slug))


@bp.post("/sites/<slug>/discover/ignore")
@require("editor")
def discover_ignore(slug):
    site = load_site(slug)
    session = get_session()
    try:
        ignored = discover.ignore(session, site, request.form.get("pattern", ""))
    except InvalidValue as exc:
        return _page(site, {"pattern": str(exc)}, request.form, 422)
    session.commit()
    flash(ngettext("Ignored %(num)d URL.", "Ignored %(num)d URLs.", ignored))
    return redirect(url_for("dashboard.discover_page", slug=slug))


@bp.post("/sites/<slug>/discover/delete-excluded")
@require("editor")
def discover_delete_excluded(slug):
    site = load_site(slug)
    session = get_session()
    _counts, ids = health.excluded_stored(session, site)
    deleted = delete_urls(session, site, ids)
    session.commit()
    flash(ngettext("Deleted %(num)d stored URL that the exclusion rules match.",
                   "Deleted %(num)d stored URLs that the exclusion rules match.", deleted))
    return redirect(url_for("dashboard.discover_page", slug=slug))
