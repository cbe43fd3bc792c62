"""The sitemap dashboard: `create_app` assembles the application from its parts."""

from __future__ import annotations

import sys
from collections.abc import Callable, Collection, Mapping
from importlib import import_module
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from flask import Flask


def create_app(overrides: Mapping[str, object] | None = None) -> Flask:
    """Build the app; `overrides` replace settings read from the environment (tests use this)."""
    # Imported here, not above, so that `import webapp.protocol` stays light: the import
    # worker process needs the protocol rules and none of the web application.
    from webapp import cli, config, db, i18n, sitemaps, tasks
    from webapp.views import Dashboard, auth, display, http, public

    reading = config.read(overrides)  # the environment over INSTANCE_PATH/settings.env
    settings = reading.settings
    app = Dashboard(__name__, instance_path=str(settings["INSTANCE_PATH"]),
                    template_folder="../templates")
    app.config.update(settings)
    app.extensions["settings"] = reading  # `config show`, and the line each process logs
    db.init_app(app)
    i18n.init_app(app)  # the language and timezone each request is answered in
    sitemaps.init_app(app)
    tasks.init_app(app)  # background work goes to Celery workers
    public.init_app(app)  # crawlers are answered before Flask sees the request
    http.init_app(app)  # proxy headers, CSRF, security headers, error pages
    auth.init_app(app)
    display.init_app(app)  # template filters: URLs as people read them
    cli.init_app(app)
    # Registered when the URL map is first read (a request, url_for): commands need none.
    app.defer_views(["webapp.views.dashboard:bp", "webapp.views.api:bp",
                     "webapp.views.status:bp", "webapp.views.icon:bp"])
    return app


def front_door(package: str, homes: Mapping[str, str],
               modules: Collection[str] = ()) -> Callable[[str], object]:
    """The `__getattr__` (PEP 562) of a package's front door that loads each name it offers
    from its module (`homes`: {name: module}) on first use, and each of `modules` as a whole.

    A package's `__init__` says `__getattr__ = front_door(__name__, _HOMES)`, with `_HOMES` a
    literal dict that tests/test_architecture.py reads. Importing the package then costs
    nothing: a command or page loads only the modules of the names it uses."""
    namespace = vars(sys.modules[package])

    def __getattr__(name: str) -> object:
        if name in modules:
            value = import_module(f"{package}.{name}")
        elif name in homes:
            value = getattr(import_module(f"{package}.{homes[name]}"), name)
        else:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        namespace[name] = value  # found directly from now on
        return value

    return __getattr__
