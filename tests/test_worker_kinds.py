"""Every kind of task the dashboard starts runs on a worker as production runs it: started as
`flask --app webapp worker` starts it (Celery's prefork pool, whose child processes may not
start processes of their own), on both deployments. Imports, with their size thresholds, are
in test_worker_tasks.py; here the others: regenerate, notify, pre-flight check, discovery and
verification, against a small live site on 127.0.0.1."""

from __future__ import annotations

import uuid

import pytest
from pytest_httpserver import HTTPServer

from tests.builders import make_site
from tests.deployments import deployment  # noqa: F401  (the shared worker of this module)
from webapp.urls import save_url

PAGES = {"/": '<a href="/a">a</a> <a href="/b">b</a>', "/a": "<p>A</p>", "/b": "<p>B</p>"}


@pytest.fixture(scope="module")
def live_site():
    """A small website: three pages and a robots.txt that allows them."""
    server = HTTPServer(host="127.0.0.1", port=0, threaded=True)
    for path, body in PAGES.items():
        server.expect_request(path).respond_with_data(
            f"<!doctype html><html><body>{body}</body></html>", content_type="text/html")
    server.expect_request("/robots.txt").respond_with_data("User-agent: *\nDisallow:\n",
                                                           content_type="text/plain")
    server.start()
    yield server
    server.clear()
    server.stop()


@pytest.fixture
def site(deployment, live_site):  # noqa: F811
    """A site of the test's own on the live site, with its pages stored (the deployment and the
    website outlive the test: each test's site has a path of its own there)."""
    base = live_site.url_for("/")
    with deployment.session() as session:
        found = make_site(session, name=f"Live {uuid.uuid4().hex[:8]}", base_url=base,
                          sitemap_url=f"{base}sitemap-{uuid.uuid4().hex[:8]}.xml")
        for path in PAGES:
            save_url(session, found, base + path.lstrip("/"))
        session.commit()
        session.expunge(found)
    return found


STARTS = {
    "regenerate": ("regenerate", {}),
    "notify": ("notify", {}),
    "pre-flight check": ("preflight", {}),
    "discover": ("discover", {"max_pages": "10", "max_depth": "2", "max_minutes": "5"}),
    "verify": ("verify", {}),
    "setup check": ("publish/test", {}),
}


@pytest.mark.parametrize("kind", list(STARTS))
def test_every_kind_of_task_runs_on_a_prefork_worker(deployment, site, live_site,  # noqa: F811
                                                     kind):
    route, fields = STARTS[kind]
    client = deployment.signed_in("editor")
    start, asked = len(deployment.log()), len(live_site.log)
    answer = client.post(f"/sites/{site.slug}/{route}", data={"csrf_token": client.csrf,
                                                              **fields})
    assert answer.status_code == 302 and "/tasks/" in answer.headers["Location"], answer.text
    state = deployment.finished(answer.headers["Location"].rsplit("/", 1)[1])
    said = deployment.log()[start:]
    assert state["status"] == "done", (kind, state["message"], said)
    assert "Traceback" not in said and "daemonic" not in said, said
    if kind in ("discover", "verify"):  # the worker's child read the live site itself
        assert "/a" in {request.path for request, _ in live_site.log[asked:]}
    if kind == "setup check":  # fetched through the site's own host, by the worker's child
        assert "/robots.txt" in {request.path for request, _ in live_site.log[asked:]}


def test_the_worker_says_which_settings_file_it_read(deployment):  # noqa: F811
    """Every process logs the settings file it read (here there is none: the deployment's
    settings are its environment)."""
    from pathlib import Path

    from tests.probes import wait_for

    expected = f"settings: no {Path(deployment.app.config['INSTANCE_PATH']) / 'settings.env'}"
    wait_for(lambda: expected in deployment.log(), 60, "the worker's first lines")
