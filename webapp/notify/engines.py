"""The search engines, in the order their records are planned, and their site settings.

Each engine's module says what it announces (`ANNOUNCES`: changed URLs or the sitemap), why it
cannot send though set up (`blocked`), where a record goes (`destination`), sends one record
with `deliver`, and checks its own settings (`SETTINGS`, and `apply_settings` for the rules
that take several settings together).
"""

from __future__ import annotations

from collections.abc import Mapping

from sqlalchemy.orm import Session

from webapp.models import Site
from webapp.notify import gsc, indexnow, ping

ENGINES = {"indexnow": indexnow, "gsc": gsc, "ping": ping}

# The rules of the site settings that belong to an engine, by setting name.
SETTINGS = {**indexnow.SETTINGS, **gsc.SETTINGS, **ping.SETTINGS}


def apply_settings(session: Session, site: Site, values: Mapping[str, object], base_url: str,
                   sitemap_url: str) -> None:
    """Each engine's rules for a site's settings taken together (InvalidValue), and what it
    does when they change; called before the validated `values` are set on `site`."""
    for engine in ENGINES.values():
        if hasattr(engine, "apply_settings"):
            engine.apply_settings(session, site, values, base_url, sitemap_url)
