"""`flask notify`, `flask notifications ...` and the engine settings, as a person runs them; and
a delivering process killed midway."""

from __future__ import annotations

import io
import os
import signal
import subprocess
import sys
import threading
from datetime import timedelta

import pytest
from sqlalchemy import select
from werkzeug import Response

from tests.builders import make_site
from tests.test_cli import assert_fails_cleanly, shown
from tests.test_notify import KEY, ledger, posted, publish
from webapp import notify
from webapp.models import Delivery, utcnow
from webapp.urls import import_urls, save_url


@pytest.fixture
def site(session, engine):
    site = make_site(session, base_url=engine.url_for("/"), indexnow_key=KEY)
    return site


def run(runner, *args):
    result = runner.invoke(args=list(args))
    assert result.exit_code == 0, result.output
    return result.stdout


def test_engine_settings_round_trip(runner, site, engine, tmp_path):
    run(runner, "sites", "set", "shop", "indexnow_enabled=on",
        f"indexnow_endpoint={engine.url_for('/indexnow')}", "gsc_property=sc-domain:shop.test",
        f"ping_urls={engine.url_for('/a')}?s={{sitemap}},{engine.url_for('/b/{sitemap}')}")
    settings = shown(runner, "shop")
    assert settings["indexnow_enabled"] == "on"
    assert settings["indexnow_endpoint"] == engine.url_for("/indexnow")
    assert settings["gsc_property"] == "sc-domain:shop.test"
    assert settings["ping_urls"] == (f"{engine.url_for('/a')}?s={{sitemap}},"
                                     f"{engine.url_for('/b/{sitemap}')}")
    run(runner, "sites", "set", "shop", "indexnow_key=new")
    rotated = shown(runner, "shop")["indexnow_key"]
    assert rotated != KEY and len(rotated) == 32
    run(runner, "sites", "set", "shop", "indexnow_endpoint=", "ping_urls=")
    assert shown(runner, "shop")["indexnow_endpoint"] == shown(runner, "shop")["ping_urls"] == ""


@pytest.mark.parametrize("assignment, words", [
    ("indexnow_enabled=maybe", ("indexnow_enabled", "on or off")),
    ("indexnow_key=short", ("indexnow_key", "8 to 128")),
    ("indexnow_key=bad key!x", ("indexnow_key",)),
    ("indexnow_key_location=home", ("indexnow_key_location", "root, sitemap")),
    ("indexnow_endpoint=ftp://x/", ("indexnow_endpoint", "http://")),
    ("gsc_property=example.com", ("gsc_property", "sc-domain:")),
    ("gsc_credentials=/nonexistent/key.json", ("gsc_credentials", "cannot be read")),
    ("ping_urls=http://pings.example/ping", ("ping_urls", "{sitemap}")),
    ("ping_urls=https://www.google.com/ping?sitemap={sitemap}", ("ping_urls", "retired")),
    ("ping_urls=http://www.bing.com/ping?sitemap={sitemap}", ("ping_urls", "retired")),
    ("ping_urls=http://[::1/{sitemap}", ("ping_urls", "http://")),
    ("ping_urls=http://ann:secret@pings.example/{sitemap}", ("ping_urls", "password")),
    ("indexnow_endpoint=http://ann:secret@engine.example/indexnow", ("indexnow_endpoint",
                                                                    "password")),
    ("indexnow_endpoint=http://[::1/x", ("indexnow_endpoint",)),
])
def test_bad_engine_settings_are_refused_and_nothing_changes(runner, site, assignment, words):
    before = shown(runner, "shop")
    assert_fails_cleanly(runner.invoke(args=["sites", "set", "shop", "indexnow_enabled=on",
                                             assignment]), *words)
    assert shown(runner, "shop") == before


@pytest.mark.parametrize("content", ['{"type": "authorized_user"}', '["a list"]', "not json"])
def test_a_credentials_file_that_is_no_service_account_is_refused(runner, site, tmp_path,
                                                                  content):
    path = tmp_path / "key.json"
    path.write_text(content)
    assert_fails_cleanly(runner.invoke(args=["sites", "set", "shop", f"gsc_credentials={path}"]),
                         "gsc_credentials", "service account")


def test_key_beside_the_sitemap_needs_the_sitemap_on_the_sites_host(runner):
    run(runner, "sites", "create", "Shop", "https://shop.example.com/", "--sitemap-url",
        "https://maps.example.net/shop/sitemap.xml")
    assert_fails_cleanly(runner.invoke(args=["sites", "set", "shop",
                                             "indexnow_key_location=sitemap"]),
                         "indexnow_key_location", "under the sitemap's folder")


def test_key_file_is_served_beside_the_sitemap_when_so_configured(app, session, client):
    site = make_site(session, base_url="https://shop.example.com/en/",
                     sitemap_url="https://shop.example.com/en/sitemap.xml",
                     indexnow_key=KEY, indexnow_key_location="sitemap")
    save_url(session, site, "https://shop.example.com/en/a")
    session.commit()
    publish(app, site)
    answer = client.get(f"/en/{KEY}.txt", base_url="https://shop.example.com")
    assert (answer.status_code, answer.text) == (200, KEY)
    assert client.get("/en/other.txt", base_url="https://shop.example.com").status_code == 404


def test_notify_with_preflight_sends_when_key_and_robots_are_in_place(runner, session, site,
                                                                      engine, app):
    engine.expect_request(f"/{KEY}.txt").respond_with_data(KEY)
    engine.expect_request("/robots.txt").respond_with_data(
        f"User-agent: *\nSitemap: {site.sitemap_url}\n")
    engine.expect_request("/indexnow", method="POST").respond_with_data("", status=200)
    run(runner, "sites", "set", "shop", "indexnow_enabled=on",
        f"indexnow_endpoint={engine.url_for('/indexnow')}")
    run(runner, "urls", "add", "shop", f"{site.base_url}a")
    output = run(runner, "sitemaps", "generate", "shop", "--no-notify")
    assert "succeeded" in output and posted(engine) == []
    output = run(runner, "notify", "shop", "--preflight")
    assert f"ok: the IndexNow key file {site.base_url}{KEY}.txt is served" in output
    assert "ok: " + site.base_url + "robots.txt names the sitemap" in output
    assert "#1\tindexnow\t1 URLs\tdelivered\t1 attempt\t200 OK" in output
    assert posted(engine)[0]["urlList"] == [f"{site.base_url}a"]
    assert run(runner, "notify", "shop") == "nothing to announce\n"
    listed = run(runner, "notifications", "list", "shop")
    assert listed.startswith("#1\tindexnow\t1 URLs\tdelivered")


def test_preflight_holds_indexnow_back_while_the_key_file_is_missing(runner, site, engine):
    engine.expect_request("/robots.txt").respond_with_data("User-agent: *\n")
    run(runner, "sites", "set", "shop", "indexnow_enabled=on",
        f"indexnow_endpoint={engine.url_for('/indexnow')}")
    run(runner, "urls", "add", "shop", f"{site.base_url}a")
    run(runner, "sitemaps", "generate", "shop", "--no-notify")
    output = run(runner, "notify", "shop", "--preflight")
    assert f"problem: the IndexNow key file {site.base_url}{KEY}.txt is not served" in output
    assert f"has no line `Sitemap: {site.sitemap_url}`" in output
    assert "holding back indexnow" in output
    assert posted(engine) == []
    assert "#1\tindexnow\t1 URLs\tpending\t0 attempts" in run(
        runner, "notifications", "list", "shop")


def test_generate_announces_and_retry_sends_a_failed_record_again(runner, site, engine):
    engine.expect_ordered_request("/indexnow").respond_with_data("bad key", status=403)
    engine.expect_ordered_request("/indexnow").respond_with_data("", status=200)
    run(runner, "sites", "set", "shop", "indexnow_enabled=on",
        f"indexnow_endpoint={engine.url_for('/indexnow')}")
    run(runner, "urls", "add", "shop", f"{site.base_url}a")
    output = run(runner, "sitemaps", "generate", "shop")
    assert "#1\tindexnow\t1 URLs\tfailed\t1 attempt\t403 Forbidden: the key is not valid" in output
    assert "retry" in run(runner, "notifications", "retry", "--help")
    output = run(runner, "notifications", "retry", "1")
    assert output.startswith("#1\tindexnow\t1 URLs\tdelivered\t2 attempts")
    assert_fails_cleanly(runner.invoke(args=["notifications", "retry", "1"]), "was delivered")
    assert_fails_cleanly(runner.invoke(args=["notifications", "retry", "99"]), "#99")
    result = runner.invoke(args=["notifications", "retry", "99999999999999999999999"])
    assert result.exit_code == 2 and "Traceback" not in result.output


def test_a_sender_killed_midway_loses_nothing_and_repeats_nothing_delivered(
        app, session, engine, database_url, tmp_path):
    """SIGKILL while the second of three requests is in flight: the first stays delivered, the
    second is sent again once its lease runs out (it was never confirmed), the third once."""
    site = make_site(session, base_url=engine.url_for("/"), indexnow_enabled=True,
                     indexnow_key=KEY, indexnow_endpoint=engine.url_for("/indexnow"))
    import_urls(session, site, io.StringIO("\n".join(
        f"{site.base_url}p/{n}" for n in range(25_000))))
    session.commit()
    publish(app, site)
    in_flight, release = threading.Event(), threading.Event()
    calls = []

    def answer(request):
        calls.append(request.get_json()["urlList"][0])
        if len(calls) == 2:
            in_flight.set()
            release.wait(30)
        return Response("", status=200)

    engine.expect_request("/indexnow").respond_with_handler(answer)
    app.config["NOTIFY_TIMEOUT"] = 20  # the sender's, so that its lease is the one judged here
    env = {**os.environ, "DATABASE_URL": database_url, "SECRET_KEY": "test",
           "INSTANCE_PATH": app.config["INSTANCE_PATH"], "SITEMAPS_DIR": app.config["SITEMAPS_DIR"],
           "NOTIFY_TIMEOUT": "20", "OUTBOUND_ALLOW": "127.0.0.1"}
    sender = subprocess.Popen([sys.executable, "-m", "flask", "--app", "webapp", "notify", "shop"],
                              env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    try:
        # A ceiling, not a duration: the command's start takes many seconds under load.
        assert in_flight.wait(180), sender.communicate(timeout=5)[0]
        sender.send_signal(signal.SIGKILL)
    finally:
        sender.communicate(timeout=10)
        release.set()
    assert [d.status for d in ledger(session)] == ["delivered", "sending", "pending"]

    notify.deliver(app)  # the third is due; the second is still within its lease: left alone
    assert [d.status for d in ledger(session)] == ["delivered", "sending", "delivered"]
    # The killed sender's lease has run out.
    later = utcnow() + notify.delivery_lease(app.config) + timedelta(seconds=1)
    notify.deliver(app, now=later)
    deliveries = ledger(session)
    assert [(d.status, d.attempts) for d in deliveries] == [
        ("delivered", 1), ("delivered", 2), ("delivered", 1)]
    first = [d.urls.split("\n")[0] for d in deliveries]
    assert calls == [first[0], first[1], first[2], first[1]]
    sent = {url for body in posted(engine) for url in body["urlList"]}
    assert len(sent) == 25_000
    assert session.scalar(select(Delivery.url_count).where(Delivery.id == deliveries[2].id)) == 5000
