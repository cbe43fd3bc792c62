"""Background work on real Celery workers: the embedded broker of `make run`, Redis for more
machines, a change queueing its own run, progress followed from another node, and workers that
die in the middle of a run.

Worker and scheduler processes are started for each test (tests/probes.py AppProcesses);
Redis tests need TEST_REDIS_URL (`.ci/run` sets it) and give each test a queue of its own."""

from __future__ import annotations

import io
import os
import signal
import socket
import subprocess
import threading
import uuid
from datetime import datetime, timedelta
from pathlib import Path

import pytest
import requests
from sqlalchemy import func, select, update

from tests.builders import free_port, make_site, make_urls
from tests.conftest import ROOT
from tests.deployments import environment, node
from tests.probes import AppProcesses, wait_for
from tests.test_dashboard import as_role  # noqa: F401 - a fixture
from tests.test_notify import KEY, posted
from webapp import create_app, jobs, leases, tasks
from webapp.db import new_session
from webapp.models import Generation, Site, Task, utcnow
from webapp.sitemaps import get_store
from webapp.accounts.tokens import create_token
from webapp.urls import import_urls, save_url
from webapp.accounts.users import create_user


def generations(session, site) -> list[Generation]:
    session.expire_all()
    return list(session.scalars(select(Generation).where(Generation.site_id == site.id)
                                .order_by(Generation.id)))


@pytest.fixture
def embedded(app, tmp_path):
    """A node as `make run` has it: the broker is a folder of its instance."""
    other = node(app, tmp_path / "node")
    yield other
    other.extensions["db_engine"].dispose()


@pytest.fixture
def on_redis(app, tmp_path, redis_url):
    """A node whose broker is Redis, with a queue of this test's own."""
    other = node(app, tmp_path / "node", CELERY_BROKER_URL=redis_url,
                 CELERY_QUEUE=f"test-{uuid.uuid4().hex}")
    yield other
    other.extensions["db_engine"].dispose()


@pytest.fixture(params=["redis", "rabbitmq"])
def on_a_broker(request, app, tmp_path):
    """A node on each production broker there is: Redis, RabbitMQ (TEST_RABBITMQ_URL)."""
    url = os.environ.get(f"TEST_{request.param.upper()}_URL")
    if not url:
        pytest.skip(f"TEST_{request.param.upper()}_URL is not set")
    other = node(app, tmp_path / "node", CELERY_BROKER_URL=url,
                 CELERY_QUEUE=f"test-{uuid.uuid4().hex}")
    yield other
    other.extensions["db_engine"].dispose()


def test_a_burst_of_changes_queues_one_run_that_a_worker_makes(embedded, session, tmp_path):
    site = make_site(session, change_delay=2, schedule="off")
    with embedded.extensions["db_sessionmaker"]() as writer:
        for n in range(20):  # twenty commits, as a content system saving pages one by one
            save_url(writer, writer.get(Site, site.id), f"{site.base_url}p/{n}")
            writer.commit()
    queued = list((Path(embedded.config["INSTANCE_PATH"]) / "broker" / "queue").iterdir())
    assert len(queued) == 1  # one message for the burst, on the embedded broker
    session.expire_all()
    assert site.run_queued_until is not None
    with AppProcesses(tmp_path, environment(embedded)) as processes:
        worker = processes.worker()
        try:  # a ceiling, not a duration: a worker's start takes many seconds under load
            [run] = wait_for(lambda: [g for g in generations(session, site)
                                      if g.status == "succeeded"], 180, "the queued run")
        finally:
            log = processes.stop(worker)
            print(log)  # shown when the test fails
    assert run.url_count == 20 and len(generations(session, site)) == 1, log
    session.expire_all()
    assert site.run_queued_until is None and site.generated_seq == site.change_seq


def test_work_asked_on_one_node_runs_on_a_worker_and_is_followed_from_another(
        app, on_a_broker, session, tmp_path):
    """Node A records and queues "regenerate now" on the broker; a worker runs it; node B,
    with an instance folder of its own, shows its progress and outcome over the API."""
    site = make_site(session)
    make_urls(session, site, 30)
    user = create_user(session, "editor@example.com", "a long enough password 1", "editor")
    _, secret = create_token(session, user, "cms", "write", None)
    session.commit()
    reader = node(app, tmp_path / "b", CELERY_BROKER_URL=on_a_broker.config["CELERY_BROKER_URL"],
                  CELERY_QUEUE=on_a_broker.config["CELERY_QUEUE"])
    headers = {"Authorization": f"Bearer {secret}"}
    try:
        asked = on_a_broker.test_client().post("/api/v1/sites/shop/generate", headers=headers)
        assert asked.status_code == 202 and asked.json["status"] == "queued", asked.json
        path = asked.headers["Location"]
        with AppProcesses(tmp_path, environment(on_a_broker)) as processes:
            worker = processes.worker()
            state = wait_for(lambda: (s := reader.test_client().get(path, headers=headers).json)
                             ["status"] in ("done", "failed") and s, 180, "the task to finish")
            log = processes.stop(worker)
    finally:
        reader.extensions["db_engine"].dispose()
    assert state["status"] == "done", (state, log)
    assert "30 URLs in 1 file;" in state["message"] and state["started_at"]
    assert get_store(app).current_generation(site.storage_key) is not None  # any node sees it


def test_a_broker_that_does_not_answer_fails_the_task_with_its_reason(app, session, tmp_path):
    site = make_site(session)
    down = node(app, tmp_path / "down", CELERY_BROKER_URL=f"redis://127.0.0.1:{free_port()}/0")
    try:
        with down.extensions["db_sessionmaker"]() as own:
            task_id = tasks.start(own, down, "regenerate", own.get(Site, site.id))
            own.commit()
            state = tasks.read(own, task_id)
    finally:
        down.extensions["db_engine"].dispose()
    assert state["status"] == "failed"
    assert state["message"].startswith("the task queue is unreachable")
    assert generations(session, site) == []  # nothing ran, nothing was half done


def test_a_killed_worker_s_run_is_finished_by_another_and_announced_once(
        on_redis, session, engine, tmp_path):
    """kill -9 of the worker generating a site (the whole worker, not only its child): the
    clock queues the site again, the other worker finishes it, the last good set is served
    until then, and every changed URL is announced exactly once."""
    engine.expect_request("/indexnow").respond_with_data("", status=200)
    site = make_site(session, base_url=engine.url_for("/"), change_delay=0, schedule="off",
                     indexnow_enabled=True, indexnow_key=KEY,
                     indexnow_endpoint=engine.url_for("/indexnow"))
    save_url(session, site, f"{site.base_url}first")
    session.commit()
    store = get_store(on_redis)
    with AppProcesses(tmp_path, environment(on_redis)) as processes:
        first = processes.worker(new_session=True)
        clock = processes.scheduler()
        # Ceilings, not durations: a worker's start takes many seconds under load.
        good = wait_for(lambda: store.current_generation(site.storage_key), 180, "a first set")
        wait_for(lambda: posted(engine), 180, "the first announcement")
        second = processes.worker(new_session=True)
        with on_redis.extensions["db_sessionmaker"]() as writer:
            import_urls(writer, writer.get(Site, site.id), io.StringIO("\n".join(
                f"{site.base_url}p/{n}" for n in range(200_000))))
            writer.commit()
        running = wait_for(lambda: [g for g in generations(session, site)
                                    if g.status == "running"], 180, "the big run to start")
        session.expire_all()
        owner_pid = int(session.get(Site, site.id).run_owner.split(":")[1])
        victim = next(p for p in (first, second)
                      if owner_pid == p.pid or str(p.pid) in _parents(owner_pid))
        os.killpg(victim.pid, signal.SIGKILL)
        assert store.current_generation(site.storage_key) == good  # still served meanwhile
        done = wait_for(lambda: [g for g in generations(session, site)
                                 if g.status == "succeeded" and g.url_count == 200_001],
                        180, "another worker to finish the run")
        wait_for(lambda: sum(len(b["urlList"]) for b in posted(engine)) >= 200_001, 120,
                 "the announcements")
        for process in (first, second, clock):
            processes.stop(process)
    assert done[0].id > running[0].id
    sent = [url for body in posted(engine) for url in body["urlList"]]
    assert len(sent) == len(set(sent)) == 200_001  # nothing announced twice, nothing lost
    assert store.current_generation(site.storage_key) == done[0].id


def _parents(pid: int) -> list[str]:
    """The parent pids of `pid`, nearest first."""
    found = []
    while pid > 1:
        try:
            pid = int(Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[1])
        except (OSError, ValueError, IndexError):
            break
        found.append(str(pid))
    return found


def test_make_run_serves_with_a_clock_and_a_worker_and_nothing_installed(tmp_path):
    """`make run` on a fresh instance: web, scheduler and worker, the work queued in the
    instance folder; a URL added through the API is generated by the worker and served; Ctrl-C
    stops all three."""
    port, instance = free_port(), tmp_path / "instance"
    env = {**{k: v for k, v in os.environ.items() if not k.startswith(("DATABASE_URL",
                                                                          "CELERY_"))},
           "PORT": str(port), "INSTANCE_PATH": str(instance), "SCHEDULER_TICK_SECONDS": "1"}
    # SIGINT as a terminal leaves it to a command: a runner started in the background
    # (nohup, &) hands its children SIGINT ignored, and a shell cannot trap what it ignores.
    make = subprocess.Popen(["make", "--no-print-directory", "run"], cwd=ROOT, env=env,
                            start_new_session=True, stdout=subprocess.PIPE,
                            stderr=subprocess.STDOUT,
                            preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
    try:
        base = f"http://127.0.0.1:{port}"
        wait_for(lambda: _answers(f"{base}/healthz"), 120, "the dashboard to answer")
        app = create_app({"INSTANCE_PATH": str(instance), "TESTING": True})
        try:
            with app.extensions["db_sessionmaker"]() as session:
                site = make_site(session, change_delay=0, schedule="off")
                user = create_user(session, "cms@example.com", "a long enough password 1",
                                   "editor")
                _, secret = create_token(session, user, "cms", "write", None)
                session.commit()
        finally:
            app.extensions["db_engine"].dispose()
        added = requests.post(f"{base}/api/v1/sites/shop/urls", timeout=30,
                              headers={"Authorization": f"Bearer {secret}"},
                              json={"urls": [{"loc": f"{site.base_url}hello"}]})
        assert added.status_code == 200, added.text
        sitemap = wait_for(lambda: (r := _answers(f"{base}/sitemaps/shop/sitemap.xml"))
                           and "/hello</loc>" in r.text and r, 180, "the worker's sitemap")
        assert sitemap.headers["Content-Type"].startswith("application/xml")
        group = subprocess.run(["ps", "-ww", "-o", "args=", "-g", str(make.pid)],
                               capture_output=True, text=True).stdout
        assert "scheduler run" in group and "webapp worker" in group and "webapp run" in group
    finally:
        os.killpg(make.pid, signal.SIGINT)
        try:
            output = make.communicate(timeout=60)[0].decode()
        except subprocess.TimeoutExpired as exc:  # say what is left, and what it said
            left = subprocess.run(["ps", "-ww", "-o", "pid=,stat=,args=", "-g", str(make.pid)],
                                  capture_output=True, text=True).stdout
            os.killpg(make.pid, signal.SIGKILL)
            make.communicate()
            raise AssertionError(f"Ctrl-C did not stop make run within 60 s; left:\n{left}\n"
                                 f"{(exc.output or b'').decode()}") from None
    left = subprocess.run(["ps", "-o", "pid=", "-g", str(make.pid)], capture_output=True,
                          text=True).stdout.split()
    assert left == [], output
    # How to sign in comes last, after the worker is ready and the dashboard answers, framed
    # so that it stands out of the migrations and the servers' lines above it.
    lines = output.splitlines()
    sign_in = next(n for n, line in enumerate(lines) if line.startswith("Sign in at "))
    assert lines[sign_in + 1] == "-" * 70 and "Created the admin account" in output
    assert max(n for n, line in enumerate(lines) if " ready." in line or "Running on" in line
               or "GET /healthz" in line) < sign_in
    assert "stopping" not in "\n".join(lines[:sign_in])  # nothing after it but the shutdown


def test_make_run_installs_no_test_tooling():
    """npm's axe-core is for the browser tests: make test installs it, make run does not."""
    def planned(target: str) -> str:
        return subprocess.run(["make", "-n", "-W", "tests/browser/package.json", target],
                              cwd=ROOT, capture_output=True, text=True, timeout=60).stdout
    assert "npm ci" not in planned("run") and "npm ci" in planned("test")


def _answers(url: str) -> requests.Response | None:
    """The answer when it is a 200; None while the server is not up or is busy starting."""
    try:
        answer = requests.get(url, timeout=30)
    except (requests.ConnectionError, requests.Timeout):
        return None
    return answer if answer.status_code == 200 else None


def test_a_lease_on_postgresql_is_short_and_renewed_while_its_run_goes_on(
        app, session, monkeypatch):
    """A worker that dies on another machine cannot be seen to be gone: its lease must lapse
    soon. So on PostgreSQL a lease is short, and renewed while its holder lives."""
    if not app.config["DATABASE_URL"].startswith("postgresql"):
        pytest.skip("SQLite is one machine's database: its leases are long")
    site = make_site(session)
    monkeypatch.setattr(leases, "RENEW", 0.05)
    owner = "another-machine:4242:abcd"
    leases.claim(session, site.id, utcnow(), owner)
    session.expire_all()
    first = session.get(Site, site.id).run_lease_until
    assert first <= utcnow() + leases.SHORT_LEASE
    with leases.Keeper(lambda: new_session(app), site.id, owner):
        wait_for(lambda: (session.expire_all(), session.get(Site, site.id).run_lease_until)[1]
                 > first, 60, "a renewal")
    renewed = session.get(Site, site.id).run_lease_until
    # Its holder gone (no more renewals), the lease lapses and another worker takes the site.
    later = renewed + timedelta(seconds=1)
    leases.claim(session, site.id, later, "this-machine:1:efgh")
    session.expire_all()
    assert session.get(Site, site.id).run_owner == "this-machine:1:efgh"


def test_a_run_slower_than_its_lease_keeps_its_site_while_it_lives(app, session, monkeypatch):
    """A run that outlasts its lease (a huge site, a slow disk) renews it: another process
    finds the site busy instead of generating it a second time beside the first. Edits of
    the site go on meanwhile."""
    lease = timedelta(seconds=3)
    for name, value in (("LEASE", lease), ("SHORT_LEASE", lease), ("RENEW", 0.1),
                        ("SQLITE_RENEW", 0.1)):
        monkeypatch.setattr(leases, name, value)
    site = make_site(session)
    make_urls(session, site, 3)
    inside, go = threading.Event(), threading.Event()

    def slow(done: int, total: int) -> None:  # the run stops here until the test says go
        inside.set()
        go.wait(60)

    finished = {}
    run = threading.Thread(target=lambda: finished.update(
        generation=jobs.regenerate(site.id, app, progress=slow)))
    run.start()

    def lease_until() -> datetime:
        session.expire_all()  # a new look each time
        return session.get(Site, site.id).run_lease_until

    try:
        assert inside.wait(60)
        first = lease_until()
        # Another process asks at a moment the first lease has ended. The run has renewed its
        # lease past that moment (waited for, however late a busy machine lets it happen),
        # so the site is busy then, by the same claim a run makes.
        asked_at = first + timedelta(seconds=1)
        wait_for(lambda: lease_until() > asked_at, 60, "a renewal past the first lease")
        with new_session(app) as other, pytest.raises(leases.SiteBusy):
            leases.claim(other, site.id, asked_at, leases.new_owner())
        # Meanwhile the site's URLs can be edited: a run writes only once its files are
        # ready (SQLite has one writer at a time, and its lock would hold every edit back).
        save_url(session, session.get(Site, site.id), f"{site.base_url}edited-meanwhile")
        session.commit()
    finally:
        go.set()
        run.join()
    assert finished["generation"].status == "succeeded"
    assert [g.status for g in generations(session, site)] == ["succeeded"]


def test_a_task_delivered_twice_does_its_work_once(app, session):
    """At least once meets exactly once: the same message run again (a redelivery after a
    worker died, or a broker's duplicate) makes no second generation and no second record."""
    site = make_site(session, change_delay=0)
    make_urls(session, site, 5)
    task_id = tasks.start(session, app, "regenerate", site)
    session.commit()  # runs here, eagerly
    celery = tasks.celery_of(app)
    assert tasks.read(session, task_id)["status"] == "done"
    celery.tasks["webapp.regenerate_now"].apply((task_id, site.id))  # delivered again
    celery.tasks["webapp.regenerate_due"].apply(([site.id],))
    celery.tasks["webapp.regenerate_due"].apply(([site.id],))
    assert [g.status for g in generations(session, site)] == ["succeeded"]
    assert tasks.read(session, task_id)["status"] == "done"


class SilentBroker:
    """A server that takes connections and never answers: a Redis that hangs."""

    def __init__(self):
        self.listener = socket.create_server(("127.0.0.1", 0))
        self.port = self.listener.getsockname()[1]
        self.held: list[socket.socket] = []
        self._thread = threading.Thread(target=self._accept, daemon=True)
        self._thread.start()

    def _accept(self) -> None:
        while True:
            try:
                connection, _ = self.listener.accept()
            except OSError:
                return
            self.held.append(connection)

    def close(self) -> None:
        self.listener.close()
        for connection in self.held:
            connection.close()


def test_a_broker_that_hangs_fails_the_request_in_seconds_not_never(app, session, tmp_path):
    """A Redis that takes the connection and says nothing: asking for work, and writing URLs
    (whose commit queues a run), answer within the broker's timeouts."""
    site = make_site(session, change_delay=0)
    user = create_user(session, "editor@example.com", "a long enough password 1", "editor")
    _, secret = create_token(session, user, "cms", "write", None)
    session.commit()
    silent = SilentBroker()
    hung = node(app, tmp_path / "hung", CELERY_BROKER_URL=f"redis://127.0.0.1:{silent.port}/0")
    headers = {"Authorization": f"Bearer {secret}"}
    answers: dict[str, object] = {}

    def ask() -> None:
        client = hung.test_client()
        answers["generate"] = client.post("/api/v1/sites/shop/generate", headers=headers)
        answers["write"] = client.post("/api/v1/sites/shop/urls", headers=headers, json={
            "urls": [{"loc": f"{site.base_url}while-the-broker-hangs"}]})

    try:
        asking = threading.Thread(target=ask, daemon=True)
        asking.start()
        wait_for(lambda: not asking.is_alive(), 60, "the requests to be answered")
    finally:
        silent.close()
        hung.extensions["db_engine"].dispose()
    assert answers["generate"].status_code == 503, answers["generate"].json
    assert "queue is unreachable" in answers["generate"].json["error"]["message"]
    assert answers["write"].status_code == 200  # stored; the clock queues its run later
    session.expire_all()
    assert site.run_queued_until is None  # not marked as queued: the clock will find it


def test_a_task_coming_back_hours_after_its_worker_died_is_not_run_again(app, session):
    """Redis gives a dead worker's message out again after its visibility timeout: by then
    the task's page has long said it failed, and an import run again would undo later edits."""
    site = make_site(session)
    make_urls(session, site, 3)
    stale = tasks.start(session, app, "regenerate", site)  # eager: runs at commit...
    session.commit()
    session.execute(update(Task).where(Task.id == stale).values(
        status="running", worker="another-machine:1:dead",
        heartbeat_at=utcnow() - timedelta(hours=3)))
    session.commit()
    before = len(generations(session, site))
    tasks.celery_of(app).tasks["webapp.regenerate_now"].apply((stale, site.id))
    assert len(generations(session, site)) == before  # ...but not again, hours later
    assert tasks.read(session, stale)["status"] == "failed"


def test_a_task_no_worker_takes_says_so(app, session):
    site = make_site(session)
    task = Task(id=uuid.uuid4().hex, kind="regenerate", site_id=site.id, site_label="shop",
                status="queued", done=0, message="", created_at=utcnow() - timedelta(minutes=3))
    session.add(task)
    session.commit()
    state = tasks.read(session, task.id)
    assert state["status"] == "queued" and "is a worker running" in state["message"]


def test_an_upload_too_large_for_a_task_record_is_refused_with_the_way_round(
        app, session, as_role, monkeypatch):
    from webapp.views.dashboard import urls as dashboard_urls

    make_site(session)
    monkeypatch.setattr(dashboard_urls, "MAX_PAYLOAD", 1 << 10)
    client = as_role("editor")
    answer = client.post("/sites/shop/import", data={
        "csrf_token": client.csrf, "file": (io.BytesIO(os.urandom(64 << 10)), "urls.csv")},
        content_type="multipart/form-data")
    assert answer.status_code == 422
    assert "urls import SITE FILE" in answer.text
    assert session.scalar(select(func.count()).select_from(Task)) == 0  # nothing recorded


def test_a_message_on_rabbitmq_that_is_not_a_task_is_one_warning_line(app, tmp_path):
    """RabbitMQ: a body that is not JSON (with and without a content type), and a task of a
    name no worker knows, each dropped with one WARNING line, no traceback; the worker goes on
    (Celery logged each with its body and a traceback, at CRITICAL or ERROR)."""
    import amqp
    from kombu import Connection

    url = os.environ.get("TEST_RABBITMQ_URL")
    if not url:
        pytest.skip("TEST_RABBITMQ_URL is not set")
    queue = f"test-{uuid.uuid4().hex}"
    rabbit = node(app, tmp_path / "node", CELERY_BROKER_URL=url, CELERY_QUEUE=queue)
    json_type = {"content_type": "application/json", "content_encoding": "utf-8"}
    bodies = [amqp.Message(b"not json at all"), amqp.Message(b"not json at all", **json_type),
              amqp.Message(b"\xff\xfe", application_headers={"task": "webapp.deliver",
                                                             "id": "x"}, **json_type)]
    try:
        with AppProcesses(tmp_path, environment(rabbit)) as processes:
            worker = processes.worker()
            wait_for(lambda: " ready." in worker.log.read_text(), 300, "the worker to be ready")
            with Connection(url) as connection:  # its channel is py-amqp's
                for body in bodies:
                    connection.default_channel.basic_publish(body, routing_key=queue)
            celery = tasks.celery_of(rabbit)
            celery.send_task("webapp.nonexistent", queue=queue)
            celery.send_task("webapp.deliver", [], {"only": "everything"}, queue=queue)
            wait_for(lambda: " succeeded in " in worker.log.read_text()
                     or worker.poll() is not None, 300, "the worker to take the last message")
            alive = worker.poll() is None
            said = processes.stop(worker)
    finally:
        rabbit.extensions["db_engine"].dispose()
    lines = [line for line in said.splitlines() if "a malformed message was dropped" in line]
    assert len(lines) == len(bodies), said
    assert all(" WARNING " in line and f"queue {queue}:" in line for line in lines), said
    assert len([line for line in said.splitlines()
                if "unknown name webapp.nonexistent" in line]) == 1, said
    assert "Traceback" not in said and " ERROR " not in said and "CRITICAL" not in said, said
    assert alive


@pytest.mark.parametrize("database_url", ["sqlite"], indirect=True)
def test_a_pooled_connection_left_reading_does_not_fail_a_task_s_first_write(app):
    """SQLite: a connection given back to the pool with a query not read to its end keeps its
    read (Python 3.11's sqlite3 no longer resets statements on rollback): once another process
    has written, a write on it fails at once, "database is locked", whatever busy_timeout
    says. unmark (the first write of regenerate_due) then writes on a fresh connection."""
    with new_session(app) as setup:
        sites = [make_site(setup, name=f"Shop {n}", base_url=f"https://s{n}.example.com/")
                 for n in range(2)]
        setup.execute(update(Site).values(run_queued_until=utcnow()))
        setup.commit()
        ids = [site.id for site in sites]
    with new_session(app) as reader:
        left = reader.execute(select(Site.id).execution_options(yield_per=1))
        left.fetchmany(1)  # the rest never read, the result still alive
    other = create_app({**{name: app.config[name] for name in (
        "DATABASE_URL", "SECRET_KEY", "INSTANCE_PATH")}, "TESTING": True,
        "CELERY_BROKER_URL": "memory://"})
    with new_session(other) as writer:  # another process's write, after that read began
        writer.execute(update(Site).where(Site.id == ids[1]).values(name="Written"))
        writer.commit()
    other.extensions["db_engine"].dispose()

    tasks.queue.unmark(app, ids)
    with new_session(app) as check:
        assert check.scalars(select(Site.run_queued_until).where(Site.id.in_(ids))).all() \
            == [None, None]
    assert left is not None
