"""Generations (history, diff to the one before, rollback) and announcements (the ledger)."""

from __future__ import annotations

from flask import abort, current_app, flash, redirect, render_template, request, url_for
from flask_babel import gettext as _
from sqlalchemy import func, select

from webapp import jobs, notify, tasks
from webapp.db import get_session
from webapp.errors import InvalidValue, NotFound
from webapp.leases import SiteBusy
from webapp.models import Delivery, Generation, utcnow
from webapp.sitemaps import MissingBody, diff, get_store, sections
from webapp.views.auth import require
from webapp.views.dashboard import bp, load_site
from webapp.views.dashboard.labels import status_name
from webapp.jobs import site_numbers

PAGE = 50
MAX_PAGE = 1_000_000


def statuses() -> dict[str, str]:
    """What each ledger status means, in plain words, for the pages' legends."""
    return {
        "pending": _("waiting for its next attempt"),
        "sending": _("being sent now"),
        "delivered": _("the engine received it"),
        "accepted": _("received; the engine is still checking the key (keep the key file "
                      "online)"),
        "failed": _("refused, or out of attempts: the outcome says why and what to fix"),
    }


def triggers() -> dict[str, str]:
    """What started a generation, as the pages name it."""
    return {"schedule": _("Schedule"), "change": _("URL change"), "button": _("Dashboard button"),
            "api": _("API"), "cli": _("Command line"), "rollback": _("Rollback")}


@bp.get("/sites/<slug>/generations")
@require("viewer")
def generations(slug):
    site = load_site(slug)
    runs = get_session().scalars(select(Generation).where(Generation.site_id == site.id)
                                 .order_by(Generation.id.desc()).limit(100)).all()
    store = get_store(current_app)
    kept = store.kept_generations(site.storage_key)
    numbers = site_numbers(get_session(), site.id,
                           [run.id for run in runs] + [run.rollback_of for run in runs])
    return render_template("dashboard/generations.html", site=site, runs=runs, kept=kept,
                           published=store.current_generation(site.storage_key),
                           triggers=triggers(), numbers=numbers)


@bp.get("/sites/<slug>/generations/<id:generation_id>")
@require("viewer")
def generation(slug, generation_id):
    site = load_site(slug)
    session = get_session()
    run = session.get(Generation, generation_id)
    if run is None or run.site_id != site.id:
        abort(404, _("There is no such generation of this site."))
    store = get_store(current_app)
    previous = session.scalar(select(Generation.id).where(
        Generation.site_id == site.id, Generation.id < run.id,
        Generation.status == "succeeded").order_by(Generation.id.desc()).limit(1))
    new = store.generation_set(site.storage_key, run.id)
    old = store.generation_set(site.storage_key, previous) if previous else None
    try:
        changes = diff(old, new, store.local) if new and old else None
    except MissingBody:  # pruned while the page was being made: as if no longer kept
        changes = None
    return render_template("dashboard/generation.html", site=site, run=run, previous=previous,
                           changes=changes, kept=new is not None, triggers=triggers(),
                           numbers=site_numbers(session, site.id,
                                                [run.id, run.rollback_of, previous]),
                           file_groups=sections.file_sections(site, run.files))


@bp.post("/sites/<slug>/generations/<id:generation_id>/rollback")
@require("editor")
def generation_rollback(slug, generation_id):
    site = load_site(slug)
    try:
        result = jobs.rollback(site.id, generation_id)
    except (NotFound, SiteBusy) as exc:
        flash(str(exc))
    else:
        numbers = site_numbers(get_session(), site.id, [generation_id, result.id])
        flash(_("Generation %(old)s's files are published again as generation %(new)s "
                "(%(status)s).", old=numbers.get(generation_id, generation_id),
                new=numbers.get(result.id, result.id), status=status_name(result.status)))
    return redirect(url_for("dashboard.generations", slug=slug))


def _ledger_args() -> tuple[str, str, int]:
    """The ledger's engine and status filters and page number; a 400 that names the
    parameter and its rule for anything else."""
    engine, status = request.args.get("engine", ""), request.args.get("status", "")
    if engine and engine not in notify.ENGINES:
        abort(400, _("engine must be one of %(names)s; not %(value)s.",
                     names=", ".join(notify.ENGINES), value=repr(engine[:40])))
    if status and status not in statuses():
        abort(400, _("status must be one of %(names)s; not %(value)s.",
                     names=", ".join(statuses()), value=repr(status[:40])))
    number = request.args.get("page", "1")
    if not (number.isascii() and number.isdigit() and 1 <= int(number) <= MAX_PAGE):
        abort(400, _("page must be a whole number from 1 to %(most)s; not %(value)s.",
                     most=f"{MAX_PAGE:,}", value=repr(number[:40])))
    return engine, status, int(number)


@bp.get("/sites/<slug>/announcements")
@require("viewer")
def announcements(slug):
    site = load_site(slug)
    engine, status, number = _ledger_args()
    where = [Delivery.site_id == site.id]
    if engine:
        where.append(Delivery.engine == engine)
    if status:
        where.append(Delivery.status == status)
    session = get_session()
    total = session.scalar(select(func.count()).select_from(Delivery).where(*where)) or 0
    rows = session.scalars(select(Delivery).where(*where).order_by(Delivery.id.desc())
                           .offset((number - 1) * PAGE).limit(PAGE)).all()
    kept = {name: value for name, value in (("engine", engine), ("status", status)) if value}
    return render_template("dashboard/announcements.html", site=site, rows=rows,
                           statuses=statuses(), engines=notify.ENGINES, engine=engine,
                           status=status, kept=kept, page=number, total=total,
                           pages=max(1, -(-total // PAGE)), first=(number - 1) * PAGE + 1)


@bp.post("/sites/<slug>/announcements/<id:delivery_id>/retry")
@require("editor")
def announcement_retry(slug, delivery_id):
    site = load_site(slug)
    session = get_session()
    delivery = session.get(Delivery, delivery_id)
    if delivery is None or delivery.site_id != site.id:
        abort(404, _("There is no such announcement of this site."))
    try:
        notify.retry(session, delivery, current_app.config, utcnow())
    except InvalidValue as exc:
        session.rollback()
        flash(str(exc))
    else:
        session.commit()
        try:
            tasks.enqueue(current_app._get_current_object(), "deliver", only=[delivery_id])
        except tasks.QueueUnavailable:  # due now: the clock queues its delivery
            flash(_("Announcement #%(id)s is due again; the task queue is unreachable now, so "
                    "it goes out with the next delivery.", id=delivery_id))
        else:
            session.expire_all()
            flash(_("Announcement #%(id)s is sent again by a worker; now: %(status)s. %(outcome)s",
                    id=delivery_id, status=status_name(delivery.status), outcome=delivery.outcome or ""))
    return redirect(url_for("dashboard.announcements", slug=slug))
