"""The Verification page and the URL list's `check=` filter, through the test client and in
a browser at desktop and phone widths, in English and Japanese (screenshots under
test-artifacts/verify/)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from sqlalchemy import select

from tests import verify_website as test_website
from tests.builders import served, signed_in_page
from tests.test_dashboard import as_role  # noqa: F401 (fixtures)
from tests.test_verify import make_verified_site
from webapp.models import Task
from webapp.verify import verify_site

ARTIFACTS = Path(__file__).resolve().parent.parent / "test-artifacts" / "verify"


pytestmark = pytest.mark.session_outside_app_context


@pytest.fixture(scope="module")
def web():
    with test_website.serve() as site:
        yield site


@pytest.fixture
def verified(app, session, web):
    site = make_verified_site(session, web)
    verify_site(app, site.id)
    return site


def test_the_page_counts_each_outcome_and_links_to_those_urls(as_role, verified, web):
    client = as_role("viewer")
    page = client.get(f"/sites/{verified.slug}/verification").text
    links = dict(re.findall(r'href="/sites/web/urls\?check=(\w+)"[^>]*>([\d,]+)</a>', page))
    assert links == {"broken": "3", "redirected": "3", "noindex": "2", "canonical": "2",
                     "unreachable": "1", "blocked": "1", "ok": "8"}
    assert "Verify now" not in page  # a viewer cannot start one
    listed = client.get(f"/sites/{verified.slug}/urls?check=broken").text
    found = set(re.findall(r"/site/(missing|gone|error|changing|noindex-meta)\b", listed))
    assert found == {"missing", "gone", "error"}
    answer = client.get(f"/sites/{verified.slug}/urls?check=bogus")
    assert answer.status_code == 400 and "check must be one of" in answer.text


def test_verify_now_starts_a_task_and_its_page_shows_the_outcome(app, as_role, verified,
                                                                session):
    client = as_role("editor")
    answer = client.post(f"/sites/{verified.slug}/verify", data={"csrf_token": client.csrf})
    assert answer.status_code == 302 and "/tasks/" in answer.location
    task = session.scalar(select(Task).where(Task.kind == "verify"))
    assert task.status == "done" and task.message.startswith("19 checked: 8 ok, 3 broken")
    page = client.get(f"/sites/{verified.slug}/verification").text
    assert "This site has not been verified yet." not in page and "OK: 8" in page
    assert client.post(f"/sites/{verified.slug}/verify").status_code == 400  # no CSRF token


def test_the_page_fits_a_phone_in_english_and_japanese(app, session, verified,
                                                       request):
    if "postgresql" in request.node.name:
        pytest.skip("the browser path is the same on both databases; it runs on SQLite")
    from webapp.accounts.users import create_user
    create_user(session, "admin@example.com", "correct horse", "admin")
    session.commit()
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    browser = request.getfixturevalue("browser")  # the test process's Chromium
    with served(app) as base:
        for language in ("en", "ja"):
            for width in (1280, 390):
                page = signed_in_page(browser, base, "admin@example.com", "correct horse",
                                      width, language)
                page.goto(f"{base}/sites/{verified.slug}/verification")
                heading = "URL の確認" if language == "ja" else "Verification"
                assert page.locator("h2").first.inner_text() == heading
                assert page.evaluate("document.documentElement.scrollWidth") <= width
                page.screenshot(path=str(ARTIFACTS / f"verification-{language}-{width}.png"),
                                full_page=True)
                page.context.close()


def test_the_page_warns_when_dates_move_while_pages_do_not(app, as_role, verified, session,
                                                           web):
    from webapp.urls import upsert_urls
    upsert_urls(session, verified, [{"loc": f"{web.base}/site/changing",
                                     "lastmod": "2026-08-01"}])
    session.commit()
    page = as_role("viewer").get(f"/sites/{verified.slug}/verification").text
    assert "Dates that do not tell the truth" not in page
    verify_site(app, verified.id)
    page = as_role("viewer").get(f"/sites/{verified.slug}/verification").text
    assert "Dates that do not tell the truth" in page
    assert "while their content did not change: 1." in page
