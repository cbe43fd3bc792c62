"""Progress of long work: a page with a progress bar, and the JSON it polls."""

from __future__ import annotations

from datetime import datetime

from flask import abort, jsonify, render_template

from webapp import tasks
from webapp.db import get_session
from webapp.views.auth import require
from webapp.views.dashboard import bp


def _task(task_id: str) -> dict:
    state = tasks.read(get_session(), task_id)
    if state is None:
        abort(404, "There is no such task (finished tasks are kept for 7 days).")
    return state


@bp.get("/tasks/<task_id>")
@require("viewer")
def task(task_id):
    return render_template("dashboard/task.html", task=_task(task_id))


@bp.get("/tasks/<task_id>.json")
@require("viewer")
def task_state(task_id):
    state = _task(task_id)
    return jsonify({name: value.isoformat() if isinstance(value, datetime) else value
                    for name, value in state.items()})
