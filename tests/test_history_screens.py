"""The history pages in a real browser (Chromium through Playwright, on SQLite): the overview,
Search engines, generations, one generation and the ledger, at desktop and phone width, in
English and Japanese. Each fits its width with no sideways scrolling; screenshots are saved
under test-artifacts/history/ for a person to look at."""

from __future__ import annotations

from datetime import timedelta

import pytest
from sqlalchemy import select, update

from tests.builders import make_site, make_urls, signed_in_page
from tests.test_e2e import ARTIFACTS, CHROMIUM, pytestmark, server  # noqa: F401  (fixture)
from webapp import jobs
from webapp.models import Delivery, Generation, utcnow
from webapp.notify import ping
from webapp.urls import save_url
from webapp.accounts.users import create_user

PAGES = {"overview": "/sites/shop", "engines": "/sites/shop/engines",
         "generations": "/sites/shop/generations", "generation": None,
         "announcements": "/sites/shop/announcements"}


@pytest.fixture
def history(app, session):
    """A site with a few weeks of runs, warnings, and announcements to three engines."""
    create_user(session, "owner@example.com", "correct horse", "editor")
    site = make_site(session, "ショップ Shop", "https://shop.example.com/", slug="shop",
                     indexnow_enabled=True, gsc_property="sc-domain:shop.example.com",
                     ping_urls="https://ping.example.net/ping?sitemap={sitemap}")
    make_urls(session, site, 40, lastmod="2026-01-01")
    runs = [jobs.regenerate(site.id, app, trigger="schedule")]
    for n in range(25):
        save_url(session, site, f"{site.base_url}日本語の記事/{n}")
    session.commit()
    runs.append(jobs.regenerate(site.id, app, trigger="change"))
    runs.append(jobs.regenerate(site.id, app, trigger="button"))
    recent = (utcnow() - timedelta(days=1)).strftime("%Y-%m-%d")  # input refuses the future
    for n in range(5):
        save_url(session, site, f"{site.base_url}news/{n}", {"lastmod": recent})
    session.commit()
    for days, run in zip((20, 9, 2), runs):
        session.execute(update(Generation).where(Generation.id == run.id).values(
            started_at=utcnow() - timedelta(days=days),
            finished_at=utcnow() - timedelta(days=days) + timedelta(seconds=1.4)))
    now = utcnow()
    long_loc = f"{site.base_url}articles/2026/11/a-very-long-address-that-has-to-wrap-on-a-phone"
    session.add_all([
        Delivery(site_id=site.id, engine="indexnow", status="delivered", attempts=1,
                 attempt_limit=4, url_count=3, http_status=200, generation_id=runs[-1].id,
                 urls=f"{site.base_url}page/0\n{site.base_url}page/1\n{long_loc}",
                 outcome="200 OK: the URLs were received", created_at=now,
                 last_attempt_at=now, finished_at=now),
        Delivery(site_id=site.id, engine="gsc", status="failed", attempts=4, attempt_limit=4,
                 http_status=403, generation_id=runs[-1].id, created_at=now,
                 outcome="403 Forbidden: the service account is not an owner of the property",
                 last_attempt_at=now, finished_at=now),
        Delivery(site_id=site.id, engine="ping", status="pending", attempts=1, attempt_limit=4,
                 target=ping.targets(site)[0], generation_id=runs[-1].id, created_at=now,
                 outcome="503 Service Unavailable: the engine is busy; will try again",
                 last_attempt_at=now, next_attempt_at=now + timedelta(minutes=30)),
    ])
    session.commit()
    PAGES["generation"] = f"/sites/shop/generations/{runs[1].id}"
    return site


@pytest.mark.parametrize("language", ["en", "ja"])
def test_the_history_pages_fit_desktop_and_phone_in_both_languages(app, session, server, history,
                                                                   language, request):
    folder = ARTIFACTS / "history"
    folder.mkdir(parents=True, exist_ok=True)
    browser = request.getfixturevalue("browser")  # the test process's Chromium
    for width in (1280, 390):
        page = signed_in_page(browser, server, "owner@example.com", "correct horse", width,
                              language)
        for name, path in PAGES.items():
            page.goto(server + path)
            assert page.evaluate("document.documentElement.scrollWidth") <= width, \
                f"{name} at {width} px in {language} scrolls sideways"
            page.screenshot(path=str(folder / f"{name}-{width}-{language}.png"),
                            full_page=True)
            if name == "overview":  # the chart alone, to read its axes
                page.locator("figure.line-chart").screenshot(
                    path=str(folder / f"chart-{width}-{language}.png"))
        page.context.close()
    assert session.scalar(select(Generation.trigger).order_by(Generation.id).limit(1)) == \
        "schedule"
