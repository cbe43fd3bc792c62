"""What workers and outbound requests report, heard in the reader's language: an import's
per-row reasons and notes, pre-flight findings, why a request failed (classified into plain
reasons from real failures on 127.0.0.1); and the smaller things a Japanese reader met in
English or not at all (the changefreq words, "Verify key file" after its POST, the icon, the
slug of a Japanese site name)."""

from __future__ import annotations

import re
import socket
import threading
from contextlib import contextmanager

import pytest
from flask_babel import force_locale

from tests.builders import csrf_token, free_port, make_site
from tests.probes import wait_for
from webapp import jobs, notify, tasks
from webapp.models import Delivery, Task, utcnow
from webapp.notify import ledger
from webapp.outbound import OutboundError, Policy, fetch, send
from webapp.said import english, render, said
from webapp.sites import create_site
from webapp.urls import save_url
from webapp.accounts.users import create_user

PASSWORD = "correct horse battery"


pytestmark = pytest.mark.session_outside_app_context


def signed_in(app, session, role="editor", language="ja"):
    """A test client signed in as a new account that reads this language."""
    email = f"{role}-{language}@example.com"
    user = create_user(session, email, PASSWORD, role)
    user.language = language
    session.commit()
    client = app.test_client()
    csrf = csrf_token(client)
    assert client.post("/sign-in", data={"email": email, "password": PASSWORD,
                                         "csrf_token": csrf}).status_code == 302
    client.csrf = csrf_token(client, "/account")
    return client


def finished_task(client, location: str) -> dict:
    return wait_for(lambda: (state := client.get(location + ".json").json)["status"]
                    in ("done", "failed") and state, 60, f"task {location} to finish")


# 1, 2: an import's reasons and notes

def test_an_imports_reasons_and_notes_are_said_in_each_readers_language(app, session):
    site = make_site(session, strip_params="utm_*")
    japanese, english_reader = signed_in(app, session), signed_in(app, session, language="en")
    pasted = (f"loc,priority\n{site.base_url}a#top,0.5\nhttps://elsewhere.example/x,0.5\n"
              f"{site.base_url}b,7\n{site.base_url}c?utm_source=x,0.5\n")
    answer = japanese.post(f"/sites/{site.slug}/import",
                           data={"csrf_token": japanese.csrf, "pasted": pasted})
    state = finished_task(japanese, answer.headers["Location"])
    assert state["status"] == "done", state
    page = japanese.get(answer.headers["Location"]).text
    page = re.search(r'<pre id="task-message">(.*?)</pre>', page, re.DOTALL)[1]
    assert "フラグメント #top を取り除きました" in page
    assert "クエリパラメータ utm_source を取り除きました" in page
    assert "priority &#39;7&#39;: 0.0～1.0 で指定" in page, page  # the field, value as they are
    assert "the fragment #top was removed" not in page
    shown = english_reader.get(answer.headers["Location"]).text
    assert "the fragment #top was removed" in shown and "フラグメント" not in shown
    # The API's message and the CLI stay English.
    assert "line 2: loc 'https://shop.example.com/a#top': the fragment #top was removed" \
        in state["message"]
    # The site's health names the rejected rows in the reader's language too.
    overview = japanese.get(f"/sites/{site.slug}").text
    assert "0.0～1.0 で指定" in overview


def test_a_tasks_refusal_is_said_in_the_readers_language(app, session):
    # The worker checks the limits again; its refusal was shown as English text.
    site = make_site(session)
    reader = signed_in(app, session)
    task_id = tasks.start(session, app, "discover", site, max_pages=0, max_depth=3,
                          max_minutes=5)
    session.commit()  # queued on commit; here the work runs at once
    state = finished_task(reader, f"/tasks/{task_id}")
    assert state["status"] == "failed"
    assert "max_pages '0': must be a whole number from 1 to 10000" in state["message"]
    page = reader.get(f"/tasks/{task_id}").text
    assert "max_pages &#39;0&#39;: 1～10000 の整数を指定してください" in page, page


def test_a_report_stored_as_english_text_before_still_shows(app, session):
    site = make_site(session)
    reader = signed_in(app, session)
    # As an import wrote it before its reasons were message ids: English text in a value.
    lines = [said("added %(added)s, updated %(updated)s, unchanged %(unchanged)s, rejected "
                  "%(rejected)s", added=0, updated=0, unchanged=0, rejected=1),
             said("line %(line)s: %(reason)s", line=2,
                  reason="loc 'https://elsewhere.example/x': is outside the site")]
    with app.test_request_context():
        message = english(lines)
    session.add(Task(id="0123456789abcdef" * 2, kind="import", site_id=site.id, site_label=site.slug,
                     status="done", done=1, total=1, message=message,
                     result={"rejected": 1, "said": lines}, finished_at=utcnow()))
    session.commit()
    page = reader.get(f"/tasks/{'0123456789abcdef' * 2}").text
    assert "loc &#39;https://elsewhere.example/x&#39;: is outside the site" in page
    assert "2 行目" in page or "line 2" in page


def test_the_cli_reports_an_imports_rows_in_english(app, session, runner, tmp_path):
    site = make_site(session)
    data = tmp_path / "urls.txt"
    data.write_text(f"{site.base_url}a#top\nhttps://elsewhere.example/x\n")
    result = runner.invoke(args=["urls", "import", site.slug, str(data)])
    assert "line 1: loc 'https://shop.example.com/a#top': the fragment #top was removed" \
        in result.output
    assert "line 2: loc 'https://elsewhere.example/x': is outside the site" in result.output


# 4: why a request failed

@contextmanager
def silent_server():
    """A server on 127.0.0.1 that accepts connections and never answers."""
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen(8)
    accepted, stop = [], threading.Event()

    def accept():
        listener.settimeout(0.1)
        while not stop.is_set():
            try:
                accepted.append(listener.accept()[0])
            except OSError:
                pass

    thread = threading.Thread(target=accept, daemon=True)
    thread.start()
    try:
        yield listener.getsockname()[1]
    finally:
        stop.set()
        thread.join()
        for connection in accepted:
            connection.close()
        listener.close()


def failure(url: str, seconds: float = 2) -> OutboundError:
    with pytest.raises(OutboundError) as caught:
        send("GET", url, Policy(seconds, Policy.of({"NOTIFY_TIMEOUT": 1,
                                                    "OUTBOUND_ALLOW": "127.0.0.1"}).allow))
    return caught.value


def test_failures_are_classified_into_plain_reasons_from_real_failures(app):
    port = free_port()
    closed = failure(f"http://127.0.0.1:{port}/key.txt")
    with silent_server() as silent_port:
        silent = failure(f"http://127.0.0.1:{silent_port}/key.txt", seconds=0.5)
    unknown = failure("http://nonexistent.invalid/key.txt")
    with app.test_request_context(headers={"Accept-Language": "ja"}):
        assert render(closed.said) == (f"127.0.0.1:{port} に接続を拒否されました。"
                                       "そのポートで応答するサーバーがありません")
        assert render(silent.said) == "0.5 秒以内に応答がありません"
        assert render(unknown.said) == \
            "ホスト名 nonexistent.invalid が見つかりません（DNS）。アドレスを確認してください"
    for error in (closed, silent, unknown):
        assert "Errno" not in error.meaning and "gaierror(" not in error.meaning
        assert not error.permanent
    assert closed.meaning.endswith("refused the connection: nothing answers on that port; "
                                   "will try again")
    assert "ConnectionRefusedError" in closed.detail  # for operators
    assert "gaierror" in unknown.detail


def test_a_destination_not_allowed_is_said_plainly(app):
    with pytest.raises(OutboundError) as caught:
        send("GET", "http://localhost:9/", Policy(1))
    with app.test_request_context(headers={"Accept-Language": "ja"}):
        assert render(caught.value.said).startswith("localhost はループバックアドレスを指して")
    assert caught.value.permanent


def test_an_answer_too_large_is_said_plainly(app, engine):
    engine.expect_request("/big.xml").respond_with_data("x" * 2000)
    with pytest.raises(OutboundError) as caught:
        fetch(engine.url_for("/big.xml"), Policy.of(app.config), max_bytes=1000)
    with app.test_request_context(headers={"Accept-Language": "ja"}):
        assert render(caught.value.said).endswith("が 1,000 バイトを超えています")


def test_the_ledger_and_the_engines_tab_show_a_failures_reason_in_japanese(app, session):
    site = make_site(session, base_url=f"http://127.0.0.1:{free_port()}/", indexnow_enabled=True)
    delivery = Delivery(site_id=site.id, engine="indexnow", target="http://127.0.0.1:9/x",
                        status="sending", attempts=1, attempt_limit=5, urls=site.base_url,
                        url_count=1)
    session.add(delivery)
    session.commit()
    error = failure("http://nonexistent.invalid/indexnow")
    assert ledger.failed(session, delivery, error, utcnow(), 60)
    session.commit()
    session.refresh(delivery)
    assert "nonexistent.invalid" in delivery.outcome and "gaierror" in delivery.outcome
    reader = signed_in(app, session, role="viewer")
    for path in (f"/sites/{site.slug}/announcements", f"/sites/{site.slug}/engines"):
        page = reader.get(path).text
        assert "ホスト名 nonexistent.invalid が見つかりません（DNS）" in page, path
        assert "。再試行します" in page and "gaierror" not in page, path


def test_what_an_engines_answer_means_is_said_in_the_readers_language(app, session, engine):
    site = make_site(session, base_url=engine.url_for("/"), indexnow_enabled=True,
                     indexnow_key="testkey-0123456789",
                     indexnow_endpoint=engine.url_for("/indexnow"))
    engine.expect_ordered_request("/indexnow").respond_with_data("", status=403)
    engine.expect_ordered_request("/indexnow").respond_with_data("", status=200)
    for path in ("a", "b"):
        save_url(session, site, f"{site.base_url}{path}")
        session.commit()
        assert jobs.regenerate(site.id, app).status == "succeeded"
        notify.announce(site.id, app)
        notify.deliver(app)
    session.expire_all()
    refused, received = session.query(Delivery).order_by(Delivery.id).all()
    # The ledger keeps the English (the API and CLI read it) ...
    assert refused.outcome.startswith("403 Forbidden: the key is not valid; the engine could "
                                      "not fetch the key file at " + site.base_url)
    assert received.outcome == "200 OK: the URLs were received"
    # ... and a Japanese reader hears what each answer means in Japanese.
    reader = signed_in(app, session, role="viewer")
    for path in (f"/sites/{site.slug}/announcements", f"/sites/{site.slug}/engines"):
        page = reader.get(path).text
        assert "200 OK：URL が受け付けられました" in page, path
        assert "the URLs were received" not in page, path
    page = reader.get(f"/sites/{site.slug}/announcements").text
    assert "403 Forbidden：キーが無効です" in page and "the key is not valid" not in page


def test_an_old_ledger_row_shows_its_english_outcome(app, session):
    site = make_site(session, indexnow_enabled=True)
    session.add(Delivery(site_id=site.id, engine="indexnow", target="x", status="failed",
                         attempts=1, attempt_limit=1, urls=site.base_url, url_count=1,
                         outcome="could not connect to x: [Errno -2] old words"))
    session.commit()
    reader = signed_in(app, session, role="viewer")
    page = reader.get(f"/sites/{site.slug}/announcements").text
    assert "could not connect to x: [Errno -2] old words" in page
    # The sites page names the failure as a problem, in the reader's language.
    assert "IndexNow への直近の通知が失敗しました" in reader.get("/").text


def test_verify_key_file_says_an_unknown_host_plainly_and_redirects_after_the_post(app, session):
    site = make_site(session, base_url="http://nonexistent.invalid/", indexnow_enabled=True)
    reader = signed_in(app, session)
    answer = reader.post(f"/sites/{site.slug}/indexnow/verify", data={"csrf_token": reader.csrf})
    assert answer.status_code == 302
    assert answer.headers["Location"].endswith(f"/sites/{site.slug}/settings#indexnow-key")
    page = reader.get(answer.headers["Location"]).text
    shown = re.search(r'id="key-check">(.*?)</p>', page, re.DOTALL).group(1)
    assert "ホスト名 nonexistent.invalid が見つかりません（DNS）" in shown
    assert "gaierror" not in page
    # Shown once: reloading the page does not post again, nor show the old result.
    assert 'id="key-check"' not in reader.get(answer.headers["Location"]).text


# 3: pre-flight findings

def test_preflight_findings_are_said_in_the_readers_language(app, session):
    site = make_site(session, base_url=f"http://127.0.0.1:{free_port()}/", indexnow_enabled=True,
                     gsc_property="sc-domain:example.com")
    findings = notify.preflight.check(site, app.config)
    with app.test_request_context(headers={"Accept-Language": "ja"}):
        said_ja = [render(finding.said) for finding in findings]
    assert any(text.startswith("Search Console: 送信されません: Search Console のプロパティ")
               for text in said_ja), said_ja
    assert any("IndexNow のキーファイル" in text and "接続を拒否されました" in text
               for text in said_ja), said_ja
    assert any("robots.txt を取得できません" in text for text in said_ja), said_ja
    # The CLI's words stay English.
    assert any(finding.message.startswith("the IndexNow key file") for finding in findings)


# 6: the changefreq words

def test_never_and_no_value_read_differently_in_japanese(app, session):
    site = make_site(session)
    reader = signed_in(app, session)
    for path in (f"/sites/{site.slug}/settings", f"/sites/{site.slug}/urls"):
        page = reader.get(path).text
        assert "never（更新しない）" in page, path
    assert "指定しない（書き出さない）" in reader.get(f"/sites/{site.slug}/settings").text
    assert "指定しない（サイトの既定値）" in reader.get(f"/sites/{site.slug}/urls").text
    with force_locale("ja"), app.test_request_context():
        from webapp.views.display import changefreq_label
        assert changefreq_label("never") != changefreq_label(None)


# 9: the icon

def test_the_icon_is_served_and_linked(client, app, session):
    answer = client.get("/favicon.ico")
    assert answer.status_code == 200 and answer.mimetype == "image/svg+xml"
    assert answer.data.startswith(b"<svg")
    assert '<link rel="icon" href="/static/favicon.svg"' in client.get("/sign-in").text
    with client.get("/static/favicon.svg") as linked:
        assert linked.status_code == 200 and linked.data == answer.data


# 10: slugs of Japanese names

def test_a_japanese_site_name_takes_its_slug_from_the_host(session):
    shop, _ = create_site(session, "日本のお店", "https://www.shop.example.co.jp/")
    idn, _ = create_site(session, "例え", "https://例え.jp/")
    again, _ = create_site(session, "例えの別館", "https://例え.jp/annex/")
    numbered, _ = create_site(session, "２０２４年版", "https://2024.example.jp/")
    latin, _ = create_site(session, "Café ストア", "https://cafe.example.jp/")
    assert (shop.slug, idn.slug, again.slug, numbered.slug, latin.slug) == (
        "shop-example-co-jp", "xn--r8jz45g-jp", "xn--r8jz45g-jp-2", "2024-example-jp",
        "cafe")


# 5: the public view of a sitemap

def test_the_public_sitemap_view_follows_accept_language(app, client, session):
    site = make_site(session)
    save_url(session, site, f"{site.base_url}a", {})
    session.commit()
    jobs.regenerate(site.id, app)
    path = f"/sitemaps/{site.slug}/view/sitemap.xml"
    with client.get(path, headers={"Accept-Language": "ja,en;q=0.5"}) as answer:
        japanese = answer.get_data(as_text=True)
        assert answer.headers["Content-Language"] == "ja"
        assert "Accept-Language" in answer.headers["Vary"]
    assert '<html lang="ja">' in japanese and "<title>XML サイトマップ</title>" in japanese
    assert "このファイルには 1 件の URL が記載されています" in japanese
    assert '<th scope="col">最終更新日</th>' in japanese and 'data-label="更新頻度"' in japanese
    for header in ({"Accept-Language": "de,en;q=0.5"}, {}):
        with client.get(path, headers=header) as answer:
            english_page = answer.get_data(as_text=True)
        assert '<html lang="en">' in english_page and "This file lists 1 URLs." in english_page
        assert "サイトマップ" not in english_page


# 11: a generation's number within its site

def test_generations_are_numbered_within_their_site_and_linked_by_id(app, session):
    first = make_site(session)
    second = make_site(session, name="Blog", base_url="https://blog.example.com/")
    for site in (first, second):
        save_url(session, site, f"{site.base_url}a", {})
    session.commit()
    ids = [jobs.regenerate(site.id, app).id for site in (first, first, second)]
    reader = signed_in(app, session, role="viewer", language="en")
    listing = reader.get(f"/sites/{second.slug}/generations").text
    assert f'/sites/{second.slug}/generations/{ids[2]}">Generation 1</a>' in listing
    page = reader.get(f"/sites/{second.slug}/generations/{ids[2]}").text
    assert "<h2>Generation 1 " in page and f"Generation {ids[2]} " not in page
    assert f'/sites/{first.slug}/generations/{ids[1]}">Generation 2</a>' in \
        reader.get(f"/sites/{first.slug}/generations").text
