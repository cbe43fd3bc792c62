"""Small builders with defaults, for tests that need stored sites and URLs."""

from __future__ import annotations

import os
import re
import socket
import threading
from collections.abc import Iterator
from contextlib import contextmanager

from werkzeug.serving import make_server

from webapp.models import Site, Url
from webapp.sites import create_site


def make_site(session, name="Shop", base_url="https://shop.example.com/", **settings) -> Site:
    """A committed site; extra keyword arguments set its columns directly."""
    site, _ = create_site(session, name, base_url, settings.pop("sitemap_url", None),
                          settings.pop("encoding", "utf-8"))
    for key, value in settings.items():
        setattr(site, key, value)
    session.commit()
    return site


def make_urls(session, site: Site, count: int, **fields) -> list[str]:
    """`count` committed URLs `<base_url>page/<n>`; returns their locs in id order. Written
    directly, so the site's url_count is moved here as the app's writers move it."""
    locs = [f"{site.base_url}page/{n}" for n in range(count)]
    session.add_all(Url(site_id=site.id, loc=loc, **fields) for loc in locs)
    if fields.get("deleted_at") is None:
        site.url_count += count
    session.commit()
    return locs


# The settings a command in another shell shares with `app` (the database, the folders...).
_SHARED = ("TESTING", "DATABASE_URL", "SECRET_KEY", "CREDENTIALS_KEY", "CREDENTIALS_OLD_KEYS",
           "INSTANCE_PATH", "SITEMAPS_DIR",
           "INDEXNOW_ENDPOINT", "GSC_ENDPOINT", "NOTIFY_TIMEOUT", "NOTIFY_MAX_ATTEMPTS",
           "NOTIFY_RETRY_SECONDS", "VERIFY_TIMEOUT", "VERIFY_DELAY_MS", "DISCOVER_DELAY_MS",
           "OUTBOUND_ALLOW", "CELERY_BROKER_URL", "CELERY_TASK_ALWAYS_EAGER")


@contextmanager
def another_shell(app, **settings) -> Iterator:
    """The installation `app` is, as a command run in another shell sees it: the same
    database and folders, `app`'s settings but those given (OUTBOUND_ALLOW="": a shell
    without the server's OUTBOUND_ALLOW). Its context is the current one meanwhile, so that
    commands run by its CLI runner are its own."""
    from webapp import create_app

    other = create_app({**{name: app.config[name] for name in _SHARED}, **settings})
    try:
        with other.app_context():
            yield other
    finally:
        other.extensions["db_engine"].dispose()


def csrf_token(client, path="/sign-in", **kwargs) -> str:
    """The CSRF token of the form on the page at `path`, as a test client gets it."""
    return re.search(r'name="csrf_token" value="([^"]+)"', client.get(path, **kwargs).text)[1]


def free_port() -> int:
    """A TCP port on 127.0.0.1 that nothing listens on right now."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


@contextmanager
def served(app) -> Iterator[str]:
    """The app served over real HTTP on 127.0.0.1 (a free port) while the block runs: its
    base URL."""
    server = make_server("127.0.0.1", 0, app, threaded=True)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_port}"
    finally:
        server.shutdown()
        thread.join()
        server.server_close()


def signed_in_page(browser, base: str, email: str, password: str, width: int = 1280,
                   language: str = "en"):
    """A page of a new browser context `width` px wide that asks for `language`, signed in
    to the dashboard at `base` (on its sites page); close it with `page.context.close()`."""
    context = browser.new_context(viewport={"width": width, "height": 900},
                                  extra_http_headers={"Accept-Language": language})
    page = context.new_page()
    page.goto(f"{base}/sign-in")
    page.fill("input[name=email]", email)
    page.fill("input[name=password]", password)
    page.click("button[type=submit]")
    page.wait_for_url(f"{base}/")
    return page


CHROMIUM = os.environ.get("CHROMIUM", "/usr/bin/chromium")  # Debian's; .ci/run installs it
BROWSER_CEILING_MS = 120_000  # how long `expect` waits for a page to show what it should


def launch_chromium(playwright):
    """Chromium for the browser tests: headless, and with no connections of its own (this
    machine's closed network refuses them). Playwright's `expect` waits at most
    BROWSER_CEILING_MS, a ceiling for a stuck page rather than its 5 s, which a page waiting
    for the app's work (a crawl, an import, a run) exceeds on a busy machine."""
    from playwright.sync_api import expect

    expect.set_options(timeout=BROWSER_CEILING_MS)
    return playwright.chromium.launch(executable_path=CHROMIUM, args=[
        "--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking"])
