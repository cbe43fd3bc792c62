"""Faults: a generating process killed outright, and a search engine down for an hour.

Both end the same way when the system is right: what was published stays served, the next run
or attempt picks up where the fault left off, and nothing is lost or done twice.
"""

from __future__ import annotations

import io
import os
import random
import re
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from datetime import datetime, timedelta

import pytest
from sqlalchemy import select
from werkzeug import Response

from tests.builders import make_site, make_urls
from tests.test_notify import KEY, service_account_file
from webapp import create_app, jobs, leases, notify
from webapp.models import Delivery, Generation, utcnow
from webapp.sitemaps import get_store
from webapp.sites import update_site
from webapp.urls import import_urls, save_url

# What a second app on the test's database and folders keeps from the `app` fixture.
SHARED_SETTINGS = ("TESTING", "DATABASE_URL", "SECRET_KEY", "INSTANCE_PATH", "SITEMAPS_DIR",
                   "INDEXNOW_ENDPOINT", "GSC_ENDPOINT", "OUTBOUND_ALLOW")


@pytest.fixture
def app_with(app):
    """Makes the test's app again with other settings, as create_app takes them."""
    made = []

    def make(**settings):
        other = create_app({**{name: app.config[name] for name in SHARED_SETTINGS}, **settings})
        made.append(other)
        return other

    yield make
    for other in made:
        other.extensions["db_engine"].dispose()


# --- A generating process killed with SIGKILL -------------------------------------------------


def served(client, site, name) -> bytes | None:
    """The body of a file of the site's published set, as a crawler gets it; None on 404."""
    response = client.get(f"/sitemaps/{site.slug}/{name}")
    if response.status_code == 404:
        return None
    assert response.status_code == 200, response.get_data(as_text=True)
    return response.get_data()


def wait_for_staged_files(folder, process, count: int, timeout: float = 30):
    """The staging folder of the run in `process` once it holds `count` entries."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        assert process.poll() is None, process.communicate()[1].decode()
        for staging in folder.glob("*"):
            try:
                if len(os.listdir(staging)) >= count:
                    return staging
            except FileNotFoundError:
                pass
        time.sleep(0.005)
    raise AssertionError(f"no staging folder with {count} entries within {timeout} s")


def test_a_generation_killed_midway_leaves_the_last_set_served_and_the_next_run_completes(
        app, session, client, database_url):
    """SIGKILL runs no cleanup: the set being written, the run's record and the site's lease
    are left as they were. Crawlers must still get the last set, whole, and the next run must
    neither wait for the dead process nor trip over what it left."""
    per_file = 10  # 800 small files for 8,000 URLs: a run of seconds
    site = make_site(session, max_urls_per_file=per_file)
    import_urls(session, site, io.StringIO("\n".join(
        f"{site.base_url}first/{n}" for n in range(25))))
    session.commit()
    first = jobs.regenerate(site.id, app)
    assert first.status == "succeeded" and first.file_count == 4  # 3 urlsets and the index
    store = get_store(app)
    before = {name: served(client, site, name)  # every name served, gzip twins included
              for f in store.published(site.storage_key).files.values()
              for name in ([f.name, f"{f.name}.gz"] if f.gzip_size is not None else [f.name])}
    assert before["sitemap.xml"].count(b"<sitemap>") == 3
    locs = [f"{site.base_url}page/{n}" for n in range(8_000)]
    import_urls(session, site, io.StringIO("\n".join(locs)), parallel=False)
    session.commit()

    env = {**os.environ, "DATABASE_URL": database_url, "SECRET_KEY": "test",
           "INSTANCE_PATH": app.config["INSTANCE_PATH"], "SITEMAPS_DIR": app.config["SITEMAPS_DIR"],
           "INDEXNOW_ENDPOINT": app.config["INDEXNOW_ENDPOINT"],
           "GSC_ENDPOINT": app.config["GSC_ENDPOINT"]}
    process = subprocess.Popen([sys.executable, "-m", "flask", "--app", "webapp", "sitemaps",
                                "generate", site.slug, "--no-notify"], env=env,
                               stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    try:
        staging = wait_for_staged_files(store.site_folder(site.storage_key), process, 300)
        session.expire_all()
        killed = session.scalars(select(Generation).where(Generation.site_id == site.id)
                                 .order_by(Generation.id.desc())).first()
        assert killed.id > first.id and killed.status == "running"
        assert site.run_owner.rsplit(":", 2)[1] == str(process.pid)  # its lease
    finally:
        process.kill()
        process.communicate(timeout=30)  # reaped: the pid no longer names a process
    assert process.returncode == -signal.SIGKILL

    # Nothing of the killed run is served: the last set, byte for byte, and no file the
    # killed run wrote under a name of its own.
    assert store.current_generation(site.storage_key) == first.id
    assert store.generation_set(site.storage_key, killed.id) is None  # no file list of it
    assert {name: served(client, site, name) for name in before} == before
    for name in os.listdir(staging):
        assert served(client, site, name) in (None, before.get(name)), name
    session.expire_all()
    assert session.get(Generation, killed.id).status == "running"  # nobody could say otherwise

    # The lease of the dead process does not block the next run, which completes.
    again = jobs.regenerate(site.id, app)
    assert again.status == "succeeded", again.error
    urlsets = -(-(25 + len(locs)) // per_file)
    assert again.url_count == 25 + len(locs) and again.file_count == urlsets + 1  # and the index
    assert store.current_generation(site.storage_key) == again.id
    session.expire_all()
    interrupted = session.get(Generation, killed.id)
    assert interrupted.status == "failed" and interrupted.finished_at is not None
    assert "interrupted" in interrupted.error
    assert (site.run_owner, site.run_lease_until) == (None, None)
    assert site.generated_seq == site.change_seq

    index = served(client, site, "sitemap.xml").decode()
    names = re.findall(r"<loc>[^<]*/([^/<]+)</loc>", index)
    assert len(names) == urlsets
    published_locs = []
    for name in names:
        published_locs += re.findall(r"<loc>([^<]+)</loc>", served(client, site, name).decode())
    assert published_locs == [f"{site.base_url}first/{n}" for n in range(25)] + locs

    # The killed run's staging folder, a partial set, is removed by the next run: its own
    # `finally` never ran.
    assert not staging.exists(), sorted(p.name for p in staging.parent.iterdir())


# --- A search engine down for an hour ---------------------------------------------------------


class Outage:
    """The fake engine's behaviour over simulated time: until `ends`, every answer is a
    failure (and chosen requests hang past the sender's timeout); from then on, 200.

    The test sets `now` before each delivery run; the engine answers by it.
    """

    def __init__(self, ends: datetime, hang_on: dict[str, int] | None = None,
                 retry_after: dict[str, int] | None = None):
        self.ends, self.now = ends, None
        # Per kind of request: which one hangs, and the Retry-After every failure carries.
        self.hang_on, self.retry_after = hang_on or {}, retry_after or {}
        self.seen: dict[str, int] = {}
        self.release = threading.Event()
        self.in_flight = 0
        self.lock = threading.Lock()

    def handler(self, kind: str):
        def answer(request):
            with self.lock:
                self.seen[kind] = self.seen.get(kind, 0) + 1
                number, self.in_flight = self.seen[kind], self.in_flight + 1
            try:
                if self.now >= self.ends:
                    return Response("", status=200)
                if number == self.hang_on.get(kind):
                    self.release.wait(120)  # until settle(): the sender gives up before
                if kind in self.retry_after:
                    return Response("busy", status=503,
                                    headers={"Retry-After": str(self.retry_after[kind])})
                return Response("down", status=500)
            finally:
                with self.lock:
                    self.in_flight -= 1
        return answer

    def settle(self) -> None:
        """Let hung requests finish, so that the engine's log is complete."""
        self.release.set()
        deadline = time.monotonic() + 60  # a ceiling; the requests end at once when released
        while self.in_flight and time.monotonic() < deadline:
            time.sleep(0.01)
        assert self.in_flight == 0


@pytest.fixture
def outages():
    made = []

    def make(*args, **kwargs) -> Outage:
        made.append(Outage(*args, **kwargs))
        return made[-1]

    yield make
    for outage in made:
        outage.settle()  # nothing answers late into the next test's log


def records(session) -> dict:
    """Every record as the ledger holds it now: rows, which stay as they were read."""
    rows = session.execute(select(*Delivery.__table__.c).order_by(Delivery.id))
    return {row.id: row for row in rows}


def run_until_quiet(app, session, outage: Outage, until: datetime,
                    events: dict[datetime, Callable] | None = None,
                    rng: random.Random | None = None) -> dict[int, list]:
    """Run delivery at every moment a record is due (and a second before, when nothing may
    go) until no record is pending or `until`; each record's states after its attempts.

    `events` are things that happen at a simulated moment, such as new changes announced.
    """
    history: dict[int, list] = {}
    events = dict(events or {})
    while True:
        pending = [d.next_attempt_at for d in records(session).values() if d.status == "pending"]
        due = min(pending, default=None)
        if events and (due is None or min(events) <= due):
            moment = min(events)
            outage.now = moment
            events.pop(moment)(moment)
            continue
        if due is None or due > until:
            return history
        outage.now = due - timedelta(seconds=1)
        assert notify.deliver(app, now=outage.now, rng=rng) == [], "sent before it was due"
        outage.now = due
        before = records(session)
        attempted = notify.deliver(app, now=due, rng=rng)
        assert attempted, "a record was due and nothing was attempted"
        after = records(session)
        for delivery_id in attempted:
            old, new = before[delivery_id], after[delivery_id]
            assert old.next_attempt_at <= due and new.attempts == old.attempts + 1
            assert new.last_attempt_at == due
            history.setdefault(delivery_id, []).append(new)


def assert_backs_off(history, config, ends: datetime, retry_after: dict[str, int]):
    """Each failed attempt waits half to all of base * 2^(n-1) (or Retry-After when longer)
    before the next; the first attempt from the end of the outage delivers; none follows."""
    base = config["NOTIFY_RETRY_SECONDS"]
    for attempts in history.values():
        for n, attempt in enumerate(attempts, start=1):
            assert attempt.attempts == n <= attempt.attempt_limit
            if attempt.last_attempt_at >= ends:
                assert (attempt.status, attempt.http_status) == ("delivered", 200)
                assert n == len(attempts), "attempts after the record was delivered"
                continue
            assert attempt.status == "pending", attempt.outcome
            ceiling = timedelta(seconds=base * 2 ** (n - 1))
            asked = timedelta(seconds=retry_after.get(attempt.engine, 0))
            wait = attempt.next_attempt_at - attempt.last_attempt_at
            assert max(ceiling / 2, asked) <= wait <= max(ceiling, asked), (attempt, n, wait)
        assert attempts[-1].status == "delivered"


def successes(engine, path_prefix: str) -> list:
    return [request for request, response in engine.log
            if request.path.startswith(path_prefix) and response.status_code == 200]


def test_an_engine_down_for_an_hour_gets_every_change_once_after_backing_off(
        app_with, session, engine, outages, tmp_path):
    """An hour of 500s, with hangs past the timeout among them, fits in the attempt budget:
    the ledger waits longer after each failure, sends nothing before it is due, and once the
    engine is back every record goes through exactly once, changes made during the outage
    included."""
    # Each hang costs the time-out; every other answer must come within it, on a busy machine
    # too: a few seconds, against the milliseconds an answer of the fake engine takes.
    app = app_with(NOTIFY_TIMEOUT=5, NOTIFY_RETRY_SECONDS=60, NOTIFY_MAX_ATTEMPTS=10)
    start = utcnow()
    ends = start + timedelta(hours=1)
    retry_after = {"ping": 900}
    outage = outages(ends, hang_on={"indexnow": 2, "gsc": 2}, retry_after=retry_after)
    engine.expect_request("/token", method="POST").respond_with_json(
        {"access_token": "token-1", "expires_in": 3600, "token_type": "Bearer"})
    engine.expect_request("/indexnow", method="POST").respond_with_handler(
        outage.handler("indexnow"))
    engine.expect_request(re.compile("/webmasters/.*"), method="PUT").respond_with_handler(
        outage.handler("gsc"))
    engine.expect_request("/ping").respond_with_handler(outage.handler("ping"))

    app.config["GSC_ENDPOINT"] = engine.url_for("/")  # the operator's override: tokens go there
    site = make_site(session, base_url=engine.url_for("/"), indexnow_enabled=True,
                     indexnow_key=KEY, indexnow_endpoint=engine.url_for("/indexnow"),
                     gsc_property="sc-domain:example.com",
                     gsc_credentials=str(service_account_file(tmp_path, engine.url_for("/token"))),
                     gsc_endpoint=engine.url_for("/"))
    update_site(session, site, {"ping_urls": engine.url_for("/ping") + "?sitemap={sitemap}"})
    session.commit()
    changed = []

    def change(moment, paths):
        for path in paths:
            save_url(session, site, f"{site.base_url}{path}")
            changed.append(f"{site.base_url}{path}")
        session.commit()
        assert jobs.regenerate(site.id, app, now=moment).status == "succeeded"
        assert len(notify.announce(site.id, app, now=moment)) == 3  # IndexNow, Search Console, ping

    change(start, [f"a/{n}" for n in range(30)])
    history = run_until_quiet(
        app, session, outage, start + timedelta(hours=4), rng=random.Random(7),
        events={start + timedelta(minutes=20): lambda moment: change(
            moment, [f"b/{n}" for n in range(10)])})
    outage.settle()

    ledger = records(session)
    assert sorted(d.engine for d in ledger.values()) == ["gsc", "gsc", "indexnow", "indexnow",
                                                         "ping", "ping"]
    assert set(history) == set(ledger)
    assert_backs_off(history, app.config, ends, retry_after)
    assert all(d.status == "delivered" for d in ledger.values())
    hung = [a for attempts in history.values() for a in attempts if a.http_status is None]
    assert [a.outcome for a in hung] == ["no answer within 5 s; will try again"] * 2
    # Every request the engine got is an attempt the ledger counted: none unrecorded.
    requests = [request for request, _ in engine.log if request.path != "/token"]
    assert len(requests) == sum(d.attempts for d in ledger.values())
    # Every changed URL reached IndexNow exactly once; one submission per sitemap record.
    sent = [url for request in successes(engine, "/indexnow")
            for url in request.get_json()["urlList"]]
    assert sorted(sent) == sorted(changed) and len(changed) == 40
    assert len(successes(engine, "/webmasters/")) == 2
    assert len(successes(engine, "/ping")) == 2
    # Nothing is left to send, now or much later.
    assert notify.deliver(app, now=start + timedelta(days=2)) == []


def test_an_outage_longer_than_the_attempt_budget_fails_the_record_until_retried(
        app_with, session, engine, outages):
    """Four attempts span minutes, not the hour: the record gives up, says so, is sent no
    more, and `notifications retry` delivers it once the engine is back."""
    app = app_with(NOTIFY_TIMEOUT=30, NOTIFY_RETRY_SECONDS=60, NOTIFY_MAX_ATTEMPTS=4)
    start = utcnow()
    ends = start + timedelta(hours=1)
    outage = outages(ends)
    engine.expect_request("/indexnow", method="POST").respond_with_handler(
        outage.handler("indexnow"))
    site = make_site(session, base_url=engine.url_for("/"), indexnow_enabled=True,
                     indexnow_key=KEY, indexnow_endpoint=engine.url_for("/indexnow"))
    locs = [f"{site.base_url}p/{n}" for n in range(5)]
    for loc in locs:
        save_url(session, site, loc)
    session.commit()
    assert jobs.regenerate(site.id, app).status == "succeeded"
    [delivery_id] = notify.announce(site.id, app, now=start)

    history = run_until_quiet(app, session, outage, ends)
    attempts = history[delivery_id]
    assert len(attempts) == 4 and attempts[-1].last_attempt_at < start + timedelta(minutes=8)
    record = records(session)[delivery_id]
    assert (record.status, record.attempts, record.http_status) == ("failed", 4, 500)
    assert record.next_attempt_at is None and record.finished_at == attempts[-1].last_attempt_at
    assert record.outcome.startswith("500 ") and "gave up after 4 attempts" in record.outcome
    for later in (ends - timedelta(seconds=1), ends, start + timedelta(days=2)):
        outage.now = later
        assert notify.deliver(app, now=later) == []
    assert len(engine.log) == 4

    runner = app.test_cli_runner()
    listed = runner.invoke(args=["notifications", "list", site.slug, "--status", "failed"])
    assert f"#{delivery_id}\tindexnow\t5 URLs\tfailed\t4 attempts" in listed.stdout
    outage.now = ends  # the engine is back
    result = runner.invoke(args=["notifications", "retry", str(delivery_id)])
    assert result.exit_code == 0, result.output
    assert f"#{delivery_id}\tindexnow\t5 URLs\tdelivered\t5 attempts\t200 OK" in result.stdout
    record = records(session)[delivery_id]
    assert (record.status, record.attempts, record.attempt_limit) == ("delivered", 5, 8)
    assert [request.get_json()["urlList"] for request in successes(engine, "/indexnow")] == [locs]
    again = runner.invoke(args=["notifications", "retry", str(delivery_id)])
    assert again.exit_code != 0 and "was delivered" in again.output
    assert notify.deliver(app, now=start + timedelta(days=3)) == []
    assert len(engine.log) == 5


def test_a_record_that_gave_up_does_not_say_it_will_try_again(app_with, session, engine):
    """The outcome is what a person reads to decide whether to act. A record that is out of
    attempts will not be sent again unless someone retries it, so it must not say that it
    will try again."""
    app = app_with(NOTIFY_TIMEOUT=30, NOTIFY_MAX_ATTEMPTS=1)
    engine.expect_request("/indexnow").respond_with_data("down", status=500)
    site = make_site(session, base_url=engine.url_for("/"), indexnow_enabled=True,
                     indexnow_key=KEY, indexnow_endpoint=engine.url_for("/indexnow"))
    save_url(session, site, f"{site.base_url}a")
    session.commit()
    jobs.regenerate(site.id, app)
    notify.announce(site.id, app)
    notify.deliver(app)
    [record] = records(session).values()
    assert record.status == "failed"
    # A record that gave up must not say it will try again (`notifications list`, dashboard).
    assert "will try again" not in record.outcome, record.outcome


def test_a_run_whose_last_commit_fails_is_recorded_failed_and_publishes_nothing(
        app, session, monkeypatch):
    """The run's outcome, its published set and the lease's release are one commit: when that
    commit fails, nothing of the set goes live, the run says why, and the lease is free."""
    site = make_site(session)
    make_urls(session, site, 3)
    release, calls = leases.release, []

    def refusing(*args, **kwargs):
        calls.append(kwargs)
        if len(calls) == 1:
            raise RuntimeError("the database refused the commit")
        return release(*args, **kwargs)

    monkeypatch.setattr(leases, "release", refusing)
    generation = jobs.regenerate(site.id, app)
    assert generation.status == "failed" and "refused the commit" in generation.error
    session.expire_all()
    assert (site.run_owner, site.published_generation_id) == (None, None)
    assert get_store(app).current_generation(site.storage_key) is None
