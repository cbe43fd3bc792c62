"""The Discover page in a real browser (Debian's Chromium through Playwright): start a crawl of
the test website, review what it found, accept by prefix; at 1280 and 390 px, in English and
Japanese, with screenshots in test-artifacts/discover/ for a person to look at."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from sqlalchemy import select

from tests import discover_website as website
from tests.builders import CHROMIUM, make_site, served
from webapp.models import Url
from webapp.accounts.users import create_user

ARTIFACTS = Path(__file__).resolve().parent.parent / "test-artifacts" / "discover"

pytestmark = pytest.mark.skipif(not os.path.exists(CHROMIUM),
                                reason=f"no Chromium at {CHROMIUM} (.ci/run installs it)")


@pytest.fixture
def server(app):
    if not app.config["DATABASE_URL"].startswith("sqlite"):
        pytest.skip("the browser path is the same on both databases; it runs on SQLite")
    app.config["DISCOVER_DELAY_MS"] = 0
    with served(app) as base_url:
        yield base_url


def signed_in(browser, server, width: int, locale: str):
    context = browser.new_context(viewport={"width": width, "height": 900}, locale=locale)
    page = context.new_page()
    page.goto(f"{server}/sign-in")
    page.locator("#email").fill("owner@example.com")
    page.locator("#password").fill("correct horse")
    page.locator("button[type=submit]").click()
    page.wait_for_url(f"{server}/")
    return context, page


def no_page_overflow(page) -> bool:
    return page.evaluate("document.documentElement.scrollWidth <= window.innerWidth")


def test_an_editor_crawls_reviews_and_accepts_by_prefix(app, session, server, browser, engine):
    from playwright.sync_api import expect

    create_user(session, "owner@example.com", "correct horse", "editor")
    site = make_site(session, "Test website", website.serve(engine), exclude="/site/tmp/*")
    session.commit()
    ARTIFACTS.mkdir(parents=True, exist_ok=True)

    context, page = signed_in(browser, server, 1280, "en-GB")
    page.goto(f"{server}/sites/{site.slug}")
    page.get_by_role("link", name="Discover").click()
    page.get_by_text("Start a crawl", exact=True).click()
    page.get_by_label("Pages at most").fill("40")
    page.get_by_label("Links from the start at most").fill("2")
    page.get_by_role("button", name="Start crawl").click()
    # `expect` waits for what a click leads to (is_visible() would not): the crawl, the next
    # page.
    expect(page.get_by_text("Done.")).to_be_visible()
    assert "8 found: 7 new, 0 known, 1 excluded" in page.locator("#task-message").inner_text()
    page.get_by_role("link", name="Review what the crawl found").click()
    expect(page.get_by_role("link", name="New (7)")).to_be_visible()
    page.get_by_label("Accept those whose path starts with").fill("/ja/")
    page.get_by_role("button", name="Accept by prefix").click()
    expect(page.get_by_text("Added 2 URLs to the site.")).to_be_visible()
    page.screenshot(path=str(ARTIFACTS / "discover-1280-en.png"), full_page=True)
    context.close()
    assert len(session.scalars(select(Url.loc)).all()) == 2

    for width, locale in ((390, "en-GB"), (1280, "ja-JP"), (390, "ja-JP")):
        context, page = signed_in(browser, server, width, locale)
        page.goto(f"{server}/sites/{site.slug}/discover?show=other")
        if locale == "ja-JP":
            expect(page.get_by_role("heading", name="見つかった URL")).to_be_visible()
        assert no_page_overflow(page), f"{width} px {locale}"
        page.screenshot(path=str(ARTIFACTS / f"discover-other-{width}-{locale[:2]}.png"),
                        full_page=True)
        page.goto(f"{server}/sites/{site.slug}/settings")
        assert no_page_overflow(page), f"settings {width} px {locale}"
        page.locator("#f-exclude").scroll_into_view_if_needed()
        page.screenshot(path=str(ARTIFACTS / f"settings-{width}-{locale[:2]}.png"))
        page.goto(f"{server}/sites/{site.slug}/discover")
        assert no_page_overflow(page), f"{width} px {locale}"
        page.screenshot(path=str(ARTIFACTS / f"discover-{width}-{locale[:2]}.png"),
                        full_page=True)
        context.close()
