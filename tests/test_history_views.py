"""Seeing what happened: what triggered each run and the line it logs, the Search engines tab,
the ledger's filters and pages, the overview's chart, and health warnings that link to their
URLs and stay dismissed until their condition changes."""

from __future__ import annotations

import logging
import re
from datetime import timedelta

import pytest
from sqlalchemy import select

from tests.builders import make_site, make_urls
from tests.test_dashboard import as_role, post, shop  # noqa: F401  (fixtures)
from webapp import jobs
from webapp.models import Delivery, Generation, User, utcnow
from webapp.notify import ping
from webapp.sitemaps import Limits
from webapp.tasks import work
from webapp.accounts.tokens import create_token
from webapp.urls import save_url

pytestmark = pytest.mark.session_outside_app_context


def newest_run(session) -> Generation:
    session.expire_all()
    return session.scalar(select(Generation).order_by(Generation.id.desc()).limit(1))


# What triggered each run

def test_the_schedule_and_a_change_are_recorded_as_what_triggered_a_run(app, session, shop):
    jobs.regenerate_if_due(shop.id, app, shop.next_run_at)  # its schedule is due
    assert newest_run(session).trigger == "schedule"
    shop.schedule = "off"
    session.commit()
    save_url(session, shop, f"{shop.base_url}new")
    session.commit()
    jobs.regenerate_if_due(shop.id, app, utcnow() + timedelta(hours=1))
    assert newest_run(session).trigger == "change"
    assert jobs.regenerate_if_due(shop.id, app, utcnow() + timedelta(hours=1)) is None


def test_small_sites_generated_together_record_their_trigger(app, session):
    scheduled = make_site(session, "A", "https://a.example.com/")
    changed = make_site(session, "B", "https://b.example.com/", schedule="off")
    make_urls(session, scheduled, 2)
    make_urls(session, changed, 2)
    scheduled.next_run_at = None  # due now
    changed.change_seq, changed.changed_at = 1, utcnow() - timedelta(hours=1)
    session.commit()
    outcome = jobs.generate_many_if_due([scheduled.id, changed.id], app)
    assert outcome == {scheduled.id: "succeeded", changed.id: "succeeded"}
    session.expire_all()
    triggers = dict(session.execute(select(Generation.site_id, Generation.trigger)).all())
    assert triggers == {scheduled.id: "schedule", changed.id: "change"}


def test_the_button_the_api_and_a_rollback_are_recorded_and_shown(as_role, app, session, shop):
    editor = as_role("editor")
    post(editor, "/sites/shop/regenerate")
    first = newest_run(session)
    assert first.trigger == "button"
    user = session.scalar(select(User).where(User.email == "editor@example.com"))
    _, secret = create_token(session, user, "test", "write", None)
    session.commit()
    headers = {"Authorization": f"Bearer {secret}"}
    assert app.test_client().post("/api/v1/sites/shop/generate",
                                  headers=headers).status_code == 202
    assert newest_run(session).trigger == "api"
    items = app.test_client().get("/api/v1/sites/shop/generations", headers=headers).json["items"]
    assert [item["trigger"] for item in items] == ["api", "button"]
    save_url(session, shop, f"{shop.base_url}added")
    session.commit()
    post(editor, "/sites/shop/regenerate")
    post(editor, f"/sites/shop/generations/{first.id}/rollback")
    rolled = newest_run(session)
    assert (rolled.trigger, rolled.rollback_of) == ("rollback", first.id)
    page = editor.get("/sites/shop/generations").text
    for label in ("Dashboard button", "API", "Rollback"):
        assert f'data-label="Trigger">{label}</td>' in page
    assert "Rollback" in editor.get(f"/sites/shop/generations/{rolled.id}").text
    assert "Dashboard button" in editor.get(f"/sites/shop/generations/{first.id}").text


# One line per run in the log

def test_a_run_logs_one_line_with_site_trigger_outcome_and_duration(app, session, shop, caplog):
    caplog.set_level(logging.INFO, logger="webapp.jobs")
    jobs.regenerate_if_due(shop.id, app, shop.next_run_at)
    [line] = [r.getMessage() for r in caplog.records if r.getMessage().startswith("run of site")]
    assert re.fullmatch(r"run of site shop: trigger=schedule outcome=succeeded "
                        r"duration=\d+\.\d\ds generation=\d+ urls=3", line)


def test_a_failed_run_logs_its_outcome_too(app, session, shop, caplog):
    caplog.set_level(logging.INFO, logger="webapp.jobs")
    # Three URLs cannot fit one URL per file in an index of one entry.
    jobs.regenerate(shop.id, app, trigger="cli", limits=Limits(max_urls=1, max_index_entries=1))
    lines = [r.getMessage() for r in caplog.records if r.getMessage().startswith("run of site")]
    assert len(lines) == 1 and "trigger=cli outcome=failed" in lines[0]


def test_the_workers_task_logs_each_site_of_its_batch(app, session, caplog):
    one = make_site(session, "One", "https://one.example.com/")
    two = make_site(session, "Two", "https://two.example.com/")
    make_urls(session, one, 1)
    make_urls(session, two, 1)
    one.next_run_at = two.next_run_at = None  # due now
    session.commit()
    caplog.set_level(logging.INFO, logger="webapp.jobs")
    with app.app_context():
        work.regenerate_due([one.id, two.id])
    lines = sorted(r.getMessage() for r in caplog.records
                   if r.getMessage().startswith("run of site"))
    assert [line.split(" duration=")[0] for line in lines] == [
        "run of site one: trigger=schedule outcome=succeeded",
        "run of site two: trigger=schedule outcome=succeeded"]


# The Search engines tab

@pytest.fixture
def announced(session, shop, engine):
    """IndexNow on, a delivered record of two URLs, a ping address with a record waiting."""
    shop.indexnow_enabled = True
    shop.indexnow_endpoint = engine.url_for("/indexnow")
    shop.ping_urls = engine.url_for("/ping") + "?sitemap={sitemap}"
    now = utcnow()
    delivered = Delivery(site_id=shop.id, engine="indexnow", status="delivered", attempts=1,
                         attempt_limit=4, url_count=2, http_status=200,
                         urls=f"{shop.base_url}page/0\n{shop.base_url}page/1",
                         outcome="200 OK: the URLs were received", created_at=now,
                         last_attempt_at=now, finished_at=now)
    waiting = Delivery(site_id=shop.id, engine="ping", status="pending", attempts=1,
                       attempt_limit=4, target=ping.targets(shop)[0],
                       outcome="503: the engine is busy; will try again", created_at=now,
                       last_attempt_at=now, next_attempt_at=now + timedelta(hours=2))
    session.add_all([delivered, waiting])
    session.commit()
    return delivered


def test_the_engines_page_says_per_engine_what_was_submitted_and_when_it_retries(
        as_role, session, shop, announced):
    page = as_role("viewer").get("/sites/shop/engines").text
    rows = re.findall(r"<tr>(.*?)</tr>", page, re.DOTALL)
    indexnow = next(row for row in rows if "<strong>IndexNow</strong>" in row)
    assert "Received by the engine." in indexnow and "200 OK: the URLs were received" in indexnow
    assert re.search(r'data-label="URLs submitted">2<br>', indexnow)
    ping = next(row for row in rows if "<strong>Ping</strong>" in row)
    assert "Not received yet; it is tried again." in ping
    next_at = (announced.created_at + timedelta(hours=2)).strftime('datetime="%Y-%m-%dT%H:%M')
    assert next_at in ping and "1 announcement waits" in ping
    # One row per URL submitted to IndexNow; a viewer sees no Resubmit button.
    assert f"{shop.base_url}page/0</td>" in page and f"{shop.base_url}page/1</td>" in page
    assert "Resubmit" not in page


def test_resubmitting_a_url_sends_it_again_through_the_ledger(as_role, session, shop, engine,
                                                              announced):
    engine.expect_request("/indexnow", method="POST").respond_with_data("", status=200)
    editor = as_role("editor")
    assert editor.get("/sites/shop/engines").text.count(">Resubmit</button>") == 2
    loc = f"{shop.base_url}page/1"
    answer = post(editor, "/sites/shop/engines/indexnow/resubmit", delivery=announced.id, loc=loc)
    assert answer.status_code == 302
    session.expire_all()
    again = session.scalar(select(Delivery).where(Delivery.id > announced.id,
                                                  Delivery.engine == "indexnow"))
    assert (again.urls, again.status) == (loc, "delivered")
    [(request, _)] = [entry for entry in engine.log if entry[0].path == "/indexnow"]
    assert request.get_json()["urlList"] == [loc]
    assert f"{loc} is submitted to IndexNow again" in editor.get(answer.headers["Location"]).text


def test_only_a_url_of_the_announcement_can_be_resubmitted(as_role, session, shop, announced):
    editor = as_role("editor")
    for fields in ({"delivery": announced.id, "loc": "https://elsewhere.example/x"},
                   {"delivery": "x", "loc": f"{shop.base_url}page/0"},
                   {"delivery": 99999999999, "loc": f"{shop.base_url}page/0"}):
        assert post(editor, "/sites/shop/engines/indexnow/resubmit", **fields).status_code == 404
    session.expire_all()
    assert session.scalar(select(Delivery.id).order_by(Delivery.id.desc()).limit(1)) == \
        announced.id + 1  # the ping record; nothing new


# The ledger's filters and pages

def test_the_ledger_filters_by_engine_and_status_and_pages(as_role, session, shop):
    now = utcnow()
    session.add_all(Delivery(site_id=shop.id, engine="gsc" if n % 3 else "ping",
                             status="failed" if n % 2 else "delivered", attempts=1,
                             attempt_limit=4, target=f"https://ping.example/{n}", created_at=now)
                    for n in range(120))
    session.commit()
    viewer = as_role("viewer")

    def ids(page: str) -> list[int]:
        return [int(i) for i in re.findall(r'<td data-label="#">(\d+)</td>', page)]

    first = viewer.get("/sites/shop/announcements").text
    assert len(ids(first)) == 50 and "Page 1 of 3" in first and "1–50 of 120" in first
    last = viewer.get("/sites/shop/announcements?page=3").text
    assert len(ids(last)) == 20 and ids(last) == [i - 100 for i in ids(first)[:20]]
    gsc_failed = viewer.get("/sites/shop/announcements?engine=gsc&status=failed").text
    stored = session.scalars(select(Delivery.id).where(Delivery.engine == "gsc",
                                                       Delivery.status == "failed")
                             .order_by(Delivery.id.desc())).all()
    assert ids(gsc_failed) == stored[:50] and len(stored) == 40
    assert "Page 1 of 1" not in gsc_failed  # one page: no pager


@pytest.mark.parametrize("query, parameter", [("page=0", "page"), ("page=x", "page"),
                                              ("page=99999999", "page"), ("engine=bing", "engine"),
                                              ("status=lost", "status")])
def test_a_bad_ledger_parameter_is_a_400_that_names_it(as_role, shop, query, parameter):
    answer = as_role("viewer").get(f"/sites/shop/announcements?{query}")
    assert answer.status_code == 400
    assert re.search(rf"{parameter} must be (one of|a whole number)", answer.text)


# The overview's chart

def test_the_url_chart_has_axes_a_point_per_generation_and_the_live_count(app, as_role, session,
                                                                          shop):
    jobs.regenerate(shop.id, app, trigger="cli")
    make_urls(session, make_site(session, "Other", "https://other.example.com/"), 1)
    save_url(session, shop, f"{shop.base_url}four")
    session.commit()
    jobs.regenerate(shop.id, app, trigger="cli")
    save_url(session, shop, f"{shop.base_url}five")
    session.commit()
    page = as_role("viewer").get("/sites/shop").text
    svg = re.search(r'<svg viewBox="0 0 640 240" role="img" aria-label="([^"]+)"(.*?)</svg>',
                    page, re.DOTALL)
    assert svg, "no chart"
    summary, body = svg.groups()
    assert "3 URLs published by the oldest generation shown, 5 live URLs now" in summary
    assert f"<figcaption>{summary}" in page
    titles = re.findall(r"<title>(.*?)</title>", body)
    assert [t.split(" (")[0] for t in titles] == [
        "Published by generation #1: 3 URLs", "Published by generation #2: 4 URLs",
        "Live URLs now: 5 URLs"]
    ticks = re.findall(r'<text class="tick"[^>]*text-anchor="end">([\d,]+)</text>', body)
    assert ticks == ["0", "2", "4", "6"]
    assert '<text class="unit"' in body and ">URLs</text>" in body
    dates = re.findall(r'text-anchor="(?:start|middle|end)">(\d+/\d+/\d+)</text>', body)
    assert len(dates) >= 2  # the first and the last at least, on the x axis


def test_the_overview_names_the_published_generation_by_its_number_in_the_site(
        app, as_role, session, shop):
    other = make_site(session, "Other", "https://other.example.com/")
    make_urls(session, other, 1)
    jobs.regenerate(other.id, app)
    published = jobs.regenerate(shop.id, app)  # the shop's first run, the app's second
    assert published.id == 2
    page = as_role("viewer").get("/sites/shop").text
    assert f'<a href="/sites/shop/generations/{published.id}">#1</a>' in page


# Health warnings: links to their URLs, and dismissing

@pytest.fixture
def dated(session, shop):
    """12 more URLs: 3 with a lastmod in the future, and 9 sharing one with the first 3."""
    future = (utcnow() + timedelta(days=30)).strftime("%Y-%m-%d")
    for n in range(3):
        save_ahead(session, shop, f"{shop.base_url}future/{n}", future)
    for n in range(9):
        save_url(session, shop, f"{shop.base_url}same/{n}", {"lastmod": "2026-01-01"})
    session.commit()
    return future


def save_ahead(session, shop, loc: str, lastmod: str) -> None:
    """A URL with a lastmod more than a day ahead, stored as before input refused one."""
    url, _ = save_url(session, shop, loc)
    url.lastmod = lastmod
    session.flush()


def locs_listed(page: str) -> set[str]:
    return set(re.findall(r"https://shop\.example\.com/[\w/]+", page)) - {
        "https://shop.example.com/sitemap.xml"}


def test_a_warning_links_to_exactly_the_urls_it_counts(as_role, shop, dated):
    viewer = as_role("viewer")
    page = viewer.get("/sites/shop").text
    assert "3 URLs have a lastmod in the future" in page
    links = re.findall(r'<a href="(/sites/shop/urls\?[^"]+)">Show these URLs</a>', page)
    assert sorted(links) == ["/sites/shop/urls?health=future-lastmod",
                             "/sites/shop/urls?lastmod=2026-01-01"]
    future = viewer.get("/sites/shop/urls?health=future-lastmod").text
    assert locs_listed(future) == {f"{shop.base_url}future/{n}" for n in range(3)}
    shared = viewer.get("/sites/shop/urls?lastmod=2026-01-01").text
    assert len(locs_listed(shared)) == 12  # the 3 of the shop fixture and the 9 added
    assert viewer.get("/sites/shop/urls?health=nonsense").status_code == 400


def test_every_url_with_a_high_priority_is_listed_by_its_warning(as_role, session):
    site = make_site(session, "High", "https://high.example.com/")
    make_urls(session, site, 11, priority=0.9)
    viewer = as_role("viewer")
    page = viewer.get("/sites/high").text
    assert "Every URL has a high priority" in page
    assert "/sites/high/urls?health=high-priority" in page
    listed = set(re.findall(r"https://high\.example\.com/page/\d+",
                            viewer.get("/sites/high/urls?health=high-priority").text))
    assert len(listed) == 11


def dismiss_form(page: str, kind: str) -> str:
    return re.search(rf'action="/sites/shop/warnings/{kind}/dismiss">.*?name="fingerprint" '
                     rf'value="([0-9a-f]{{64}})"', page, re.DOTALL).group(1)


def test_a_dismissed_warning_stays_hidden_until_its_condition_changes(as_role, session, shop,
                                                                       dated):
    editor = as_role("editor")
    page = editor.get("/sites/shop").text
    answer = post(editor, "/sites/shop/warnings/future-lastmod/dismiss",
                  fingerprint=dismiss_form(page, "future-lastmod"))
    assert answer.status_code == 302
    page = editor.get("/sites/shop").text
    assert "lastmod in the future" not in page and "share the lastmod" in page
    assert "1 dismissed warning is hidden" in page
    assert "lastmod in the future" in editor.get("/sites/shop?dismissed=shown").text
    save_url(session, shop, f"{shop.base_url}same/0", {"lastmod": "2026-02-01"})  # not in the set
    session.commit()
    assert "lastmod in the future" not in editor.get("/sites/shop").text
    save_ahead(session, shop, f"{shop.base_url}future/3", dated)  # one more: it changed
    session.commit()
    assert "4 URLs have a lastmod in the future" in editor.get("/sites/shop").text


def test_the_same_count_of_other_urls_is_a_change_too(as_role, session, shop, dated):
    editor = as_role("editor")
    post(editor, "/sites/shop/warnings/future-lastmod/dismiss",
         fingerprint=dismiss_form(editor.get("/sites/shop").text, "future-lastmod"))
    save_url(session, shop, f"{shop.base_url}future/0", {"lastmod": "2026-01-02"})
    save_ahead(session, shop, f"{shop.base_url}future/9", dated)
    session.commit()
    assert "3 URLs have a lastmod in the future" in editor.get("/sites/shop").text


def test_a_dismissal_needs_a_fingerprint_and_the_editor_role(as_role, shop, dated):
    editor = as_role("editor")
    answer = post(editor, "/sites/shop/warnings/future-lastmod/dismiss", fingerprint="nope")
    assert answer.status_code == 400 and "fingerprint" in answer.text
    viewer = as_role("viewer")
    assert "Dismiss" not in viewer.get("/sites/shop").text
    assert post(viewer, "/sites/shop/warnings/future-lastmod/dismiss",
                fingerprint="0" * 64).status_code == 403


# Japanese

def test_the_history_pages_speak_japanese(as_role, app, session, shop, announced, dated):
    jobs.regenerate(shop.id, app, trigger="cli")
    viewer = as_role("viewer")
    ja = {"Accept-Language": "ja"}
    engines = viewer.get("/sites/shop/engines", headers=ja).text
    assert "<h2>検索エンジン</h2>" in engines and "検索エンジンが受信しました。" in engines
    assert "1 件の通知が待機中です" in engines
    assert 'data-label="きっかけ">コマンドライン</td>' in \
        viewer.get("/sites/shop/generations", headers=ja).text
    ledger = viewer.get("/sites/shop/announcements", headers=ja).text
    assert "すべてのエンジン" in ledger
    assert '<option value="delivered">送信済み</option>' in ledger  # the filter's statuses too
    overview = viewer.get("/sites/shop", headers=ja).text
    assert "URL 数の推移" in overview and "該当する URL を表示" in overview
    assert "3 件の URL の最終更新日が未来の日付です" in overview
    bad = viewer.get("/sites/shop/announcements?page=0", headers=ja)
    assert bad.status_code == 400 and "page は 1 から" in bad.text
