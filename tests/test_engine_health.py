"""What a site owner hears about engines set up but unable to send: site health, the note
after saving the settings, and pre-flight."""

from __future__ import annotations

import pytest

from tests.builders import make_site
from tests.test_dashboard import as_role, post  # noqa: F401 - fixtures
from webapp import notify

pytestmark = pytest.mark.session_outside_app_context


def test_search_console_without_credentials_is_named_on_save_and_in_health(
        as_role, session):  # noqa: F811
    make_site(session)
    editor = as_role("editor")
    saved = editor.post("/sites/shop/settings", follow_redirects=True, data={
        "csrf_token": editor.csrf, "gsc_property": "sc-domain:shop.example.com"})
    assert "Saved." in saved.text
    assert "Search Console is set up but sends nothing" in saved.text
    assert "no service-account key file (gsc_credentials)" in saved.text
    health = editor.get("/sites/shop").text
    assert "Search Console is set up but sends nothing" in health
    assert "no service-account key file (gsc_credentials)" in health


def test_preflight_names_the_engine_that_cannot_send(app, session, engine):
    engine.expect_request("/robots.txt").respond_with_data("User-agent: *\n")
    site = make_site(session, base_url=engine.url_for("/"), gsc_credentials="/srv/key.json")
    [problem, robots] = notify.preflight.check(site, app.config)
    assert (problem.engine, problem.ok) == ("gsc", False)
    assert problem.message.startswith("Search Console: not sent: ")
    assert "no property (gsc_property)" in problem.message
    assert robots.engine == "" and not robots.ok
