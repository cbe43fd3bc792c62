"""Every page in a real browser (Debian's Chromium through Playwright), in English and Japanese:
it fits a 390 px phone without sideways scrolling, axe-core finds nothing serious in it, and
the main path works from the keyboard alone. Screenshots of each page at 1280 and 390 px in
both languages land in test-artifacts/pages/ for a person to look at.

PAGES is the one list of pages: a page added to the dashboard is added there.
"""

from __future__ import annotations

import re
import os
from pathlib import Path

import pytest

from tests.builders import CHROMIUM, served
from tests.showcase import PASSWORD, seed_showcase

ROOT = Path(__file__).resolve().parent.parent
ARTIFACTS = ROOT / "test-artifacts" / "pages"
AXE = ROOT / "tests" / "browser" / "node_modules" / "axe-core" / "axe.min.js"
LANGUAGES = ("en", "ja")
PHONE, DESKTOP = 390, 1280

# (name, path): every page a person sees, the path filled from the seeded site's ids.
PAGES = [
    ("sign-in", "/sign-in"),  # seen signed out
    ("sites", "/"),
    ("site-new", "/sites/new"),
    ("overview", "/sites/{slug}"),
    ("urls", "/sites/{slug}/urls"),
    ("url-edit", "/sites/{slug}/urls/{url_id}"),
    ("url-edit-japanese", "/sites/{slug}/urls/{japanese_url_id}"),
    ("urls-empty-site", "/sites/{empty_slug}/urls"),
    ("import", "/sites/{slug}/import"),
    ("generations", "/sites/{slug}/generations"),
    ("generation", "/sites/{slug}/generations/{generation_id}"),
    ("announcements", "/sites/{slug}/announcements"),
    ("engines", "/sites/{slug}/engines"),
    ("discover", "/sites/{slug}/discover"),
    ("verification", "/sites/{slug}/verification"),
    ("settings", "/sites/{slug}/settings"),
    ("publish", "/sites/{slug}/publish"),
    ("delete", "/sites/{slug}/delete"),
    ("tokens", "/tokens"),
    ("users", "/users"),
    ("account", "/account"),
    ("task", "/tasks/{task_id}"),
    ("task-setup-check", "/tasks/{setup_task_id}"),  # "Test my setup" on How to publish
    ("sitemap-view", "/sitemaps/{slug}/view/sitemap.xml"),
]
SIGNED_OUT = {"sign-in"}
# GET routes of the dashboard that answer a page's script with JSON, not a person.
NOT_PAGES = {"/sites/*/settings/schedule-preview"}

pytestmark = pytest.mark.skipif(not os.path.exists(CHROMIUM),
                                reason=f"no Chromium at {CHROMIUM} (.ci/run installs it)")


@pytest.fixture(scope="module")
def seeded(module_app):
    """The showcase dashboard (tests/showcase.py), seeded once for the tests of this module
    that only look at it."""
    return seed_showcase(module_app)


@pytest.fixture(scope="module")
def server(module_app, seeded):
    with served(module_app) as base_url:
        yield base_url


@pytest.fixture
def own_server(app):
    """The showcase dashboard of the test's own, for a test that changes it."""
    seed_showcase(app)
    with served(app) as base_url:
        yield base_url


def open_as(browser, server: str, language: str, email: str | None = "owner@example.com",
            **options):
    """A browser tab in `language`, signed in as `email` (None: signed out)."""
    context = browser.new_context(viewport={"width": DESKTOP, "height": 900},
                                  extra_http_headers={"Accept-Language": language},
                                  locale=language, **options)
    page = context.new_page()
    if email:
        page.goto(f"{server}/sign-in")
        page.locator("#email").fill(email)
        page.locator("#password").fill(PASSWORD)
        page.locator("form button[type=submit]").click()
        page.wait_for_url(f"{server}/")
    return page


def each_page(browser, server: str, seeded: dict, language: str, **options):
    """(name, page) for every page of PAGES, loaded in `language`."""
    signed_in = open_as(browser, server, language, **options)
    signed_out = open_as(browser, server, language, email=None, **options)
    try:
        for name, path in PAGES:
            page = signed_out if name in SIGNED_OUT else signed_in
            answer = page.goto(server + path.format(**seeded))
            assert answer.status == 200, f"{name}: {path} answered {answer.status}"
            yield name, page
    finally:
        signed_in.context.close()
        signed_out.context.close()


def shot(page, name: str) -> None:
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=str(ARTIFACTS / f"{name}.png"), full_page=True)


@pytest.mark.parametrize("language", LANGUAGES)
def test_every_page_fits_a_phone_without_sideways_scrolling(browser, server, seeded, language):
    too_wide = {}
    for name, page in each_page(browser, server, seeded, language):
        shot(page, f"{name}.{language}.{DESKTOP}")
        page.set_viewport_size({"width": PHONE, "height": 844})
        width = page.evaluate("document.documentElement.scrollWidth")
        if width > PHONE:
            too_wide[name] = width
        shot(page, f"{name}.{language}.{PHONE}")
        page.set_viewport_size({"width": DESKTOP, "height": 900})
    assert too_wide == {}, f"pages wider than {PHONE} px: {too_wide}"


def test_on_a_phone_what_labels_a_thing_stays_beside_it(browser, server, seeded):
    """Things the 390 px screenshots showed apart: a chart legend's key at the end of one line
    and its words on the next, a site's second announcement under the cell's label instead of
    beside it, and a sitemap view's cells wider than their table."""
    page = open_as(browser, server, "ja")
    page.set_viewport_size({"width": PHONE, "height": 844})
    page.goto(f"{server}/sites/{seeded['slug']}")
    gaps = page.evaluate("""() => [...document.querySelectorAll('.chart-legend .key')].map(key => {
        const words = document.createRange();
        words.selectNodeContents(key.nextSibling);
        const first = words.getClientRects()[0], box = key.getBoundingClientRect();
        return [Math.round(first.left - box.right), Math.round(first.top - box.top)];
    })""")
    assert len(gaps) == 2 and all(0 <= left < 16 and abs(top) < 12 for left, top in gaps), gaps
    page.goto(f"{server}/")
    lefts = page.evaluate("""() => {
        const cell = [...document.querySelectorAll('table.sites td')].find(
            td => td.querySelectorAll('.status').length === 2);  // two engines announced
        const start = cell.getBoundingClientRect().left;
        return [...cell.querySelectorAll('.status')].map(
            badge => Math.round(badge.getBoundingClientRect().left - start));
    }""")
    assert len(lefts) == 2 and min(lefts) > 100, f"announcements under their label: {lefts}"
    page.goto(f"{server}/sitemaps/{seeded['slug']}/view/sitemap.xml")
    outside = page.evaluate("""() => [...document.querySelectorAll('td')].filter(td =>
        td.getBoundingClientRect().right > td.closest('table').getBoundingClientRect().right + 0.5
    ).length""")
    assert outside == 0, f"{outside} cells of the sitemap view are wider than their table"
    split = page.evaluate("""() => [...document.querySelectorAll('td[data-label]')].filter(td => {
        const words = document.createRange();
        words.selectNodeContents(td);
        return new Set([...words.getClientRects()].filter(r => r.width && r.height < 40)
                       .map(r => Math.round(r.bottom))).size > 1;
    }).map(td => td.textContent)""")
    assert split == [], f"a lastmod beside its label broken over two lines: {split}"
    page.context.close()


def test_delete_this_url_stands_apart_from_save(browser, server, seeded):
    page = open_as(browser, server, "en")
    for width in (DESKTOP, PHONE):
        page.set_viewport_size({"width": width, "height": 900})
        page.goto(f"{server}/sites/{seeded['slug']}/urls/{seeded['url_id']}")
        save = page.get_by_role("button", name="Save", exact=True).bounding_box()
        delete = page.get_by_role("button", name="Delete this URL").bounding_box()
        assert delete["y"] - (save["y"] + save["height"]) >= 24, (width, save, delete)
    page.context.close()


BROKEN_WORDS = r"""() => {
    const broken = [];
    const places = 'h1, h2, h3, th, label, legend, summary, button, .tabs a, nav a, dt';
    for (const el of document.querySelectorAll(places)) {
        const walker = document.createTreeWalker(el, NodeFilter.SHOW_TEXT);
        for (let text = walker.nextNode(); text; text = walker.nextNode()) {
            for (const word of text.textContent.matchAll(/\b[A-Za-z]{4,}\b/g)) {
                const range = document.createRange();
                range.setStart(text, word.index);
                range.setEnd(text, word.index + word[0].length);
                const lines = new Set([...range.getClientRects()].filter(r => r.width)
                                      .map(r => Math.round(r.top)));
                if (lines.size > 1) broken.push(`${el.tagName.toLowerCase()}: ${word[0]}`);
            }
        }
    }
    return broken;
}"""


def test_no_heading_label_or_button_breaks_an_english_word_in_two(browser, server, seeded):
    broken = {}
    for name, page in each_page(browser, server, seeded, "en"):
        for width in (DESKTOP, PHONE):
            page.set_viewport_size({"width": width, "height": 900})
            found = page.evaluate(BROKEN_WORDS)
            if found:
                broken[f"{name} at {width} px"] = found
    assert broken == {}, f"words broken across lines: {broken}"


def _readable(violations: list[dict]) -> str:
    return "\n".join(
        f"  {v['impact']}: {v['id']}: {v['help']} ({len(v['nodes'])}x, e.g. "
        f"{v['nodes'][0]['target']}: {v['nodes'][0]['failureSummary'].splitlines()[-1].strip()})"
        for v in violations)


def serious_violations(page) -> list[dict]:
    """What axe-core finds serious or critical in the page as it stands."""
    if not page.evaluate("typeof axe !== 'undefined'"):
        page.evaluate(AXE.read_text())
    result = page.evaluate("axe.run(document, {resultTypes: ['violations']})")
    return [v for v in result["violations"] if v["impact"] in ("serious", "critical")]


needs_axe = pytest.mark.skipif(
    not AXE.exists(), reason=f"no {AXE.relative_to(ROOT)}: `make test` installs axe-core "
    "from tests/browser/package-lock.json when npm exists")


@needs_axe
@pytest.mark.parametrize("language", LANGUAGES)
def test_no_page_has_a_serious_accessibility_violation(browser, server, seeded, language):
    found = {}
    # The pages forbid inline and injected script (Content-Security-Policy): the scan's own
    # context bypasses it to load axe.
    for name, page in each_page(browser, server, seeded, language, bypass_csp=True):
        for width in (DESKTOP, PHONE):
            page.set_viewport_size({"width": width, "height": 900})
            serious = serious_violations(page)
            if serious:
                found[f"{name} at {width} px"] = _readable(serious)
    assert found == {}, "axe-core found serious or critical violations:\n" + "\n".join(
        f"{name}:\n{text}" for name, text in found.items())


@needs_axe
def test_the_scan_reports_a_control_without_a_label(browser, server, seeded):
    page = open_as(browser, server, "en", bypass_csp=True)
    page.goto(f"{server}/sites/{seeded['slug']}/urls")
    assert serious_violations(page) == []
    page.evaluate("document.querySelector('main').append(document.createElement('select'))")
    assert [v["id"] for v in serious_violations(page)] == ["select-name"]
    page.context.close()


# --- The keyboard alone ------------------------------------------------------------------------

def tab_to(page, text: str, limit: int = 60) -> None:
    """Press Tab until the focused element's accessible text is `text`; it must show a ring."""
    for _ in range(limit):
        page.keyboard.press("Tab")
        focused = page.evaluate("""() => {
            const el = document.activeElement;
            const style = getComputedStyle(el);
            const label = el.labels && el.labels.length ? el.labels[0].innerText : '';
            const text = el.innerText || el.value || label || el.getAttribute('aria-label') || '';
            return {text: text.trim(), label: label.trim(), outline: style.outlineStyle,
                    width: style.outlineWidth};
        }""")
        if text in (focused["text"], focused["label"]):
            # the app's own ring (app.css, :focus-visible), not the browser's thin default
            assert focused["outline"] in ("solid", "double", "dashed", "dotted") and float(
                focused["width"].removesuffix("px")) >= 2, (
                f"{text!r} has keyboard focus but no clear focus ring: {focused}")
            return
    raise AssertionError(f"{text!r} not reached with {limit} presses of Tab")


def test_sign_in_create_a_site_and_regenerate_it_with_the_keyboard_alone(app, browser,
                                                                        own_server):
    from playwright.sync_api import expect

    server = own_server
    page = open_as(browser, server, "en", email=None)
    page.goto(f"{server}/sign-in")
    # The e-mail field has the focus on arrival: wait for it, as a person waits to see the
    # cursor there (on a busy machine the keys came before the focus, and went nowhere).
    expect(page.locator("#email")).to_be_focused()
    page.keyboard.type("editor@example.com")
    tab_to(page, "Password")
    page.keyboard.type(PASSWORD)
    page.keyboard.press("Enter")
    page.wait_for_url(f"{server}/")

    tab_to(page, "New site")
    page.keyboard.press("Enter")
    page.wait_for_url(f"{server}/sites/new")
    tab_to(page, "Name")
    page.keyboard.type("Keyboard Shop")
    tab_to(page, "Base URL")
    page.keyboard.type("https://keys.example.com/")
    tab_to(page, "Create the site")
    page.keyboard.press("Space")
    page.wait_for_url(f"{server}/sites/keyboard-shop")
    assert page.locator("h1").inner_text() == "Keyboard Shop"

    tab_to(page, "URLs")
    page.keyboard.press("Enter")
    page.wait_for_url(f"{server}/sites/keyboard-shop/urls")
    tab_to(page, "one at a time")  # the next steps of a site without URLs
    page.keyboard.press("Enter")  # unfolds "Add a URL"
    tab_to(page, "URL")
    page.keyboard.type("https://keys.example.com/first")
    tab_to(page, "Add")
    page.keyboard.press("Enter")
    expect(page.locator(".flash")).to_be_visible()

    page.goto(f"{server}/sites/keyboard-shop")
    tab_to(page, "Regenerate now")
    page.keyboard.press("Space")
    expect(page.locator("#task-message")).to_contain_text("succeeded")  # the run, however long
    assert "1 URL in 1 file" in page.locator("#task-message").inner_text()
    published = page.evaluate("url => fetch(url).then(answer => answer.text())",
                              f"{server}/sitemaps/keyboard-shop/sitemap.xml")
    assert "<loc>https://keys.example.com/first</loc>" in published
    page.context.close()


def test_the_page_list_names_every_dashboard_page(app):
    """A GET route of the dashboard that is not in PAGES fails here, so the list stays whole."""
    listed = {re.sub(r"\{[^}]+\}", "*", path) for _, path in PAGES}
    pages = {re.sub(r"<[^>]+>", "*", rule.rule) for rule in app.url_map.iter_rules()
             if rule.endpoint.startswith("dashboard.") and "GET" in rule.methods
             and not rule.rule.endswith((".csv", ".json"))}
    assert pages - listed - NOT_PAGES == set(), "dashboard pages missing from PAGES"
