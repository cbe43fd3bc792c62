"""The sitemap dashboard: `create_app` assembles the application from its parts."""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from flask import Flask


def create_app(overrides: Mapping[str, object] | None = None) -> Flask:
    """Build the app; `overrides` replace settings read from the environment (tests use this)."""
    # Imported here, not above, so that `import webapp.protocol` stays light: the import
    # worker process needs the protocol rules and none of the web application.
    from flask import Flask

    from webapp import cli, config, db, i18n, sitemaps, tasks
    from webapp.views import api, auth, dashboard, display, http, icon, public, status

    settings = config.load(overrides)
    app = Flask(__name__, instance_path=str(settings["INSTANCE_PATH"]),
                template_folder="../templates")
    app.config.update(settings)
    db.init_app(app)
    i18n.init_app(app)  # the language and timezone each request is answered in
    sitemaps.init_app(app)
    tasks.init_app(app)  # background work goes to Celery workers
    public.init_app(app)  # crawlers are answered before Flask sees the request
    http.init_app(app)  # proxy headers, CSRF, security headers, error pages
    auth.init_app(app)
    display.init_app(app)  # template filters: URLs as people read them
    cli.init_app(app)
    app.register_blueprint(dashboard.bp)
    app.register_blueprint(api.bp)
    app.register_blueprint(status.bp)
    app.register_blueprint(icon.bp)
    return app
