"""What a command loads before it does its work: `flask --app webapp COMMAND` imports what
the command uses, and neither the views nor Celery, lxml, the engines' clients or the crawler
when it does not use them (docs/cli.md: a command costs little more than Flask itself;
bench/cli_start.py measures the time and memory)."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys

import pytest

# Libraries that only some commands need, and the app's modules that only pages, the API or
# background work need.
HEAVY_LIBRARIES = ("celery", "kombu", "lxml", "google", "cryptography", "jsonschema",
                   "requests", "urllib3", "h11")
HEAVY_MODULES = ("webapp.views.dashboard", "webapp.views.api", "webapp.tasks.work",
                 "webapp.tasks.engine", "webapp.notify.delivery", "webapp.verify.runs",
                 "webapp.discover.crawl", "webapp.urls.importing")

# Runs the flask command in this interpreter, then writes the names of the modules it loaded.
PROBE = """
import json, sys
from flask.cli import main
try:
    main()
except SystemExit as exc:
    status = exc.code
print(json.dumps({"status": status, "modules": sorted(sys.modules)}), file=sys.stderr)
"""


@pytest.fixture
def instance(sqlite_template, tmp_path):
    """An instance folder whose database holds one site, `shop`."""
    shutil.copy(sqlite_template, tmp_path / "sitemaps.db")
    environment = {**os.environ, "INSTANCE_PATH": str(tmp_path),
                   "DATABASE_URL": f"sqlite:///{tmp_path / 'sitemaps.db'}"}
    environment.pop("CELERY_BROKER_URL", None)
    assert loaded(environment, "sites", "create", "Shop", "https://shop.example.com/")
    return environment


def loaded(environment: dict, *args: str) -> set[str]:
    """The modules `flask --app webapp ARGS` loaded; the command must succeed."""
    done = subprocess.run([sys.executable, "-c", PROBE, "--app", "webapp", *args],
                          env=environment, capture_output=True, text=True, timeout=120)
    report = json.loads(done.stderr.strip().splitlines()[-1])
    assert report["status"] in (0, None), done.stderr
    return set(report["modules"])


def heavy(modules: set[str]) -> set[str]:
    return {name for name in modules
            if name.split(".")[0] in HEAVY_LIBRARIES
            or any(name == home or name.startswith(home + ".") for home in HEAVY_MODULES)}


@pytest.mark.parametrize("args", [("sites", "show", "shop"), ("sites", "list"),
                                  ("sites", "set", "shop", "name=Shop and more"),
                                  ("users", "ensure-admin"), ("tokens", "list")])
def test_a_command_loads_neither_the_views_nor_what_only_other_work_needs(instance, args):
    modules = loaded(instance, *args)
    assert "webapp.models" in modules and "webapp.cli.sites" in modules or args[0] != "sites"
    assert heavy(modules) == set()


def test_a_command_that_queues_work_loads_celery_and_the_work(instance):
    """The probe above, shown to see what a command loads: adding a URL queues the site's run,
    which needs the Celery application and the tasks it runs."""
    modules = loaded(instance, "urls", "add", "shop", "https://shop.example.com/a")
    assert {"celery", "webapp.tasks.engine", "webapp.tasks.work"} <= heavy(modules)
    assert "webapp.views.dashboard" not in modules  # still no page


@pytest.mark.parametrize("database_url", ["sqlite"], indirect=True)
def test_the_views_are_registered_when_the_url_map_is_first_read(app):
    """The app's blueprints wait for a request, url_for or `flask routes`; then all of them
    are there, once, whichever of these comes first and from however many threads."""
    from concurrent.futures import ThreadPoolExecutor

    from flask import url_for

    assert app._views, "the blueprints are registered at once: nothing is deferred"
    with ThreadPoolExecutor(8) as pool:
        counts = set(pool.map(lambda _: len(list(app.url_map.iter_rules())), range(8)))
    assert len(counts) == 1 and {"dashboard", "api", "status", "icon"} <= set(app.blueprints)
    with app.test_request_context():
        assert url_for("dashboard.sign_in_page") == "/sign-in"
    assert len(list(app.url_map.iter_rules())) == counts.pop()  # nothing registered twice
