"""Telling search engines: what changed, what is sent, and what the ledger says afterwards.

Every engine here is the fake one on 127.0.0.1 (`engine`), which records what it got.
"""

from __future__ import annotations

import io
import json
import random
import re
import threading
import time
from datetime import UTC, datetime, timedelta

import pytest
from sqlalchemy import event, select
from werkzeug import Response

from tests.builders import another_shell, make_site
from tests.probes import wait_for, waiting_on_locks
from webapp import jobs, notify
from webapp.models import Delivery, Url, utcnow
from webapp.notify.ledger import backoff, claim
from webapp.outbound import retry_after_seconds
from webapp.sites import update_site
from webapp.urls import delete_url, import_urls, save_url

KEY = "testkey-0123456789"


@pytest.fixture
def site(session, engine):
    """A site on the fake engine's host with IndexNow on, its endpoint the fake engine."""
    return make_site(session, base_url=engine.url_for("/"), indexnow_enabled=True,
                     indexnow_key=KEY, indexnow_endpoint=engine.url_for("/indexnow"))


def publish(app, site):
    generation = jobs.regenerate(site.id, app)
    assert generation.status in ("succeeded", "unchanged"), generation.error
    return generation


def announce_one(app, session, site, path="a"):
    """One new URL, published and planned for announcement."""
    save_url(session, site, f"{site.base_url}{path}")
    session.commit()
    publish(app, site)
    notify.announce(site.id, app)


def ledger(session) -> list[Delivery]:
    session.expire_all()
    return session.scalars(select(Delivery).order_by(Delivery.id)).all()


def posted(engine) -> list[dict]:
    return [request.get_json() for request, _ in engine.log if request.path == "/indexnow"]


def test_announcement_is_exactly_what_was_added_changed_or_deleted(app, session, site):
    for path in ("a", "b", "c"):
        save_url(session, site, f"{site.base_url}{path}", {"lastmod": "2026-01-01"})
    session.commit()
    publish(app, site)
    first = notify.announce(site.id, app)
    assert [d.urls.split("\n") for d in ledger(session)] == [
        [f"{site.base_url}{p}" for p in ("a", "b", "c")]]

    save_url(session, site, f"{site.base_url}a", {"lastmod": "2026-02-01"})  # a lastmod moves
    save_url(session, site, f"{site.base_url}b", {"lastmod": "2026-01-01"})  # the same again
    delete_url(session, site, f"{site.base_url}c")
    save_url(session, site, f"{site.base_url}d")
    session.commit()
    publish(app, site)
    second = notify.announce(site.id, app)
    assert len(first) == len(second) == 1
    assert ledger(session)[-1].urls.split("\n") == [
        f"{site.base_url}a", f"{site.base_url}c", f"{site.base_url}d"]
    assert notify.announce(site.id, app) == []  # nothing twice


def test_changes_after_the_last_generation_wait_for_the_next_one(app, session, site):
    save_url(session, site, f"{site.base_url}a")
    session.commit()
    publish(app, site)
    save_url(session, site, f"{site.base_url}b")
    session.commit()
    notify.announce(site.id, app)
    assert [d.urls for d in ledger(session)] == [f"{site.base_url}a"]
    publish(app, site)
    notify.announce(site.id, app)
    assert [d.urls for d in ledger(session)] == [f"{site.base_url}a", f"{site.base_url}b"]


def test_an_import_announces_only_rows_that_changed(app, session, site):
    rows = "loc,lastmod\n" + "".join(f"{site.base_url}p{n},2026-01-01\n" for n in range(3))
    import_urls(session, site, io.StringIO(rows))
    session.commit()
    publish(app, site)
    notify.announce(site.id, app)
    again = rows.replace("p1,2026-01-01", "p1,2026-03-03")
    report = import_urls(session, site, io.StringIO(again))
    session.commit()
    assert (report.updated, report.unchanged) == (1, 2)
    publish(app, site)
    notify.announce(site.id, app)
    assert ledger(session)[-1].urls == f"{site.base_url}p1"


def test_urls_from_before_indexnow_was_turned_on_are_not_announced(app, session, engine):
    site = make_site(session, base_url=engine.url_for("/"))
    save_url(session, site, f"{site.base_url}old")
    session.commit()
    update_site(session, site, {"indexnow_enabled": "on"})
    save_url(session, site, f"{site.base_url}new")
    session.commit()
    publish(app, site)
    notify.announce(site.id, app)
    assert [d.urls for d in ledger(session)] == [f"{site.base_url}new"]


def test_indexnow_receives_host_key_location_and_encoded_urls(app, session, site, engine):
    engine.expect_request("/indexnow", method="POST").respond_with_data("", status=200)
    save_url(session, site, f"{site.base_url}café?q=ü")
    session.commit()
    publish(app, site)
    notify.announce(site.id, app)
    notify.deliver(app)
    origin = site.base_url.rstrip("/")
    assert posted(engine) == [{"host": origin.split("//")[1], "key": KEY,
                               "keyLocation": f"{origin}/{KEY}.txt",
                               "urlList": [f"{origin}/caf%C3%A9?q=%C3%BC"]}]
    request, _ = engine.log[0]
    assert request.headers["Content-Type"] == "application/json; charset=utf-8"
    [delivery] = ledger(session)
    assert (delivery.status, delivery.http_status, delivery.attempts) == ("delivered", 200, 1)
    assert delivery.outcome.startswith("200 OK")
    assert delivery.target == engine.url_for("/indexnow")
    notify.deliver(app)
    assert len(engine.log) == 1  # delivered records are not sent again


def test_25000_changed_urls_become_three_requests_of_at_most_10000(app, session, site, engine):
    engine.expect_request("/indexnow", method="POST").respond_with_data("", status=202)
    locs = [f"{site.base_url}page/{n}" for n in range(25_000)]
    import_urls(session, site, io.StringIO("\n".join(locs)))
    session.commit()
    publish(app, site)
    notify.announce(site.id, app)
    notify.deliver(app)
    bodies = posted(engine)
    assert [len(body["urlList"]) for body in bodies] == [10_000, 10_000, 5_000]
    assert [url for body in bodies for url in body["urlList"]] == locs
    assert [(d.status, d.url_count) for d in ledger(session)] == [
        ("accepted", 10_000), ("accepted", 10_000), ("accepted", 5_000)]
    assert "key is still being checked" in ledger(session)[0].outcome


@pytest.mark.parametrize("status, words", [
    (400, "could not read the submission"),
    (403, f"{KEY}.txt"),
    (422, "do not belong to"),
])
def test_refusals_are_permanent_and_explained(app, session, site, engine, status, words):
    engine.expect_request("/indexnow").respond_with_data("nope", status=status)
    announce_one(app, session, site)
    notify.deliver(app)
    notify.deliver(app, now=utcnow() + timedelta(days=2))
    [delivery] = ledger(session)
    assert (delivery.status, delivery.http_status, delivery.attempts) == ("failed", status, 1)
    assert words in delivery.outcome and delivery.response_excerpt == "nope"
    assert delivery.next_attempt_at is None
    assert len(engine.log) == 1


def test_429_waits_as_long_as_retry_after_says_then_succeeds(app, session, site, engine):
    engine.expect_ordered_request("/indexnow").respond_with_data(
        "slow down", status=429, headers={"Retry-After": "3600"})
    engine.expect_ordered_request("/indexnow").respond_with_data("", status=200)
    announce_one(app, session, site)
    start = utcnow()
    notify.deliver(app, now=start)
    [delivery] = ledger(session)
    assert (delivery.status, delivery.http_status) == ("pending", 429)
    assert delivery.next_attempt_at >= start + timedelta(seconds=3600)
    notify.deliver(app, now=start + timedelta(seconds=3599))
    assert len(engine.log) == 1  # not due yet
    notify.deliver(app, now=start + timedelta(seconds=3601))
    [delivery] = ledger(session)
    assert (delivery.status, delivery.attempts, len(engine.log)) == ("delivered", 2, 2)
    assert posted(engine)[0] == posted(engine)[1]


def test_server_errors_back_off_then_give_up_after_the_attempt_limit(app, session, site, engine):
    engine.expect_request("/indexnow").respond_with_data("down", status=503)
    announce_one(app, session, site)
    now, waits = utcnow(), []
    for _ in range(app.config["NOTIFY_MAX_ATTEMPTS"]):
        notify.deliver(app, now=now)
        [delivery] = ledger(session)
        if delivery.next_attempt_at:
            waits.append(delivery.next_attempt_at - now)
            now = delivery.next_attempt_at
    assert (delivery.status, delivery.attempts) == ("failed", 4)
    assert "gave up after 4 attempts" in delivery.outcome
    base = app.config["NOTIFY_RETRY_SECONDS"]
    for n, wait in enumerate(waits, start=1):  # half to all of base * 2^(n-1)
        assert timedelta(seconds=base * 2 ** (n - 1) / 2) <= wait <= timedelta(
            seconds=base * 2 ** (n - 1))
    assert len(engine.log) == 4


def test_retry_after_is_read_as_seconds_or_a_date_and_nothing_else():
    now = datetime(2026, 11, 27, tzinfo=UTC)
    assert retry_after_seconds("120") == 120.0
    assert retry_after_seconds("Fri, 27 Nov 2026 00:01:00 GMT", now) == 60.0
    for odd in ("²", "１２", "-5", "soon", ""):  # superscript and full-width digits among them
        assert retry_after_seconds(odd, now) is None


def test_backoff_is_capped_and_retry_after_wins_when_longer():
    rng = random.Random(1)
    assert backoff(30, 60, None, rng) <= timedelta(hours=6)
    assert backoff(1, 60, 500, rng) == timedelta(seconds=500)
    assert backoff(1, 60, 10 ** 9, rng) == timedelta(days=1)
    assert backoff(1, 60, 1e15, rng) == backoff(1, 60, float("inf"), rng) == timedelta(days=1)


@pytest.mark.parametrize("seconds", ["9" * 15, "9" * 400])
def test_a_retry_after_too_large_for_a_date_waits_a_day(app, session, site, engine, seconds):
    """An engine (its address is a site setting, so anyone's server) that asks for more seconds
    than a date can hold, or more than a float can (infinity), is waited for a day like any
    Retry-After over a day: not an OverflowError that stops the delivery run."""
    engine.expect_request("/indexnow").respond_with_data(
        "slow down", status=429, headers={"Retry-After": seconds})
    announce_one(app, session, site)
    start = utcnow()
    notify.deliver(app, now=start)
    [delivery] = ledger(session)
    assert (delivery.status, delivery.http_status) == ("pending", 429)
    assert delivery.next_attempt_at == start + timedelta(days=1)


def test_an_engine_that_hangs_is_given_up_on_at_the_timeout(app, session, site, engine):
    release, finished = threading.Event(), threading.Event()

    def hang(request):
        release.wait(10)
        finished.set()
        return Response("", status=200)

    app.config["NOTIFY_TIMEOUT"] = 0.5
    engine.expect_request("/indexnow").respond_with_handler(hang)
    announce_one(app, session, site)
    notify.deliver(app)
    release.set()
    assert finished.wait(60)  # so the late answer is not logged during the next test
    [delivery] = ledger(session)
    assert delivery.status == "pending" and delivery.http_status is None
    assert delivery.outcome == "no answer within 0.5 s; will try again"


def test_redirects_are_not_followed(app, session, site, engine):
    engine.expect_request("/indexnow").respond_with_data(
        "", status=301, headers={"Location": "http://127.0.0.1:9/elsewhere"})
    announce_one(app, session, site)
    notify.deliver(app)
    [delivery] = ledger(session)
    assert delivery.status == "failed" and "redirects are not followed" in delivery.outcome
    assert len(engine.log) == 1


def test_turning_indexnow_off_stops_what_is_pending(app, session, site, engine):
    announce_one(app, session, site)
    update_site(session, site, {"indexnow_enabled": "off"})
    session.commit()
    notify.deliver(app)
    [delivery] = ledger(session)
    assert delivery.status == "failed" and "turned off" in delivery.outcome
    assert engine.log == []


def test_urls_outside_the_key_folder_are_left_out(app, session, engine):
    """keyLocation beside the sitemap covers only URLs under its folder. A URL deleted before
    the site moved into /shop/ is outside it: announcing it with this key would be refused."""
    base = engine.url_for("/")
    site = make_site(session, base_url=base, indexnow_enabled=True, indexnow_key=KEY,
                     indexnow_endpoint=engine.url_for("/indexnow"))
    save_url(session, site, base + "old/page")
    delete_url(session, site, base + "old/page")
    session.commit()
    update_site(session, site, {"base_url": base + "shop/", "sitemap_url": base + "shop/sitemap.xml",
                                "indexnow_key_location": "sitemap"})
    save_url(session, site, base + "shop/a")
    session.commit()
    publish(app, site)
    notify.announce(site.id, app)
    [delivery] = ledger(session)
    assert delivery.urls == base + "shop/a"
    engine.expect_request("/indexnow").respond_with_data("", status=200)
    notify.deliver(app)
    assert posted(engine)[0]["keyLocation"] == f"{base}shop/{KEY}.txt"


def test_an_answer_in_an_unknown_charset_is_still_a_success(app, session, site, engine):
    engine.expect_request("/indexnow").respond_with_data(
        "ok", status=200, headers={"Content-Type": "text/plain; charset=bogus-x"})
    announce_one(app, session, site)
    notify.deliver(app)
    [delivery] = ledger(session)
    assert (delivery.status, delivery.response_excerpt) == ("delivered", "ok")


def test_a_retry_of_a_record_that_changed_meanwhile_is_refused(app, session, site, engine):
    from webapp.errors import InvalidValue
    from webapp.notify.ledger import retry

    engine.expect_ordered_request("/indexnow").respond_with_data("", status=403)
    engine.expect_ordered_request("/indexnow").respond_with_data("", status=200)
    announce_one(app, session, site)
    notify.deliver(app)
    [stale] = ledger(session)  # read as failed
    with app.extensions["db_sessionmaker"]() as other:
        retry(other, other.get(Delivery, stale.id), app.config, utcnow())
        other.commit()
    notify.deliver(app)  # delivered by the first retry
    with pytest.raises(InvalidValue, match="changed while"):
        retry(session, stale, app.config, utcnow())
    session.rollback()
    assert [d.status for d in ledger(session)] == ["delivered"]


def test_two_senders_never_send_the_same_record(app, session, site):
    save_url(session, site, f"{site.base_url}a")
    session.commit()
    publish(app, site)
    [delivery_id] = notify.announce(site.id, app)
    now, lease = utcnow(), notify.delivery_lease(app.config)
    with app.extensions["db_sessionmaker"]() as one, app.extensions["db_sessionmaker"]() as two:
        assert claim(one, delivery_id, now, lease) is not None
        one.commit()
        assert claim(two, delivery_id, now, lease) is None
        two.commit()
        # A sender that went quiet past its lease is taken over, as a new attempt.
        taken = claim(two, delivery_id, now + lease + timedelta(seconds=1), lease)
        assert taken is not None and taken.attempts == 2
        two.commit()


def test_concurrent_delivery_runs_send_each_record_once(app, session, site, engine):
    engine.expect_request("/indexnow").respond_with_handler(
        lambda request: (time.sleep(0.05), Response("", status=200))[1])
    import_urls(session, site, io.StringIO("\n".join(
        f"{site.base_url}p/{n}" for n in range(35_000))))
    session.commit()
    publish(app, site)
    assert len(notify.announce(site.id, app)) == 4
    results: list[list[int]] = []
    threads = [threading.Thread(target=lambda: results.append(notify.deliver(app)))
               for _ in range(3)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert len(posted(engine)) == 4
    assert sorted(len(body["urlList"]) for body in posted(engine)) == [5_000] + [10_000] * 3
    assert all(d.status == "delivered" and d.attempts == 1 for d in ledger(session))


def test_a_cursor_moves_only_from_where_its_planner_read_it(app, session, site):
    """What a planner that lost a race meets: the cursor is no longer where it read it."""
    from webapp.notify.ledger import PlanConflict, set_position

    save_url(session, site, f"{site.base_url}a")
    session.commit()
    publish(app, site)
    notify.announce(site.id, app)  # moves the IndexNow cursor from 0
    with pytest.raises(PlanConflict):
        set_position(session, site.id, "indexnow", 99, expected=0)
    session.rollback()
    assert len(ledger(session)) == 1


def test_gsc_submits_the_sitemap_with_a_service_account_token(app, session, engine, tmp_path):
    credentials = service_account_file(tmp_path, engine.url_for("/token"))
    app.config["GSC_ENDPOINT"] = engine.url_for("/")  # the operator's override: tokens go there
    site = make_site(session, base_url=engine.url_for("/"), gsc_property="sc-domain:example.com",
                     gsc_credentials=str(credentials), gsc_endpoint=engine.url_for("/"))
    engine.expect_request("/token", method="POST").respond_with_json(
        {"access_token": "token-1", "expires_in": 3600, "token_type": "Bearer"})
    engine.expect_request(f"/webmasters/v3/sites/sc-domain:example.com/sitemaps/"
                          f"{site.sitemap_url}", method="PUT").respond_with_data("", status=204)
    announce_one(app, session, site)
    notify.deliver(app)
    [delivery] = ledger(session)
    assert (delivery.engine, delivery.status, delivery.http_status) == ("gsc", "delivered", 204)
    token_request, put = (request for request, _ in engine.log)
    assert "assertion=" in token_request.get_data(as_text=True)  # a signed JWT grant
    assert put.headers["Authorization"] == "Bearer token-1"
    quoted = site.sitemap_url.replace(":", "%3A").replace("/", "%2F")
    assert put.environ["REQUEST_URI"] == (
        f"/webmasters/v3/sites/sc-domain%3Aexample.com/sitemaps/{quoted}")
    # An unchanged generation submits nothing again.
    publish(app, site)
    assert notify.announce(site.id, app) == []


def test_gsc_403_says_which_account_to_add(app, session, engine, tmp_path):
    credentials = service_account_file(tmp_path, engine.url_for("/token"))
    app.config["GSC_ENDPOINT"] = engine.url_for("/")  # the operator's override: tokens go there
    site = make_site(session, base_url=engine.url_for("/"), gsc_property="sc-domain:example.com",
                     gsc_credentials=str(credentials), gsc_endpoint=engine.url_for("/"))
    engine.expect_request("/token").respond_with_json(
        {"access_token": "token-2", "expires_in": 3600, "token_type": "Bearer"})
    engine.expect_request(re.compile("/webmasters/.*"), method="PUT"
                          ).respond_with_data("no permission", status=403)
    announce_one(app, session, site)
    notify.deliver(app)
    [delivery] = ledger(session)
    assert delivery.status == "failed"
    assert "robot@test-project.iam.gserviceaccount.com" in delivery.outcome


def test_ping_templates_get_the_encoded_sitemap_url(app, session, engine):
    site = make_site(session, base_url=engine.url_for("/"))
    update_site(session, site, {"ping_urls": engine.url_for("/ping") + "?sitemap={sitemap}, "
                                + engine.url_for("/other/{sitemap}")})
    engine.expect_request("/ping").respond_with_data("ok")
    engine.expect_request(re.compile("/other/.*")).respond_with_data("ok")
    announce_one(app, session, site)
    notify.deliver(app)
    quoted = site.sitemap_url.replace(":", "%3A").replace("/", "%2F")
    assert [request.environ["REQUEST_URI"] for request, _ in engine.log] == [
        f"/ping?sitemap={quoted}", f"/other/{quoted}"]
    assert [d.status for d in ledger(session)] == ["delivered", "delivered"]


def service_account_file(folder, token_uri):
    from cryptography.hazmat.primitives import serialization
    from cryptography.hazmat.primitives.asymmetric import rsa

    key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    pem = key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                            serialization.NoEncryption()).decode()
    path = folder / "service-account.json"
    path.write_text(json.dumps({
        "type": "service_account", "project_id": "test-project", "private_key_id": "k1",
        "private_key": pem, "client_email": "robot@test-project.iam.gserviceaccount.com",
        "client_id": "1", "token_uri": token_uri}))
    return path


def test_a_url_edit_during_an_import_waits_instead_of_deadlocking(app, session, site):
    """Every writer takes the site's change number before touching URL rows, so an edit of a
    URL that an open import is about to write waits for the import, then goes through."""
    from webapp.urls import next_change_seq

    save_url(session, site, f"{site.base_url}x", {"lastmod": "2026-01-01"})
    session.commit()
    next_change_seq(session, site.id)  # an import has begun: the site's row is taken
    errors: list[BaseException] = []

    def edit():
        try:
            with app.extensions["db_sessionmaker"]() as other:
                save_url(other, other.get(type(site), site.id), f"{site.base_url}x",
                         {"lastmod": "2026-03-03"})
                other.commit()
        except BaseException as exc:  # noqa: BLE001 - reported below
            errors.append(exc)

    editor = threading.Thread(target=edit)
    asked = threading.Event()  # the editor has asked for the site's row

    def note_the_editors_ask(connection, cursor, statement, *args) -> None:
        if threading.current_thread() is editor and statement.startswith("UPDATE sites"):
            asked.set()

    database = app.extensions["db_engine"]
    event.listen(database, "before_cursor_execute", note_the_editors_ask)
    try:
        editor.start()
        assert asked.wait(60)
        if database.dialect.name == "postgresql":  # and waits for it (SQLite: for the file)
            with app.extensions["db_sessionmaker"]() as watcher:
                wait_for(waiting_on_locks(watcher, 1), what="the editor waiting for the row")
    finally:
        event.remove(database, "before_cursor_execute", note_the_editors_ask)
    import_urls(session, site, io.StringIO(f"loc,lastmod\n{site.base_url}x,2026-02-02\n"))
    session.commit()
    editor.join(60)  # a ceiling: it goes on once the import has committed
    assert not editor.is_alive() and errors == []
    session.expire_all()
    assert session.scalar(select(Url.lastmod).where(Url.loc == f"{site.base_url}x")) == "2026-03-03"


def test_search_console_without_credentials_is_recorded_once_as_not_sent(app, session, engine,
                                                                         tmp_path):
    """Set up without its key file, Search Console sent nothing and the ledger said nothing."""
    site = make_site(session, base_url=engine.url_for("/"), gsc_property="sc-domain:example.com")
    announce_one(app, session, site)
    notify.announce(site.id, app)  # the same generation again: not recorded twice
    notify.deliver(app, now=utcnow() + timedelta(days=2))
    [delivery] = ledger(session)
    assert (delivery.engine, delivery.status, delivery.attempts) == ("gsc", "failed", 0)
    assert delivery.outcome.startswith("not sent: ") and "gsc_credentials" in delivery.outcome
    assert delivery.next_attempt_at is None and engine.log == []

    # With the key file in place, the generation it missed is submitted after all.
    app.config["GSC_ENDPOINT"] = engine.url_for("/")
    site.gsc_credentials = str(service_account_file(tmp_path, engine.url_for("/token")))
    site.gsc_endpoint = engine.url_for("/")
    session.commit()
    engine.expect_request("/token").respond_with_json(
        {"access_token": "token-3", "expires_in": 3600, "token_type": "Bearer"})
    engine.expect_request(re.compile("/webmasters/.*"), method="PUT").respond_with_data("")
    notify.announce(site.id, app)
    notify.deliver(app)
    assert [(d.status, d.generation_id) for d in ledger(session)] == [
        ("failed", delivery.generation_id), ("delivered", delivery.generation_id)]


@pytest.mark.parametrize("settings, words", [
    ({"gsc_property": "sc-domain:example.com"}, "no service-account key file (gsc_credentials)"),
    ({"gsc_credentials": "/srv/key.json"}, "no property (gsc_property)"),
    ({"gsc_property": "sc-domain:example.com", "gsc_credentials": "/srv/key.json",
      "gsc_endpoint": "https://engine.example/"}, "is not a Search Console host"),
    ({"gsc_property": "sc-domain:example.com", "gsc_credentials": "/srv/key.json",
      "gsc_endpoint": "http://www.googleapis.com/"}, "is sent only over https://"),
])
def test_every_engine_that_cannot_send_says_why(app, session, settings, words):
    site = make_site(session, **settings, ping_urls="http://127.0.0.1:9/ping?s={sitemap}",
                     indexnow_enabled=True)
    assert list(notify.blocked(site, app.config)) == ["gsc"]
    assert words in str(notify.blocked(site, app.config)["gsc"])
    assert notify.blocked(make_site(session, name="Plain", base_url="https://plain.example.com/"),
                          app.config) == {}


def test_a_rollback_announces_to_indexnow_the_urls_whose_entries_it_changed(app, session, site,
                                                                            engine):
    engine.expect_request("/indexnow", method="POST").respond_with_data("", status=200)
    base = site.base_url
    for path in ("a", "b", "same"):
        save_url(session, site, f"{base}{path}", {"lastmod": "2026-01-01"})
    session.commit()
    first = publish(app, site)
    save_url(session, site, f"{base}a", {"lastmod": "2026-02-01"})
    delete_url(session, site, f"{base}b")
    save_url(session, site, f"{base}c")
    session.commit()
    publish(app, site)
    notify.notify_site(site.id, app)
    sent = len(posted(engine))

    back = jobs.rollback(site.id, first.id, app)
    assert back.status == "succeeded"
    notify.deliver(app)
    [rollback_post] = posted(engine)[sent:]
    # a's lastmod goes back, b comes back, c goes away; `same` is as it was.
    assert sorted(rollback_post["urlList"]) == [f"{base}a", f"{base}b", f"{base}c"]
    assert [(d.generation_id, d.status) for d in ledger(session)][-1] == (back.id, "delivered")
    assert notify.announce(site.id, app) == []  # the change log adds nothing of its own


def test_a_rollback_of_a_site_without_indexnow_plans_no_urls(app, session, engine):
    site = make_site(session, base_url=engine.url_for("/"))
    save_url(session, site, f"{site.base_url}a")
    session.commit()
    first = publish(app, site)
    save_url(session, site, f"{site.base_url}b")
    session.commit()
    publish(app, site)
    assert jobs.rollback(site.id, first.id, app).status == "succeeded"
    assert ledger(session) == []


def in_japanese(app, line) -> str:
    from webapp.said import render

    with app.test_request_context(headers={"Accept-Language": "ja"}):
        return render(line)


def test_a_delivery_this_servers_own_rule_refuses_waits_unspent_and_names_it(app, session,
                                                                             site, engine):
    """Planned by the server (OUTBOUND_ALLOW=127.0.0.1), sent by `flask notify` from a shell
    without OUTBOUND_ALLOW: the engine hears nothing, the record is not failed and keeps its
    attempts, the command fails naming the setting; the server sends it later."""
    engine.expect_request("/indexnow", method="POST").respond_with_data("", status=200)
    announce_one(app, session, site)
    with another_shell(app, OUTBOUND_ALLOW="") as shell:
        result = shell.test_cli_runner().invoke(args=["notify", site.slug])
    assert result.exit_code == 1, result.output
    assert "pending" in result.output and "not sent: 127.0.0.1 resolves to a loopback " \
        "address" in result.output and "(OUTBOUND_ALLOW)" in result.output
    [delivery] = ledger(session)
    assert (delivery.status, delivery.attempts, delivery.finished_at) == ("pending", 0, None)
    assert delivery.outcome.startswith("not sent: ") and "OUTBOUND_ALLOW" in delivery.outcome
    assert in_japanese(app, delivery.outcome_said).startswith("送信されません: 127.0.0.1 は")
    assert delivery.next_attempt_at > utcnow() and posted(engine) == []
    notify.deliver(app, now=delivery.next_attempt_at)
    [delivery] = ledger(session)
    assert (delivery.status, delivery.attempts) == ("delivered", 1)


def gsc_site(app, session, engine, tmp_path, uploaded: bool):
    """A site whose Search Console submissions go to the fake engine, with an uploaded key
    (sealed under the app's key: its SECRET_KEY) or a key file on the server."""
    from webapp.notify import gsc_account

    app.config["GSC_ENDPOINT"] = engine.url_for("/")  # the operator's override: tokens go there
    path = service_account_file(tmp_path, engine.url_for("/token"))
    site = make_site(session, base_url=engine.url_for("/"), gsc_property="sc-domain:example.com",
                     gsc_endpoint=engine.url_for("/"),
                     gsc_credentials=None if uploaded else str(path))
    if uploaded:
        gsc_account.store(session, site, gsc_account.read_key_file(path.read_bytes(), app.config),
                          app.config, utcnow())
        session.commit()
    engine.expect_request("/token", method="POST").respond_with_json(
        {"access_token": "token-4", "expires_in": 3600, "token_type": "Bearer"})
    engine.expect_request(re.compile("/webmasters/.*"), method="PUT").respond_with_data(
        "", status=204)
    return site, path


@pytest.mark.parametrize("shell, setting", [
    ({"CREDENTIALS_KEY": "another-key-of-this-server"}, "CREDENTIALS_KEY"),
    ({"OUTBOUND_ALLOW": ""}, "OUTBOUND_ALLOW"),
], ids=["key-not-opened", "token-address-refused"])
def test_search_console_kept_by_this_servers_settings_waits_unspent(app, session, engine,
                                                                   tmp_path, shell, setting):
    """A key that CREDENTIALS_KEY does not open, or a token address OUTBOUND_ALLOW refuses:
    nothing reaches Search Console, and the record waits, naming the setting, for the
    process whose settings are right."""
    site, _ = gsc_site(app, session, engine, tmp_path, uploaded=True)
    publish(app, site)
    notify.announce(site.id, app)
    with another_shell(app, **shell) as other:
        notify.deliver(other)
    [delivery] = ledger(session)
    assert (delivery.engine, delivery.status, delivery.attempts) == ("gsc", "pending", 0)
    assert delivery.outcome.startswith("not sent: ") and setting in delivery.outcome
    assert engine.log == []
    notify.deliver(app, now=delivery.next_attempt_at)
    [delivery] = ledger(session)
    assert (delivery.status, delivery.http_status) == ("delivered", 204)


def test_search_console_whose_key_file_this_server_cannot_read_waits(app, session, engine,
                                                                     tmp_path):
    site, path = gsc_site(app, session, engine, tmp_path, uploaded=False)
    publish(app, site)
    notify.announce(site.id, app)
    key = path.read_bytes()
    path.unlink()  # the file is not where this process looks (another host, another user)
    notify.deliver(app)
    [delivery] = ledger(session)
    assert (delivery.status, delivery.attempts) == ("pending", 0)
    assert delivery.outcome.startswith(f"not sent: gsc_credentials: {path} cannot be read")
    assert in_japanese(app, delivery.outcome_said).startswith("送信されません: ")
    path.write_bytes(key)
    notify.deliver(app, now=delivery.next_attempt_at)
    assert [d.status for d in ledger(session)] == ["delivered"]
