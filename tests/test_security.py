"""What the server sends out, and who may steer it, held against a hostile user: each finding of
the outside probe reproduced against a running app over real HTTP, with a recording listener
(the fake engine) and a slow-drip server on 127.0.0.1 (tests/probes.py)."""

from __future__ import annotations

import gzip
import io
import ipaddress
import logging
import re
import shutil
import sys
import threading
import tracemalloc
from collections.abc import Callable

import pytest
import requests
from sqlalchemy import func, select

from tests.builders import make_site, make_urls, served
from tests.probes import DripServer, wait_for, waiting_on_locks
from webapp import create_app, jobs, notify, tasks
from webapp.db import session_scope
from webapp.models import Delivery, Site, Url, User
from webapp.outbound import OutboundError, Policy, fetch, refusal, send
from webapp.sites import find_site
from webapp.accounts.tokens import create_token
from webapp.urls import ImportFormatError, import_urls, next_change_seq, open_import, save_url
from webapp.accounts.users import create_user

PASSWORD = "a long enough passphrase"


@pytest.fixture
def closed_app(database_url, tmp_path):
    """An app as installed: no OUTBOUND_ALLOW, so nothing on this machine's networks is
    reached (the fake engines listen on 127.0.0.1 and must not hear a thing)."""
    app = create_app({"TESTING": True, "DATABASE_URL": database_url, "SECRET_KEY": "test",
                      "INSTANCE_PATH": str(tmp_path / "instance"),
                      "SITEMAPS_DIR": str(tmp_path / "sitemaps"),
                      "INDEXNOW_ENDPOINT": "http://127.0.0.1:9/indexnow",
                      "GSC_ENDPOINT": "http://127.0.0.1:9/", "NOTIFY_TIMEOUT": 2,
                      # the work runs where it is asked (the workers' own tests: test_workers)
                      "CELERY_BROKER_URL": "memory://", "CELERY_TASK_ALWAYS_EAGER": True})
    yield app
    app.extensions["db_engine"].dispose()


class Http:
    """Someone using the running app over HTTP: a bearer token for the API, or a browser
    session (with its CSRF token) for the dashboard."""

    def __init__(self, base: str):
        self.base, self.web = base, requests.Session()

    def api(self, method: str, path: str, secret: str, **kwargs) -> requests.Response:
        return self.web.request(method, f"{self.base}/api/v1{path}", timeout=30,
                                headers={"Authorization": f"Bearer {secret}"}, **kwargs)

    def csrf(self, path: str = "/sign-in") -> str:
        page = self.web.get(self.base + path, timeout=30).text
        return re.search(r'name="csrf_token" value="([^"]+)"', page).group(1)

    def sign_in(self, email: str, password: str = PASSWORD) -> requests.Response:
        return self.web.post(f"{self.base}/sign-in", timeout=30, allow_redirects=False, data={
            "email": email, "password": password, "csrf_token": self.csrf()})

    def post(self, path: str, **data) -> requests.Response:
        return self.web.post(self.base + path, timeout=30, allow_redirects=False,
                             data={"csrf_token": self.csrf("/"), **data})

    def task(self, answer: requests.Response, secret: str) -> dict:
        """The finished state of an API task."""
        assert answer.status_code == 202, answer.text
        path = answer.headers["Location"].removeprefix(self.base).removeprefix("/api/v1")
        return wait_for(lambda: (state := self.api("GET", path, secret).json())["status"]
                        not in ("queued", "running") and state, what="the task to finish")


def account(session, role: str, scope: str = "write", sites=None) -> str:
    """A user of `role` (made once) and a new API token of theirs: its secret."""
    email = f"{role}@example.com"
    user = session.scalar(select(User).where(User.email == email)) or \
        create_user(session, email, PASSWORD, role)
    _, secret = create_token(session, user, "probe", scope, sites)
    session.commit()
    return secret


# 1. Settings that carry secrets are the operator's


@pytest.mark.parametrize("role, limited", [("editor", False), ("admin", True)],
                         ids=["editor token", "admin token for one site"])
def test_a_token_that_is_not_an_admins_for_all_sites_cannot_steer_the_search_console_token(
        app, session, engine, role, limited):
    site = make_site(session)
    secret = account(session, role, sites=[site] if limited else None)
    with served(app) as base:
        http = Http(base)
        for change in ({"gsc_endpoint": engine.url_for("/")},
                       {"gsc_endpoint": "https://www.googleapis.com/", "name": "Renamed"}):
            answer = http.api("PATCH", "/sites/shop", secret, json=change)
            assert answer.status_code == 403, answer.text
            assert answer.json()["error"]["errors"][0]["field"] == "gsc_endpoint"
        unchanged = http.api("PATCH", "/sites/shop", secret, json={"gsc_endpoint": None})
        assert unchanged.status_code == 200  # sending back what is stored is no change
        admin = account(session, "admin")
        assert http.api("PATCH", "/sites/shop", admin, json={
            "gsc_endpoint": "https://www.googleapis.com/"}).status_code == 200
    session.expire_all()
    assert find_site(session, "shop").gsc_endpoint == "https://www.googleapis.com/"
    assert find_site(session, "shop").name == "Shop"


def test_an_editor_cannot_point_the_credential_setting_at_a_server_file(app, session, tmp_path):
    """Whether a file exists is not revealed either: the refusal comes before any is read."""
    make_site(session)
    create_user(session, "editor@example.com", PASSWORD, "editor")
    session.commit()
    real, missing = tmp_path / "real.json", tmp_path / "missing.json"
    real.write_text("{}")
    with served(app) as base:
        http = Http(base)
        assert http.sign_in("editor@example.com").status_code == 302
        form = http.web.get(f"{base}/sites/shop/settings", timeout=30).text
        assert re.search(r'name="gsc_credentials"[^>]* disabled', form)
        answers = [http.post("/sites/shop/settings", gsc_credentials=str(path))
                   for path in (real, missing)]
    assert [answer.status_code for answer in answers] == [403, 403]
    # The value is named (shortened when long), then the rule: the same rule for both paths.
    texts = [re.sub(r"&#39;.*?&#39;", "'PATH'", re.search(
        r'id="e-gsc_credentials">([^<]*)<', answer.text).group(1)) for answer in answers]
    assert texts[0] == texts[1] and "only an admin" in texts[0]
    assert find_site(session, "shop").gsc_credentials is None


def test_the_access_token_goes_only_to_a_search_console_host(app, session, engine, tmp_path):
    """A gsc_endpoint stored before it was an operator's setting cannot take the token: it is
    sent only to Google's API hosts or GSC_ENDPOINT's, and no token is even fetched."""
    from tests.test_notify import service_account_file

    engine.expect_request("/token").respond_with_json(
        {"access_token": "secret-token", "expires_in": 3600, "token_type": "Bearer"})
    elsewhere = engine.url_for("/").replace("127.0.0.1", "localhost")
    site = make_site(session, gsc_property="sc-domain:example.com",
                     gsc_credentials=str(service_account_file(tmp_path, engine.url_for("/token"))),
                     gsc_endpoint=elsewhere)
    make_urls(session, site, 1)
    jobs.regenerate(site.id, app)
    notify.notify_site(site.id, app)
    [delivery] = session.scalars(select(Delivery)).all()
    # GSC_ENDPOINT, this server's setting, keeps it: it waits, unsent, naming the setting.
    assert (delivery.status, delivery.attempts) == ("pending", 0)
    assert delivery.outcome.startswith("not sent: ")
    assert "not a Search Console host" in delivery.outcome and "GSC_ENDPOINT" in delivery.outcome
    assert engine.log == []


# 2. Requests to the server's own network


@pytest.mark.parametrize("address", [
    "127.0.0.1", "127.8.9.10", "::1", "10.1.2.3", "172.16.0.1", "192.168.1.1",
    "169.254.169.254", "fe80::1", "fc00::1", "224.0.0.1", "ff02::1", "0.0.0.0", "::",
    "100.64.0.1", "240.0.0.1", "::ffff:127.0.0.1", "::ffff:169.254.169.254", "198.18.0.1"])
def test_addresses_of_the_servers_own_networks_are_refused(address):
    assert refusal(ipaddress.ip_address(address), ()) is not None


@pytest.mark.parametrize("address", ["93.184.216.34", "2606:2800:220:1::1", "8.8.8.8"])
def test_public_addresses_are_reached(address):
    assert refusal(ipaddress.ip_address(address), ()) is None


FORBIDDEN_IPV4 = ["127.0.0.1", "127.8.9.10", "10.1.2.3", "172.16.0.1", "192.168.1.1",
                  "169.254.169.254", "100.64.0.1", "0.0.0.0", "224.0.0.1", "240.0.0.1"]


def six_to_four(ipv4: str) -> ipaddress.IPv6Address:
    return ipaddress.IPv6Address((0x2002 << 112) | (int(ipaddress.IPv4Address(ipv4)) << 80) | 1)


def teredo(server: str, client: str) -> ipaddress.IPv6Address:
    """A Teredo address: the server's address as it is, the client's with its bits inverted."""
    return ipaddress.IPv6Address((0x20010000 << 96) | (int(ipaddress.IPv4Address(server)) << 64)
                                 | (0x8000 << 48) | (0xFFFF << 32)
                                 | (~int(ipaddress.IPv4Address(client)) & 0xFFFFFFFF))


def nat64(ipv4: str) -> ipaddress.IPv6Address:
    return ipaddress.IPv6Address(int(ipaddress.IPv6Address("64:ff9b::"))
                                 | int(ipaddress.IPv4Address(ipv4)))


@pytest.mark.parametrize("ipv4", FORBIDDEN_IPV4)
def test_an_ipv6_address_carrying_a_forbidden_ipv4_one_is_refused_in_every_spelling(ipv4):
    # Teredo's own prefix is not public: an operator who allows it still gets the IPv4 check.
    teredo_allowed = (ipaddress.IPv6Network("2001::/32"),)
    assert teredo(ipv4, "8.8.8.8").teredo[0] == ipaddress.IPv4Address(ipv4)
    assert teredo("8.8.8.8", ipv4).teredo[1] == ipaddress.IPv4Address(ipv4)
    for address, allow in [(six_to_four(ipv4), ()), (nat64(ipv4), ()),
                           (ipaddress.IPv6Address(f"::ffff:{ipv4}"), ()),
                           (teredo(ipv4, "8.8.8.8"), teredo_allowed),
                           (teredo("8.8.8.8", ipv4), teredo_allowed)]:
        assert refusal(address, allow) is not None, address


def test_an_ipv6_address_carrying_a_public_ipv4_one_is_judged_as_before():
    assert refusal(six_to_four("8.8.8.8"), ()) is None  # a public 6to4 address
    assert refusal(nat64("8.8.8.8"), ()) is None  # what a NAT64 network's DNS64 answers
    assert refusal(teredo("8.8.8.8", "9.9.9.9"), ()) is not None  # Teredo is not public
    assert refusal(teredo("8.8.8.8", "9.9.9.9"), (ipaddress.IPv6Network("2001::/32"),)) is None


def test_an_allowed_ipv4_network_is_allowed_in_the_spellings_that_reach_it():
    allow = Policy.of({"NOTIFY_TIMEOUT": 1, "OUTBOUND_ALLOW": "127.0.0.1"}).allow
    assert refusal(nat64("127.0.0.1"), allow) is None
    assert refusal(ipaddress.ip_address("::ffff:127.0.0.1"), allow) is None
    assert refusal(nat64("127.0.0.2"), allow) is not None
    assert refusal(six_to_four("127.0.0.2"), allow) is not None


def test_the_operator_allows_networks_by_name():
    allow = Policy.of({"NOTIFY_TIMEOUT": 1, "OUTBOUND_ALLOW": "127.0.0.1, 10.0.0.0/8"}).allow
    assert refusal(ipaddress.ip_address("127.0.0.1"), allow) is None
    assert refusal(ipaddress.ip_address("10.200.0.1"), allow) is None
    assert refusal(ipaddress.ip_address("127.0.0.2"), allow) is not None
    assert refusal(ipaddress.ip_address("192.168.0.1"), allow) is not None


def test_announcements_to_the_servers_own_network_are_refused_before_connecting(
        closed_app, engine):
    """A write token points IndexNow and a ping at loopback names: nothing is sent, and the
    outcome says why without a word of what answers there."""
    engine.expect_request("/indexnow").respond_with_data("secret internal page")
    engine.expect_request("/ping").respond_with_data("secret internal page")
    with closed_app.extensions["db_sessionmaker"]() as session:
        site = make_site(session, base_url="https://shop.example.com/")
        make_urls(session, site, 2)
        secret = account(session, "editor")
    with served(closed_app) as base:
        http = Http(base)
        changed = http.api("PATCH", "/sites/shop", secret, json={
            "indexnow_enabled": True, "indexnow_endpoint": engine.url_for("/indexnow"),
            "ping_urls": [engine.url_for("/ping").replace("127.0.0.1", "localhost")
                          + "?u={sitemap}"]})
        assert changed.status_code == 200, changed.text
        added = http.api("POST", "/sites/shop/urls", secret,
                         json={"urls": [{"loc": "https://shop.example.com/new"}]})
        assert added.status_code == 200, added.text
        assert http.task(http.api("POST", "/sites/shop/generate", secret), secret)["status"] \
            == "done"
        assert http.task(http.api("POST", "/sites/shop/notify", secret), secret)["status"] \
            == "done"
        ledger = http.api("GET", "/sites/shop/announcements", secret).json()["items"]
    assert {item["engine"] for item in ledger} == {"indexnow", "ping"}
    for item in ledger:
        # Refused here, so no failure of the engine's: it waits, naming the rule.
        assert item["status"] == "pending" and item["attempts"] == 0, item
        assert "a loopback address" in item["outcome"] and "OUTBOUND_ALLOW" in item["outcome"]
        assert "secret" not in str(item)
    [ping] = [item for item in ledger if item["engine"] == "ping"]
    assert ping["outcome"].startswith("not sent: localhost resolves to a loopback address")
    assert "127.0.0.1" not in ping["outcome"]  # how the resolver sees a name is not shown
    assert engine.log == []


def test_an_import_from_an_address_on_the_servers_network_is_refused(closed_app, engine):
    engine.expect_request("/sitemap.xml").respond_with_data("<urlset/>")
    runner = closed_app.test_cli_runner()
    base = engine.url_for("/")
    assert runner.invoke(args=["sites", "create", "Local", base]).exit_code == 0
    result = runner.invoke(args=["urls", "import", "local", f"{base}sitemap.xml"])
    assert result.exit_code == 1 and "a loopback address" in result.output
    assert engine.log == []


def test_what_an_allowed_address_answers_is_not_echoed_by_an_import(app, session, engine):
    """Even where the operator allows an inside network, an import from an address reads
    only sitemaps: an answer that is not one is refused without a word of it shown."""
    engine.expect_request("/secret").respond_with_data(
        "internal-db-password=hunter2\nAPI_KEY=sk_live_123456\n")
    make_site(session, name="Inside", base_url=engine.url_for("/"))
    create_user(session, "editor@example.com", PASSWORD, "editor")
    session.commit()
    with served(app) as base:
        http = Http(base)
        assert http.sign_in("editor@example.com").status_code == 302
        answer = http.post("/sites/inside/import", sitemap_url=engine.url_for("/secret"))
        assert answer.status_code == 302  # the work runs in the background
        task = base + answer.headers["Location"] + ".json"
        page = wait_for(lambda: (state := http.web.get(task, timeout=30).json())["status"]
                        != "running" and state["message"], what="the import to finish")
    cli = app.test_cli_runner().invoke(args=["urls", "import", "inside", engine.url_for("/secret")])
    for said in (page, cli.output):
        assert "is not a sitemap" in said and "hunter2" not in said and "sk_live" not in said
    assert cli.exit_code == 1


def test_a_name_is_resolved_once_and_the_checked_address_is_the_one_connected_to(engine):
    """No second lookup between the check and the connection, so DNS rebinding changes
    nothing: every connection is made to the address the guard read (audit events)."""
    engine.expect_request("/x").respond_with_data("ok")
    seen = []
    sys.addaudithook(lambda event, args: seen.append((event, args))
                     if event in ("socket.getaddrinfo", "socket.connect") else None)
    url = engine.url_for("/x").replace("127.0.0.1", "localhost")
    seen.clear()
    send("GET", url, Policy(5, Policy.of({"NOTIFY_TIMEOUT": 5,
                                          "OUTBOUND_ALLOW": "127.0.0.1,::1"}).allow))
    lookups = [args for event, args in seen if event == "socket.getaddrinfo"
               and args[0] == "localhost"]
    connects = [args[1] for event, args in seen if event == "socket.connect"]
    assert len(lookups) == 1 and len(connects) == 1
    assert connects[0][0] in ("127.0.0.1", "::1")


def test_announcement_answers_are_shown_to_admins_only(app, session, engine):
    engine.expect_request("/indexnow").respond_with_data("the engine's own words", status=400)
    site = make_site(session, base_url=engine.url_for("/"), indexnow_enabled=True,
                     indexnow_endpoint=engine.url_for("/indexnow"))
    save_url(session, site, f"{site.base_url}a")
    session.commit()
    jobs.regenerate(site.id, app)
    notify.notify_site(site.id, app)
    for role in ("viewer", "editor", "admin"):
        create_user(session, f"{role}@example.com", PASSWORD, role)
    session.commit()
    with served(app) as base:
        pages = {}
        for role in ("viewer", "editor", "admin"):
            http = Http(base)
            assert http.sign_in(f"{role}@example.com").status_code == 302
            pages[role] = http.web.get(f"{base}/sites/shop/announcements", timeout=30).text
    assert "400 Bad Request" in pages["viewer"]
    assert "the engine&#39;s own words" not in pages["viewer"] + pages["editor"]
    assert "the engine&#39;s own words" in pages["admin"]


# 3. Deadlines that hold against a peer that drips


@pytest.mark.parametrize("drip_headers", [False, True], ids=["body", "headers"])
def test_a_server_dripping_its_answer_is_cut_off_at_the_deadline(drip_headers):
    policy = Policy(1, Policy.of({"NOTIFY_TIMEOUT": 1, "OUTBOUND_ALLOW": "127.0.0.1"}).allow)
    with DripServer(drip_headers=drip_headers) as drip:
        with pytest.raises(OutboundError, match=r"no answer within 1 s"):
            send("GET", drip.url, policy)
        wait_for(drip.cut_short.is_set, what="the connection to be shut by the client")
        assert not drip.finished.is_set()


def test_an_import_download_that_drips_is_cut_off_at_its_deadline():
    policy = Policy(0.2, Policy.of({"NOTIFY_TIMEOUT": 1, "OUTBOUND_ALLOW": "127.0.0.1"}).allow)
    with DripServer() as drip:  # 600 bytes at 20 a second: 30 s, against a 2 s deadline
        with pytest.raises(OutboundError, match=r"no answer within 2 s"):
            fetch(drip.url, policy, max_bytes=1 << 20)
        wait_for(drip.cut_short.is_set, what="the download to be abandoned")


def test_a_slow_engine_holds_back_only_its_own_records(app, session, engine):
    """Site A's engine drips (its deadline is a minute away); site B's answers at once: B is
    delivered while A's request is still open, and neither record is sent twice."""
    engine.expect_request("/indexnow").respond_with_data("", status=200)
    app.config["NOTIFY_TIMEOUT"] = 60
    with DripServer(size=6000) as drip:
        ids = []
        for name, endpoint in (("A", drip.url), ("B", engine.url_for("/indexnow"))):
            site = make_site(session, name=name, base_url=f"https://{name.lower()}.example/",
                             indexnow_enabled=True, indexnow_endpoint=endpoint)
            save_url(session, site, f"{site.base_url}a")
            session.commit()
            jobs.regenerate(site.id, app)
            ids += notify.announce(site.id, app)
        sender = threading.Thread(target=notify.deliver, args=(app,))
        sender.start()
        wait_for(lambda: engine.log, what="site B's announcement while A's engine drips")
        # A's request may reach the drip server before or after B's: either way it is open
        # and its answer far from whole (6000 bytes, one every 50 ms) while B's is done.
        wait_for(lambda: drip.open == 1, what="A's request to be in flight")
        assert sender.is_alive() and not drip.finished.is_set()  # A's is still in flight
    sender.join(120)  # the drip server has hung up: A's attempt ends, to be retried
    assert not sender.is_alive()
    records = {d.id: d for d in session.scalars(select(Delivery))}
    assert records[ids[1]].status == "delivered" and records[ids[1]].attempts == 1
    assert records[ids[0]].status == "pending" and records[ids[0]].attempts == 1
    assert len(drip.requests) == 1 and len(engine.log) == 1


def test_a_record_falling_due_while_a_slow_engine_drips_goes_out_at_once(app, session,
                                                                          engine):
    """The probe's case: site B changes while one deliver() is held by site A's dripping
    engine; B's announcement does not wait for A's lane to end."""
    engine.expect_request("/indexnow").respond_with_data("", status=200)
    app.config["NOTIFY_TIMEOUT"] = 60
    with DripServer(size=6000) as drip:
        sites = {}
        for name, endpoint in (("A", drip.url), ("B", engine.url_for("/indexnow"))):
            sites[name] = make_site(session, name=name, indexnow_enabled=True,
                                    base_url=f"https://{name.lower()}.example/",
                                    indexnow_endpoint=endpoint)
            save_url(session, sites[name], f"{sites[name].base_url}a")
            session.commit()
            jobs.regenerate(sites[name].id, app)
        notify.announce(sites["A"].id, app)
        sender = threading.Thread(target=notify.deliver, args=(app,))
        sender.start()
        wait_for(lambda: drip.open, what="A's engine to be dripping")
        notify.announce(sites["B"].id, app)  # falls due while the deliver() runs
        wait_for(lambda: engine.log, what="B's announcement, while A's engine drips")
        assert drip.open == 1 and not drip.finished.is_set()
    sender.join(60)
    assert len(engine.log) == 1 and len(drip.requests) == 1


# 4. Two writers adding the same new URLs at once


def arriving_together(app, site_id: int, write: Callable[[], object]) -> None:
    """Two runs of `write` in threads of their own, both arriving while another transaction
    holds the site, which lets go once both wait for it; returns when both are done."""
    holder = app.extensions["db_sessionmaker"]()
    next_change_seq(holder, site_id)
    writers = [threading.Thread(target=write) for _ in range(2)]
    for writer in writers:
        writer.start()
    with app.extensions["db_sessionmaker"]() as watcher:
        wait_for(waiting_on_locks(watcher, 2), what="both writers waiting for the site")
    holder.commit()
    holder.close()
    for writer in writers:
        writer.join(60)


def test_two_api_writers_adding_the_same_new_urls_both_succeed(app, database_url, session):
    if not database_url.startswith("postgresql"):
        pytest.skip("SQLite lets one writer in at a time: the two cannot interleave")
    site = make_site(session)
    secret = account(session, "editor")
    items = {"urls": [{"loc": f"{site.base_url}p/{n}"} for n in range(3000)]}
    answers = []
    with served(app) as base:
        http = Http(base)
        arriving_together(app, site.id, lambda: answers.append(
            http.api("POST", "/sites/shop/urls", secret, json=items)))
    assert [answer.status_code for answer in answers] == [200, 200], [a.text for a in answers]
    counts = sorted((a.json()["created"], a.json()["unchanged"]) for a in answers)
    assert counts == [(0, 3000), (3000, 0)]


def test_two_imports_of_the_same_new_urls_both_succeed_and_count_no_repeats(
        app, database_url, session):
    if not database_url.startswith("postgresql"):
        pytest.skip("SQLite lets one writer in at a time: the two cannot interleave")
    site = make_site(session)
    text_file = "\n".join(f"{site.base_url}p/{n}" for n in range(3000))
    reports, failures = [], []

    def run_import() -> None:
        try:
            with session_scope(app) as own:
                reports.append(import_urls(own, own.get(Site, site.id), io.StringIO(text_file)))
        except Exception as exc:  # recorded: the test says which one failed and why
            failures.append(exc)

    arriving_together(app, site.id, run_import)
    assert failures == []
    assert sorted((r.added, r.unchanged, r.duplicates) for r in reports) == [(0, 3000, 0),
                                                                           (3000, 0, 0)]


# 6. Uploads: a size limit, and sitemaps parsed as they are read


def test_an_upload_over_the_limit_is_refused_with_the_limit_named(database_url, tmp_path, session):
    app = create_app({"TESTING": True, "DATABASE_URL": database_url, "SECRET_KEY": "test",
                      "INSTANCE_PATH": str(tmp_path / "instance"),
                      "SITEMAPS_DIR": str(tmp_path / "sitemaps"), "MAX_UPLOAD_MB": 1})
    try:
        with app.extensions["db_sessionmaker"]() as own:
            site = make_site(own)
            create_user(own, "editor@example.com", PASSWORD, "editor")
            own.commit()
            big = "\n".join(f"{site.base_url}p/{n:07d}" for n in range(60_000))  # about 2 MB
        with served(app) as base:
            http = Http(base)
            assert http.sign_in("editor@example.com").status_code == 302
            answer = http.web.post(f"{base}/sites/shop/import", timeout=30, files={
                "file": ("urls.txt", big.encode())}, data={"csrf_token": http.csrf("/")})
        assert answer.status_code == 413
        assert "larger than 1 MB" in answer.text and "MAX_UPLOAD_MB" in answer.text
        uploads = tmp_path / "instance" / "uploads"
        assert not uploads.exists() or not list(uploads.iterdir())
        with app.extensions["db_sessionmaker"]() as own:
            assert own.scalar(select(func.count()).select_from(Url)) == 0
    finally:
        app.extensions["db_engine"].dispose()


def _sitemap_file(path, target_bytes: int, urls: int = 10) -> None:
    """A well-formed urlset of `urls` URLs padded with comments to `target_bytes`."""
    head = ('<?xml version="1.0" encoding="UTF-8"?>\n'
            '<urlset xmlns="http://www.sitemaps.org/schemas/sitemap/0.9">\n').encode()
    body = b"".join(f"<url><loc>https://shop.example.com/p/{n}</loc></url>\n".encode()
                    for n in range(urls))
    tail = b"</urlset>\n"
    with open(path, "wb") as handle:
        handle.write(head + body)
        padding = target_bytes - len(head) - len(body) - len(tail)
        comment = b"<!--" + b"x" * 1016 + b"-->\n"  # 1 KiB
        chunk = comment * 1024
        while padding > 0:
            piece = chunk[:padding] if padding >= len(chunk) else b" " * padding
            handle.write(piece)
            padding -= len(piece)
        handle.write(tail)


def test_a_large_sitemap_file_is_parsed_as_it_is_read(tmp_path):
    path = tmp_path / "sitemap.xml"
    _sitemap_file(path, 40 << 20)
    policy = Policy.of({"NOTIFY_TIMEOUT": 1, "OUTBOUND_ALLOW": ""})
    tracemalloc.start()
    try:
        with open_import(path, "sitemap.xml", "https://shop.example.com/", None, policy) as rows:
            entries = list(rows)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert len(entries) == 10
    assert peak < 8 << 20, f"{peak} bytes held at once for a 40 MB file"


@pytest.mark.parametrize("compressed", [False, True], ids=["plain", "gzip"])
def test_a_sitemap_over_the_protocols_size_is_refused(tmp_path, compressed):
    path = tmp_path / "sitemap.xml"
    _sitemap_file(path, 52_428_800 + 1)
    if compressed:
        packed = tmp_path / "sitemap.xml.gz"
        with open(path, "rb") as plain, gzip.open(packed, "wb") as out:
            shutil.copyfileobj(plain, out)
        path = packed
    policy = Policy.of({"NOTIFY_TIMEOUT": 1, "OUTBOUND_ALLOW": ""})
    with pytest.raises(ImportFormatError, match="larger than 52428800 bytes"):
        with open_import(path, path.name, "https://shop.example.com/", None, policy) as rows:
            list(rows)


def test_an_index_of_large_files_is_imported_without_holding_them(engine):
    """The probe's case: an index listing the same large file four times took the server from
    93 MB to 1.34 GB. Files are fetched and parsed one at a time, rows go to a temporary file,
    so memory does not grow with the number of files."""
    base = engine.url_for("/")
    pad = "x" * 1900  # long locs: many bytes, few URLs (the protocol allows 2,048 characters)
    urls = "".join(f"<url><loc>{base}{pad}/{n:05d}</loc></url>\n" for n in range(2_500))
    engine.expect_request("/big.xml").respond_with_data(
        '<urlset xmlns="http://www.sitemaps.org/schemas/sitemap/0.9">\n' + urls + "</urlset>\n")
    policy = Policy.of({"NOTIFY_TIMEOUT": 10, "OUTBOUND_ALLOW": "127.0.0.1"})

    def peak_for(files: int) -> int:
        index = ('<sitemapindex xmlns="http://www.sitemaps.org/schemas/sitemap/0.9">' + "".join(
            f"<sitemap><loc>{base}big.xml?{n}</loc></sitemap>" for n in range(files))
            + "</sitemapindex>").encode()
        tracemalloc.start()
        try:
            with open_import(index, "index.xml", base, f"{base}index.xml", policy) as rows:
                assert sum(1 for _ in rows) == 2_500 * files
            return tracemalloc.get_traced_memory()[1]
        finally:
            tracemalloc.stop()

    two, ten = peak_for(2), peak_for(10)
    # Reading every file into memory, as before, held 242 MB for ten: five times two's peak.
    assert ten < 1.5 * two, f"{ten} bytes held at once for ten files, {two} for two"


def test_an_index_listing_a_file_on_another_host_is_refused_before_any_file_is_fetched(engine):
    """The probe of the fixes: the index's first, allowed file (8.7 MB) was fetched, then the
    whole import refused for the second. Every listed file's host is checked first."""
    base = engine.url_for("/")
    engine.expect_request("/first.xml").respond_with_data(
        f'<urlset xmlns="http://www.sitemaps.org/schemas/sitemap/0.9"><url><loc>{base}a</loc>'
        "</url></urlset>")
    index = ('<sitemapindex xmlns="http://www.sitemaps.org/schemas/sitemap/0.9">'
             f"<sitemap><loc>{base}first.xml</loc></sitemap>"
             "<sitemap><loc>http://elsewhere.example/second.xml</loc></sitemap>"
             "</sitemapindex>").encode()
    policy = Policy.of({"NOTIFY_TIMEOUT": 10, "OUTBOUND_ALLOW": "127.0.0.1"})
    with pytest.raises(ImportFormatError, match=r"lists 'http://elsewhere.example/second.xml' "
                                                r"on line 1, which is not on"):
        with open_import(index, "index.xml", base, f"{base}index.xml", policy) as rows:
            list(rows)
    assert engine.log == []


# 7. /sitemaps/<slug>/ belongs to that site


def test_a_site_cannot_shadow_another_sites_files_on_the_apps_own_paths(app, session):
    shop = make_site(session)
    make_urls(session, shop, 2)
    jobs.regenerate(shop.id, app)
    with served(app) as base:
        host = base.removeprefix("http://")
        intruder = make_site(session, name="Intruder", base_url=f"http://{host}/sitemaps/shop/")
        save_url(session, intruder, f"http://{host}/sitemaps/shop/evil")
        session.commit()
        jobs.regenerate(intruder.id, app)
        served_file = requests.get(f"{base}/sitemaps/shop/sitemap.xml", timeout=30)
    assert served_file.status_code == 200
    assert "shop.example.com/page/0" in served_file.text and "evil" not in served_file.text


# 10. Headers for crawlers and browsers, quiet logs, clearing ping URLs


def test_crawler_answers_say_nosniff_and_the_html_view_runs_nothing(app, session):
    site = make_site(session)
    make_urls(session, site, 1)
    jobs.regenerate(site.id, app)
    with served(app) as base:
        answers = {path: requests.get(base + path, timeout=30) for path in (
            "/sitemaps/shop/sitemap.xml", "/sitemaps/shop/sitemap.xsl",
            "/sitemaps/shop/view/sitemap.xml", "/sitemaps/shop/nothing.xml")}
        robots = requests.get(f"{base}/robots.txt", headers={"Host": "shop.example.com"},
                              timeout=30)
    for path, answer in {**answers, "/robots.txt": robots}.items():
        assert answer.headers["X-Content-Type-Options"] == "nosniff", path
    policy = answers["/sitemaps/shop/view/sitemap.xml"].headers["Content-Security-Policy"]
    assert "default-src 'none'" in policy and "script" not in policy


def test_an_import_refused_for_its_input_is_logged_in_one_line(app, session, caplog):
    site = make_site(session)
    # A bad upload is the user's, not the server's: one line at INFO, no traceback.
    with caplog.at_level(logging.INFO, logger="webapp.tasks.work"):
        task_id = tasks.start(session, app, "import", site,
                              payload=gzip.compress(b"<?xml version='1.0'?><urlset xmlns='http://www.sitemaps.org/schemas/sitemap/0.9'><url>"))
        session.commit()  # queued on commit; here the work runs at once
        state = tasks.read(session, task_id)
    assert state["status"] == "failed" and "not well-formed" in state["message"], state
    [record] = [r for r in caplog.records if r.name == "webapp.tasks.work"]
    assert record.levelno == logging.INFO, record.levelname
    assert record.exc_info is None and "\n" not in record.getMessage()


def test_ping_urls_null_clears_the_list(app, session):
    make_site(session)
    secret = account(session, "editor")
    with served(app) as base:
        http = Http(base)
        assert http.api("PATCH", "/sites/shop", secret, json={
            "ping_urls": ["https://ping.example/?s={sitemap}"]}).status_code == 200
        answer = http.api("PATCH", "/sites/shop", secret, json={"ping_urls": None})
    assert answer.status_code == 200, answer.text
    assert answer.json()["ping_urls"] == []
