"""End to end in a real browser: Playwright driving Debian's Chromium against the app served on
127.0.0.1, with the fake search engine beside it. Screenshots of the main pages are saved
under test-artifacts/ (looked at by a person; the assertions are on the page text)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from tests.builders import CHROMIUM, served
from webapp.accounts.users import create_user

ARTIFACTS = Path(__file__).resolve().parent.parent / "test-artifacts"

pytestmark = pytest.mark.skipif(not os.path.exists(CHROMIUM),
                                reason=f"no Chromium at {CHROMIUM} (.ci/run installs it)")


@pytest.fixture
def server(app):
    if not app.config["DATABASE_URL"].startswith("sqlite"):
        pytest.skip("the browser path is the same on both databases; it runs on SQLite")
    with served(app) as base_url:
        yield base_url


@pytest.fixture
def page(browser):
    context = browser.new_context(viewport={"width": 1200, "height": 900})
    yield context.new_page()
    context.close()


def shot(page, name):
    ARTIFACTS.mkdir(exist_ok=True)
    page.screenshot(path=str(ARTIFACTS / f"{name}.png"), full_page=True)


def test_a_site_owner_goes_from_sign_in_to_the_ledger(app, session, server, page, engine,
                                                      tmp_path):
    from playwright.sync_api import expect

    create_user(session, "owner@example.com", "correct horse", "admin")
    session.commit()
    engine.expect_request("/indexnow").respond_with_data("", status=200)
    site_url = engine.url_for("/")

    page.goto(f"{server}/")
    page.get_by_label("E-mail address").fill("owner@example.com")
    page.get_by_label("Password").fill("correct horse")
    shot(page, "01-sign-in")
    page.get_by_role("button", name="Sign in").click()
    page.get_by_role("link", name="New site").click()

    page.get_by_label("Name").fill("Shop")
    page.get_by_label("Base URL").fill(site_url)
    page.get_by_role("button", name="Create").click()
    # After a click the next page may still be loading: `expect` waits for it, and
    # is_visible() would not.
    expect(page.get_by_role("heading", name="Shop")).to_be_visible()

    page.get_by_role("link", name="Settings").click()
    page.get_by_label("Announce with IndexNow").check()
    page.get_by_label("IndexNow endpoint").fill(engine.url_for("/indexnow"))
    page.get_by_label("Wait after changes (seconds)").fill("0")
    page.get_by_role("button", name="Save").click()
    expect(page.get_by_text("Saved.")).to_be_visible()
    shot(page, "02-settings")

    page.get_by_role("link", name="URLs").click()
    page.get_by_text("Add a URL").click()
    page.get_by_label("URL", exact=True).fill(f"{site_url}first")
    page.get_by_label("Last modified").fill("not a date")
    page.get_by_role("button", name="Add").click()
    assert page.locator("#e-lastmod").inner_text().startswith("lastmod 'not a date'")
    page.get_by_label("Last modified").fill("2026-05-01")
    page.get_by_role("button", name="Add").click()
    expect(page.get_by_text(f"Added {site_url}first.")).to_be_visible()

    page.get_by_role("link", name="Import").click()
    page.get_by_label("URLs, one per line").fill(
        "\n".join(f"{site_url}imported/{n}" for n in range(25)))
    page.get_by_role("button", name="Import").click()
    expect(page.get_by_text("Done.")).to_be_visible()  # the import's work, however long
    assert "added 25" in page.locator("#task-message").inner_text()

    page.get_by_role("link", name="Back to the site").click()
    page.get_by_role("button", name="Regenerate now").click()
    expect(page.get_by_text("Done.")).to_be_visible()
    message = page.locator("#task-message").inner_text()
    assert "succeeded, 26 URLs" in message and "1 announcement planned" in message
    shot(page, "03-regenerate-progress")

    page.get_by_role("link", name="Back to the site").click()
    shot(page, "04-site-overview")
    page.get_by_role("link", name="view the published sitemap").click()
    expect(page.get_by_text(f"{site_url}first")).to_be_visible()
    shot(page, "05-published-sitemap")
    page.go_back()

    page.get_by_role("link", name="Announcements").click()
    row = page.locator("tbody tr").first
    assert "delivered" in row.inner_text() and "26 URLs" in row.inner_text()
    shot(page, "06-announcements")
    assert sorted(engine.log[0][0].get_json()["urlList"]) == sorted(
        [f"{site_url}first"] + [f"{site_url}imported/{n}" for n in range(25)])

    page.get_by_role("link", name="URLs").click()
    shot(page, "07-urls")
    page.get_by_role("link", name="Sites").click()
    assert "26" in page.locator("tbody tr").first.inner_text()
    shot(page, "08-sites")

    page.set_viewport_size({"width": 390, "height": 844})  # a phone
    page.get_by_role("link", name="Shop").click()
    expect(page.get_by_role("button", name="Regenerate now")).to_be_visible()
    shot(page, "09-phone-site")


def test_a_token_made_in_the_browser_keeps_urls_in_sync(app, session, server, page):
    import requests
    from playwright.sync_api import expect

    from tests.builders import make_site

    create_user(session, "editor@example.com", "correct horse", "editor")
    make_site(session)
    page.goto(f"{server}/sign-in")
    page.get_by_label("E-mail").fill("editor@example.com")
    page.get_by_label("Password").fill("correct horse")
    page.get_by_role("button", name="Sign in").click()
    page.get_by_role("link", name="API tokens").click()
    page.get_by_label("Name").fill("CMS on www")
    page.get_by_label("Shop").check()
    page.get_by_role("button", name="Create token").click()
    secret = page.locator("#new-token").inner_text()
    shot(page, "10-new-token")

    api = requests.Session()
    api.headers["Authorization"] = f"Bearer {secret}"
    answer = api.post(f"{server}/api/v1/sites/shop/urls", json={"urls": [
        {"loc": "https://shop.example.com/from-the-cms", "lastmod": "2026-11-20"},
        {"loc": "https://elsewhere.example/"}]}, timeout=10)
    assert answer.status_code == 200 and answer.json()["created"] == 1
    assert answer.json()["errors"][0]["index"] == 1

    page.goto(f"{server}/sites/shop/urls")
    assert page.get_by_text("https://shop.example.com/from-the-cms").is_visible()
    page.get_by_role("link", name="API tokens").click()
    page.wait_for_url(f"{server}/tokens")  # count() does not wait: on the tokens page first
    row = page.locator("tbody tr").first
    assert row.locator("time").count() == 2  # made, and last used (by the request above)
    shot(page, "11-tokens")
    page.once("dialog", lambda dialog: dialog.accept())
    page.get_by_role("button", name="Revoke").click()
    expect(page.get_by_text("Revoked token")).to_be_visible()
    assert api.get(f"{server}/api/v1/sites", timeout=10).status_code == 401


def test_an_operator_finds_sites_among_hundreds_on_a_desktop_and_a_phone(app, session, server,
                                                                        page):
    from playwright.sync_api import expect
    from sqlalchemy import insert

    from webapp.models import Delivery, Generation, Site, Url, utcnow

    create_user(session, "ops@example.com", "correct horse", "viewer")
    kinds = ("Shop", "Blog", "News", "Docs")
    session.execute(insert(Site), [
        {"slug": f"site-{n:03}", "name": f"{kinds[n % 4]} {n:03} of the example group",
         "base_url": f"https://www{n:03}.{kinds[n % 4].lower()}-example.com/",
         "sitemap_url": f"https://www{n:03}.{kinds[n % 4].lower()}-example.com/a/rather/long/"
                        "path/to/the/sitemap-index-of-this-site.xml",
         "url_count": 1 + n % 5} for n in range(1, 241)])
    session.execute(insert(Url), [  # every eleventh site has a lastmod in the future
        {"site_id": n, "loc": f"https://www{n:03}.{kinds[n % 4].lower()}-example.com/{m}",
         "lastmod": "2999-01-01" if n % 11 == 0 and m == 0 else "2026-11-01", "priority": 0.5}
        for n in range(1, 241) for m in range(1 + n % 5)])
    now = utcnow()
    session.execute(insert(Generation), [
        {"site_id": n, "number": 1, "status": "failed" if n % 7 == 0 else "succeeded",
         "started_at": now,
         "finished_at": now, "error": "disk full" if n % 7 == 0 else None} for n in range(1, 241)])
    session.execute(insert(Delivery), [
        {"site_id": n, "engine": engine, "status": "failed" if n % 12 == 10 else "delivered",
         "attempt_limit": 4} for n in range(1, 241, 3) for engine in ("indexnow", "gsc")])
    session.commit()

    page.set_viewport_size({"width": 1280, "height": 900})
    page.goto(f"{server}/sign-in")
    page.get_by_label("E-mail").fill("ops@example.com")
    page.get_by_label("Password").fill("correct horse")
    page.get_by_role("button", name="Sign in").click()
    expect(page.get_by_text("Sites 1–50 of 240")).to_be_visible()
    shot(page, "20-sites-desktop")

    page.get_by_label("Name or host").fill("NEWS-example")
    page.get_by_label("Sort by").select_option("problems")
    page.get_by_role("button", name="Apply").click()
    expect(page.get_by_text("Sites 1–50 of 60 matching “NEWS-example”")).to_be_visible()
    page.get_by_role("link", name="Next").click()
    expect(page.get_by_text("Sites 51–60 of 60")).to_be_visible()
    expect(page.get_by_label("Name or host")).to_have_value("NEWS-example")
    expect(page.get_by_label("Sort by")).to_have_value("problems")
    shot(page, "21-sites-desktop-search-page-2")

    page.set_viewport_size({"width": 390, "height": 844})  # a phone
    page.get_by_role("link", name="Previous").click()
    expect(page.get_by_text("Sites 1–50 of 60 matching")).to_be_visible()
    expect(page.get_by_text("The last generation failed").first).to_be_visible()
    assert page.evaluate("document.documentElement.scrollWidth") <= 390
    shot(page, "22-sites-phone-search")
    page.goto(f"{server}/?page=3")
    assert page.evaluate("document.documentElement.scrollWidth") <= 390
    shot(page, "23-sites-phone-page-3")
