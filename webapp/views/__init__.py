"""What answers requests: one home per audience (`dashboard` for people, `api` for content
systems, `public` for crawlers, `status` for load balancers) and the request plumbing they
share (`auth`, `http`)."""

from __future__ import annotations

import threading
from collections.abc import Iterable
from importlib import import_module

from flask import Flask
from werkzeug.routing import Map


class Dashboard(Flask):
    """The app, whose blueprints (the pages, the API, status, the icon) are imported and
    registered the first time its URL map is read: by a request (matching it), `url_for`,
    `flask routes`. A command of the CLI reads none, so it imports none of their modules and
    the domains only they use: `flask --app webapp sites show` starts in half the time.

    Web processes attach them before their first request (`attach_views`, called by
    gunicorn_conf.py's post_worker_init), so no visitor waits for the imports."""

    _url_map: Map
    _views: tuple[str, ...] = ()  # "module:attribute" of each blueprint still to register
    _attaching: int | None = None  # the thread registering them

    @property
    def url_map(self) -> Map:
        self.attach_views()
        return self._url_map

    @url_map.setter
    def url_map(self, value: Map) -> None:
        self._url_map = value

    def defer_views(self, blueprints: Iterable[str]) -> None:
        self._lock = threading.RLock()
        self._views = tuple(blueprints)

    def attach_views(self) -> None:
        """Register the deferred blueprints, once; other threads wait until they are all in."""
        if not self._views:
            return
        with self._lock:
            if not self._views or self._attaching == threading.get_ident():
                return  # done by another thread, or registering reads the map itself
            self._attaching = threading.get_ident()
            try:
                for where in self._views:
                    module, attribute = where.split(":")
                    self.register_blueprint(getattr(import_module(module), attribute))
                self._views = ()
            finally:
                self._attaching = None
