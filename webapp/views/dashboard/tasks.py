"""Progress of long work: a page with a progress bar, and the JSON it polls."""

from __future__ import annotations

from flask import abort, current_app, jsonify, render_template

from webapp.views import background
from webapp.views.auth import require
from webapp.views.dashboard import bp


def _task(task_id: str) -> dict:
    state = background.read(current_app, task_id)
    if state is None:
        abort(404, "There is no such task (finished tasks are kept until the server restarts).")
    state.pop("pid", None)
    return state


@bp.get("/tasks/<task_id>")
@require("viewer")
def task(task_id):
    return render_template("dashboard/task.html", task=_task(task_id))


@bp.get("/tasks/<task_id>.json")
@require("viewer")
def task_state(task_id):
    return jsonify(_task(task_id))
