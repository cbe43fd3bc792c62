"""`/healthz` for a load balancer or a process supervisor: can this process serve?

Public (a load balancer has no account) and says nothing about any site: only whether the
database answers and the sitemaps folder can be written, and how long the check took.
"""

from __future__ import annotations

import os
import time

from flask import Blueprint, current_app, jsonify
from sqlalchemy import text
from sqlalchemy.exc import SQLAlchemyError

bp = Blueprint("status", __name__)


@bp.get("/healthz")
def healthz():
    checks: dict[str, str] = {}
    started = time.perf_counter()
    try:
        with current_app.extensions["db_engine"].connect() as connection:
            connection.execute(text("SELECT 1"))
        checks["database"] = "ok"
    except SQLAlchemyError as exc:
        current_app.logger.warning("health check: the database does not answer: %s",
                                   getattr(exc, "orig", exc))
        checks["database"] = "unreachable"
    checks["storage"] = "ok" if _writable(current_app.config["SITEMAPS_DIR"]) else "not writable"
    healthy = all(value == "ok" for value in checks.values())
    response = jsonify(status="ok" if healthy else "failing", **checks,
                       seconds=round(time.perf_counter() - started, 4))
    response.status_code = 200 if healthy else 503
    response.headers["Cache-Control"] = "no-store"
    return response


def _writable(folder: str) -> bool:
    """Whether new generations can be written there: the folder, or the nearest folder above
    it that exists (the store makes the rest on first use), is a writable folder."""
    path = os.path.abspath(folder)
    while not os.path.exists(path):
        path = os.path.dirname(path)
    return os.path.isdir(path) and os.access(path, os.W_OK | os.X_OK)
