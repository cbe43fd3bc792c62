"""Progress of long work: a page with a progress bar, and the JSON it polls."""

from __future__ import annotations

from datetime import datetime

from flask import abort, current_app, flash, jsonify, redirect, render_template, url_for
from flask_babel import format_number, format_percent, ngettext
from flask_babel import gettext as _

from webapp import tasks
from webapp.db import get_session
from webapp.models import Site
from webapp.said import render
from webapp.views.auth import require
from webapp.views.dashboard import bp


def _task(task_id: str) -> dict:
    state = tasks.read(get_session(), task_id)
    if state is None:
        abort(404, _("There is no such task (finished tasks are kept for 7 days)."))
    return state


def shown(state: dict) -> dict:
    """What the page says of a task, in the reader's language: the count with its unit, the
    status, and the message."""
    done, total = state["done"], state["total"]
    if not total:
        count = ""
    elif state["kind"] == "regenerate":  # a generation counts the URLs it has written
        count = ngettext("%(done)s of %(total)s URL", "%(done)s of %(total)s URLs", total,
                         done=format_number(done), total=format_number(total))
    else:  # an import counts characters of a CSV or entries of a sitemap: a share says both
        count = _("%(percent)s read", percent=format_percent(done / total))
    status = {"queued": _("Waiting for a worker…"), "running": _("Working…"),
              "done": _("Done."), "failed": _("Failed.")}[state["status"]]
    said = state.get("said")
    message = "\n".join(render(line) for line in said) if said else state["message"]
    return {"count": count, "status": status, "message": message}


@bp.get("/tasks/<task_id>")
@require("viewer")
def task(task_id):
    state = _task(task_id)
    site = get_session().get(Site, state["site_id"]) if state["site_id"] else None
    return render_template("dashboard/task.html", task=state, shown=shown(state),
                           site_name=site.name if site else state["site"],
                           from_publish=state["kind"] == "setup check")  # its page links back


@bp.get("/tasks/<task_id>.json")
@require("viewer")
def task_state(task_id):
    state = _task(task_id)
    return jsonify({**{name: value.isoformat() if isinstance(value, datetime) else value
                       for name, value in state.items()}, "shown": shown(state)})


@bp.post("/tasks/<task_id>/retry")
@require("editor")
def task_retry(task_id):
    """A task whose worker died, started again from the upload it kept."""
    _task(task_id)
    session = get_session()
    new_id = tasks.retry(session, current_app._get_current_object(), task_id)
    if new_id is None:
        flash(_("This task cannot be retried: it finished, is running again, or was retried "
                "already."))
        return redirect(url_for("dashboard.task", task_id=task_id))
    session.commit()
    return redirect(url_for("dashboard.task", task_id=new_id))
