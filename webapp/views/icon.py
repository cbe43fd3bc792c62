"""The app's icon: /favicon.ico, which browsers ask for on every host whatever the page says,
answered with the SVG that templates/base.html links (rather than a 404 in every log)."""

from __future__ import annotations

from pathlib import Path

from flask import Blueprint, Response, current_app

bp = Blueprint("icon", __name__)


@bp.get("/favicon.ico")
def favicon():
    icon = Path(current_app.static_folder) / "favicon.svg"
    return Response(icon.read_bytes(), mimetype="image/svg+xml",
                    headers={"Cache-Control": "public, max-age=86400"})
