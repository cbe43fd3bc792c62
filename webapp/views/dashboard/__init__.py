"""The signed-in dashboard: one blueprint, its routes grouped by page in the modules below.

Every view is guarded by `require(role)`; every POST carries the app-wide CSRF token.
"""

from __future__ import annotations

from flask import Blueprint, abort
from flask_babel import gettext as _
from sqlalchemy import select

from webapp.db import get_session
from webapp.models import Site

bp = Blueprint("dashboard", __name__)


def load_site(slug: str) -> Site:
    """The site with this slug, or 404."""
    site = get_session().scalar(select(Site).where(Site.slug == slug))
    if site is None:
        abort(404, _("There is no site %(slug)s.", slug=repr(slug)))
    return site


from webapp.views.dashboard import (  # noqa: E402  (routes attach themselves to bp)
    account,
    discover,
    engines,
    history,
    labels,
    settings,
    sites,
    tasks,
    tokens,
    urls,
    users,
    verification,
)

__all__ = ["account", "bp", "discover", "engines", "history", "labels", "load_site", "settings",
           "sites", "tasks", "tokens", "urls", "users", "verification"]
