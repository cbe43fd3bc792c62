"""Job functions: importable, module-level, each owning its own transactions."""

from __future__ import annotations

import logging
from datetime import datetime

from flask import Flask, current_app

from webapp.models import Generation, Site, utcnow
from webapp.sitemaps import get_store
from webapp.sitemaps.build import Limits, SitemapLimitError
from webapp.sitemaps.generate import generate_site

log = logging.getLogger(__name__)

# What a failed generation records: errors a site owner can act on keep their own words.
EXPECTED_ERRORS = (SitemapLimitError, OSError)


def regenerate(site_id: int, app: Flask | None = None, now: datetime | None = None,
               limits: Limits | None = None) -> Generation:
    """Generate and publish one site's sitemaps; the run is recorded whatever happens."""
    app = app or current_app
    store = get_store(app)
    with app.extensions["db_sessionmaker"]() as session:
        site = session.get(Site, site_id)
        if site is None:
            raise LookupError(f"no site with id {site_id}")
        generation = Generation(site_id=site.id, status="running", started_at=utcnow())
        session.add(generation)
        session.commit()
        try:
            result = generate_site(session, site, generation, store, limits, now)
        except Exception as exc:
            session.rollback()
            if not isinstance(exc, EXPECTED_ERRORS):
                log.exception("generation %s of site %s failed", generation.id, site.slug)
            generation.status = "failed"
            generation.error = str(exc) if isinstance(exc, SitemapLimitError) else (
                f"{type(exc).__name__}: {exc}")
            generation.finished_at = utcnow()
            session.commit()
            return generation
        generation.status = "succeeded" if result.published else "superseded"
        generation.url_count = result.url_count
        generation.file_count = len(result.files)
        generation.bytes = result.bytes
        generation.finished_at = utcnow()
        session.commit()
    store.prune(site_id, app.config["SITEMAP_KEEP_GENERATIONS"])
    return generation
