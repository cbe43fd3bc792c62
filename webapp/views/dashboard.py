"""The signed-in dashboard. For now a landing page that says how to work from the command line."""

from __future__ import annotations

from flask import Blueprint, render_template

bp = Blueprint("dashboard", __name__)


@bp.get("/")
def index():
    return render_template("dashboard/index.html")
