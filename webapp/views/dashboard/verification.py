"""A site's Verification page: what the last checks of its URLs on the live site found (each
count a link to those URLs), the run under way or the last one, and Verify now."""

from __future__ import annotations

from flask import current_app, redirect, render_template, url_for
from sqlalchemy import select

from webapp import tasks
from webapp.db import get_session
from webapp.models import Task
from webapp.verify import health as verification
from webapp.verify.settings import left_out, user_agent_of
from webapp.views.auth import require
from webapp.views.dashboard import bp, load_site


@bp.get("/sites/<slug>/verification")
@require("viewer")
def verification_page(slug):
    site = load_site(slug)
    session = get_session()
    found = verification.health(session, site)
    task = session.scalar(select(Task).where(Task.site_id == site.id, Task.kind == "verify")
                          .order_by(Task.created_at.desc()).limit(1))
    return render_template("dashboard/verification.html", site=site, health=found,
                           shown=verification.SHOWN, left_out=left_out(site.leave_out),
                           user_agent=user_agent_of(site.user_agent),
                           task=tasks.read(session, task.id) if task else None,
                           dates_moved=verification.dates_moved_warning(found.last))


@bp.post("/sites/<slug>/verify")
@require("editor")
def site_verify(slug):
    site = load_site(slug)
    session = get_session()
    task_id = tasks.start(session, current_app._get_current_object(), "verify", site)
    session.commit()
    return redirect(url_for("dashboard.task", task_id=task_id))
