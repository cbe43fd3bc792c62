"""A site's search engines, in the spirit of Search Console's Sitemaps report: per engine what
was submitted last and how it went; IndexNow's URLs one by one, each with a Resubmit button.
And the Dismiss button of the overview's health warnings."""

from __future__ import annotations

from flask import abort, current_app, flash, redirect, render_template, request, url_for
from flask_babel import gettext as _
from flask_login import current_user

from webapp import notify, tasks
from webapp.db import get_session
from webapp.errors import InvalidValue
from webapp.models import Delivery
from webapp.notify import summary
from webapp.urls import health
from webapp.views.auth import require
from webapp.views.dashboard import bp, load_site
from webapp.views.dashboard.history import statuses
from webapp.views.http import id_of


@bp.get("/sites/<slug>/engines")
@require("viewer")
def engines(slug):
    site = load_site(slug)
    session = get_session()
    submissions, more = summary.indexnow_urls(session, site)
    return render_template("dashboard/site_engines.html", site=site,
                           reports=summary.engines(session, site), submissions=submissions,
                           more=more, statuses=statuses(),
                           blocked=notify.blocked(site, current_app.config))


@bp.post("/sites/<slug>/engines/indexnow/resubmit")
@require("editor")
def indexnow_resubmit(slug):
    """A new IndexNow record of one URL submitted before, sent by a worker like any other."""
    site = load_site(slug)
    session = get_session()
    loc = request.form.get("loc", "")
    number = request.form.get("delivery", "")
    delivery = session.get(Delivery, id_of(number)) if id_of(number) is not None else None
    if delivery is None or delivery.site_id != site.id or not summary.submitted_in(delivery, loc):
        abort(404, _("That URL was not submitted to IndexNow in this announcement of the site."))
    planned = notify.announce_locs(session, site, delivery.generation_id, lambda: [loc],
                                   current_app.config)
    if not planned:
        flash(_("IndexNow is turned off for this site, or does not take this URL: nothing was "
                "sent."))
        return redirect(url_for("dashboard.engines", slug=slug))
    session.commit()
    ids = [record.id for record in planned]
    try:
        tasks.enqueue(current_app._get_current_object(), "deliver", only=ids)
    except tasks.QueueUnavailable:  # due now: the clock queues its delivery
        flash(_("%(url)s is submitted again with the next delivery (the task queue is "
                "unreachable now).", url=loc))
    else:
        flash(_("%(url)s is submitted to IndexNow again (announcement #%(id)s).", url=loc,
                id=ids[0]))
    return redirect(url_for("dashboard.engines", slug=slug))


@bp.post("/sites/<slug>/warnings/<kind>/dismiss")
@require("editor")
def warning_dismiss(slug, kind):
    """Hide a health warning until what it is about changes."""
    site = load_site(slug)
    session = get_session()
    try:
        health.dismiss(session, site, kind, request.form.get("fingerprint", ""),
                       current_user.id)
    except InvalidValue as exc:
        session.rollback()
        abort(400, str(exc))
    session.commit()
    flash(_("Warning dismissed. It shows again when what it counts changes."))
    return redirect(url_for("dashboard.site", slug=slug))
