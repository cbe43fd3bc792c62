""""Test my setup" on the How to publish page, end to end: an editor's button starts the check
as a task, which fetches through the site's own host (a real server on 127.0.0.1 that answers
some files right and some wrong) and says what each address answered, in English and Japanese;
a request this server's own rule refuses is said to be refused, naming OUTBOUND_ALLOW."""

from __future__ import annotations

import html
import re

import pytest
from pytest_httpserver import HTTPServer

from tests.builders import make_site
from tests.test_dashboard import as_role, post  # noqa: F401  (fixtures)
from webapp import jobs
from webapp.models import Url
from webapp.outbound import Policy
from webapp.said import render
from webapp.sitemaps import get_store
from webapp.sites import setup_check

pytestmark = pytest.mark.session_outside_app_context


@pytest.fixture
def live_site():
    server = HTTPServer(host="127.0.0.1", port=0, threaded=True)
    server.start()
    yield server
    server.clear()
    server.stop()


@pytest.fixture
def site(app, session, live_site):
    """A site on the live server: an index and three files (two URLs a file), IndexNow on."""
    found = make_site(session, base_url=live_site.url_for("/"), max_urls_per_file=2,
                      indexnow_enabled=True)
    session.add_all(Url(site_id=found.id, loc=f"{found.base_url}page/{n}") for n in range(5))
    found.url_count += 5
    session.commit()
    jobs.regenerate(found.id, app)
    return found


def _serve_some_right_and_some_wrong(app, site, live_site) -> dict[str, str]:
    """The host answers robots.txt, the index, sitemap-1.xml and the key file right, 404 for
    sitemap-2.xml and another body for sitemap-3.xml; the URL of each file by name."""
    store = get_store(app)
    published = store.published(site.storage_key)
    assert sorted(published.files) == ["sitemap-1.xml", "sitemap-2.xml", "sitemap-3.xml",
                                       "sitemap.xml"]
    body = {name: store.local(file).read_bytes() for name, file in published.files.items()}
    live_site.expect_request("/robots.txt").respond_with_data(
        f"User-agent: *\nDisallow:\nSitemap: {site.sitemap_url}\n", content_type="text/plain")
    for name in ("sitemap.xml", "sitemap-1.xml"):
        live_site.expect_request(f"/{name}").respond_with_data(
            body[name], content_type="application/xml; charset=utf-8")
    live_site.expect_request("/sitemap-2.xml").respond_with_data("Not Found", status=404)
    live_site.expect_request("/sitemap-3.xml").respond_with_data(
        body["sitemap-3.xml"].replace(b"page/4", b"page/9"), content_type="application/xml")
    live_site.expect_request(f"/{site.indexnow_key}.txt").respond_with_data(
        site.indexnow_key, content_type="text/plain")
    return {name: live_site.url_for(f"/{name}") for name in [*body, "robots.txt",
                                                             f"{site.indexnow_key}.txt"]}


def _task_message(client, location: str, language: str) -> list[str]:
    page = client.get(location, headers={"Accept-Language": language}).text
    return html.unescape(re.search(r'<pre id="task-message">(.*?)</pre>', page, re.S)
                         .group(1)).splitlines()


def test_the_button_says_what_each_address_of_the_site_answered(app, as_role, site,
                                                                live_site):
    url = _serve_some_right_and_some_wrong(app, site, live_site)
    editor = as_role("editor")
    publish_page = editor.get(f"/sites/{site.slug}/publish").text
    assert f'action="/sites/{site.slug}/publish/test"' in publish_page
    answer = post(editor, f"/sites/{site.slug}/publish/test")
    assert answer.status_code == 302 and "/tasks/" in answer.headers["Location"]
    asked = [request.path for request, _ in live_site.log]
    assert asked == ["/robots.txt", "/sitemap.xml", "/sitemap-1.xml", "/sitemap-2.xml",
                     "/sitemap-3.xml", f"/{site.indexnow_key}.txt"]  # through its own host

    assert _task_message(editor, answer.headers["Location"], "en") == [
        f"OK: {url['robots.txt']} answered 200 (text/plain) and names the sitemap",
        f"OK: {url['sitemap.xml']} answered 200 with the published file "
        "(application/xml; charset=utf-8)",
        f"OK: {url['sitemap-1.xml']} answered 200 with the published file "
        "(application/xml; charset=utf-8)",
        f"Problem: {url['sitemap-2.xml']} answered 404: the site's server does not pass it "
        "to this app",
        f"Problem: {url['sitemap-3.xml']} answered 200 (application/xml), but not with the "
        "file this app publishes: the site's server answers it itself, or keeps an old copy",
        f"OK: {url[site.indexnow_key + '.txt']} answered 200 (text/plain) with the IndexNow "
        "key"]
    japanese = _task_message(editor, answer.headers["Location"], "ja")
    assert japanese[0] == (f"OK: {url['robots.txt']} は 200（text/plain）を返し、サイトマップを"
                           "記載しています")
    assert japanese[1] == (f"OK: {url['sitemap.xml']} は 200 で公開中のファイルを返しました"
                           "（application/xml; charset=utf-8）")
    assert japanese[3] == (f"問題: {url['sitemap-2.xml']} は 404 を返しました。サイトのサーバーが"
                           "このアプリへ転送していません")
    assert japanese[4].startswith(f"問題: {url['sitemap-3.xml']} は 200（application/xml）を"
                                  "返しましたが、このアプリが公開しているファイルではありません")
    page = editor.get(answer.headers["Location"], headers={"Accept-Language": "ja"}).text
    assert "設定をテスト" in page and "公開方法に戻る" in page


def test_only_editors_test_the_setup_and_the_form_needs_its_csrf_token(as_role, site):
    assert post(as_role("viewer"), f"/sites/{site.slug}/publish/test").status_code == 403
    assert "publish/test" not in as_role("viewer").get(f"/sites/{site.slug}/publish").text
    answer = as_role("editor").post(f"/sites/{site.slug}/publish/test", data={})
    assert answer.status_code == 400 and "CSRF" in answer.text


def test_a_request_this_servers_rule_refuses_is_said_naming_the_setting(app, site, live_site):
    """Without OUTBOUND_ALLOW, 127.0.0.1 is not fetched: said as this server's rule, not as
    what the site answered; the site hears nothing."""
    policy = Policy.of({"NOTIFY_TIMEOUT": 5, "OUTBOUND_ALLOW": ""})
    outcomes, notes = setup_check.check_setup(site, get_store(app).published(site.storage_key),
                                              policy)
    assert [outcome.ok for outcome in outcomes] == [None] * 6 and notes == []
    assert live_site.log == []
    lines = setup_check.said_lines(outcomes, notes)
    with app.test_request_context():
        assert render(lines[0]) == (
            f"Not checked: {site.base_url}robots.txt was not fetched: this server's setting "
            "OUTBOUND_ALLOW keeps it from sending there (127.0.0.1 resolves to a loopback "
            "address; the server sends nothing there unless the operator allows it "
            "(OUTBOUND_ALLOW))")
    with app.test_request_context(headers={"Accept-Language": "ja"}):
        assert render(lines[0]).startswith(
            f"未確認: {site.base_url}robots.txt は取得していません。このサーバーの設定 "
            "OUTBOUND_ALLOW により、そこへは送信しません（127.0.0.1 は")


def test_the_check_is_bounded_in_files_and_time(app, site, live_site):
    """At most `max_files` files, and no request after `seconds`: each says how many it
    left."""
    ticks = iter([0.0, 0.0, 0.0, 0.0, 61.0])
    policy = Policy.of({"NOTIFY_TIMEOUT": 5, "OUTBOUND_ALLOW": "127.0.0.1"})
    outcomes, notes = setup_check.check_setup(
        site, get_store(app).published(site.storage_key), policy, max_files=2, seconds=60,
        clock=lambda: next(ticks))
    assert len(outcomes) == 3  # robots.txt, the index, sitemap-1.xml; then time was up
    with app.test_request_context():
        assert [render(note) for note in notes] == [
            "2 more sitemap files not checked (at most 2 are)",
            "stopped after 60 s: 1 address not checked"]
