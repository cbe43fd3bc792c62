"""Running as in production: the health endpoint, `make run-prod` (gunicorn workers and the
scheduler on PostgreSQL), and the database going away for a while and coming back."""

from __future__ import annotations

import os
import re
import signal
import socket
import subprocess
import sys
import threading
import time
import uuid

import pytest
import requests
from sqlalchemy.engine import make_url

from tests import probes
from tests.builders import free_port, make_site, make_urls
from tests.conftest import ROOT
from webapp import create_app, jobs
from webapp.models import utcnow
from webapp.accounts.tokens import create_token
from webapp.accounts.users import create_user


def test_health_is_ok_when_the_database_answers_and_storage_is_writable(client):
    answer = client.get("/healthz")
    assert answer.status_code == 200
    assert answer.json["status"] == "ok" and answer.json["database"] == "ok"
    assert answer.json["storage"] == "ok"


def test_health_fails_when_the_database_does_not_answer(tmp_path):
    app = create_app({"DATABASE_URL": "postgresql://nobody@127.0.0.1:9/none", "SECRET_KEY": "x",
                      "INSTANCE_PATH": str(tmp_path)})
    answer = app.test_client().get("/healthz")
    assert answer.status_code == 503
    assert answer.json == {**answer.json, "status": "failing", "database": "unreachable"}


def test_health_fails_when_sitemaps_cannot_be_written(app, tmp_path):
    blocker = tmp_path / "a-file"
    blocker.write_text("not a folder")
    app.config["SITEMAPS_DIR"] = str(blocker / "sitemaps")
    answer = app.test_client().get("/healthz")
    assert answer.status_code == 503 and answer.json["storage"] == "not writable"


def wait_for(url: str, status: int = 200, seconds: float = 180) -> requests.Response:
    """The first answer with `status`; `seconds` is a ceiling for a stuck test (processes
    start in many seconds on a busy machine), not a duration the test relies on."""
    deadline = time.monotonic() + seconds
    while True:
        try:
            answer = requests.get(url, timeout=30)
            if answer.status_code == status:
                return answer
        except (requests.ConnectionError, requests.Timeout):  # not up yet, or busy starting
            answer = None
        if time.monotonic() > deadline:
            raise AssertionError(f"{url} did not answer {status} (last: {answer})")
        time.sleep(0.2)


@pytest.fixture
def postgresql_url(database_url):
    if not database_url.startswith("postgresql"):
        pytest.skip("production runs on PostgreSQL")
    return database_url


def test_run_prod_serves_with_workers_and_a_scheduler_and_stops_on_sigterm(
        postgresql_url, redis_url, session, tmp_path):
    site = make_site(session, schedule="every 1h", next_run_at=utcnow())  # due now
    make_urls(session, site, 20)
    port = free_port()
    env = {**os.environ, "DATABASE_URL": postgresql_url, "PORT": str(port), "WORKERS": "2",
           "INSTANCE_PATH": str(tmp_path / "instance"), "SECRET_KEY": "prod-test",
           "SCHEDULER_TICK_SECONDS": "1", "CELERY_BROKER_URL": redis_url,
           "CELERY_QUEUE": f"test-{uuid.uuid4().hex}"}
    make = subprocess.Popen(["make", "--no-print-directory", "run-prod"], cwd=ROOT, env=env,
                            start_new_session=True, stdout=subprocess.PIPE,
                            stderr=subprocess.STDOUT)
    try:
        health = wait_for(f"http://127.0.0.1:{port}/healthz").json()
        assert health["database"] == "ok" and health["storage"] == "ok"
        # The scheduler queues the due site, the Celery worker generates it, and a web worker
        # serves what it published.
        sitemap = wait_for(f"http://127.0.0.1:{port}/sitemaps/shop/sitemap.xml")
        assert sitemap.text.count("<url>") == 20
        assert requests.get(f"http://127.0.0.1:{port}/sign-in", timeout=30).status_code == 200
        group = subprocess.run(["ps", "-ww", "-o", "args=", "-g", str(make.pid)],
                               capture_output=True, text=True).stdout
        servers = [args for args in map(str.split, group.splitlines())
                   if len(args) > 1 and args[1].endswith("bin/gunicorn")]
        assert len(servers) == 3  # the master and two workers
        assert all("python:webapp.gunicorn_conf" in args for args in servers)
        assert "scheduler run" in group and "webapp worker" in group
    finally:
        os.killpg(make.pid, signal.SIGTERM)
        output = make.communicate(timeout=60)[0].decode()
    assert "Created the admin account" in output or "The admin account is" in output
    left = subprocess.run(["ps", "-o", "pid=", "-g", str(make.pid)], capture_output=True,
                          text=True).stdout.split()
    assert left == [], output


def test_run_prod_refuses_a_broker_that_is_not_redis_or_rabbitmq(postgresql_url, tmp_path):
    done = subprocess.run(["make", "--no-print-directory", "run-prod"], cwd=ROOT,
                          env={**os.environ, "DATABASE_URL": postgresql_url,
                               "CELERY_BROKER_URL": "", "INSTANCE_PATH": str(tmp_path)},
                          capture_output=True, text=True, timeout=120)
    assert done.returncode != 0 and "needs CELERY_BROKER_URL=redis://" in done.stderr


def test_run_prod_refuses_a_database_that_is_not_postgresql(tmp_path):
    done = subprocess.run(["make", "--no-print-directory", "run-prod"], cwd=ROOT,
                          env={**os.environ, "DATABASE_URL": f"sqlite:///{tmp_path}/x.db",
                               "INSTANCE_PATH": str(tmp_path)},
                          capture_output=True, text=True, timeout=120)
    assert done.returncode != 0 and "needs DATABASE_URL=postgresql://" in done.stderr


class Outage:
    """A TCP relay to the database that can be cut (every connection dropped, new ones
    refused) and restored: the database going away without touching the real server."""

    def __init__(self, host: str, port: int):
        self.target = (host, port)
        self.listener = socket.create_server(("127.0.0.1", 0))
        self.port = self.listener.getsockname()[1]
        self.up = True
        self.connections: list[socket.socket] = []
        threading.Thread(target=self._accept, daemon=True).start()

    def _accept(self) -> None:
        while True:
            try:
                client, _ = self.listener.accept()
            except OSError:
                return
            if not self.up:
                client.close()
                continue
            server = socket.create_connection(self.target)
            self.connections += [client, server]
            for a, b in ((client, server), (server, client)):
                threading.Thread(target=self._pipe, args=(a, b), daemon=True).start()

    @staticmethod
    def _pipe(source: socket.socket, sink: socket.socket) -> None:
        try:
            while data := source.recv(65536):
                sink.sendall(data)
        except OSError:
            pass
        finally:
            for end in (source, sink):
                try:
                    end.shutdown(socket.SHUT_RDWR)
                except OSError:
                    pass

    def cut(self) -> None:
        self.up = False
        for connection in self.connections:
            try:
                connection.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass
            connection.close()
        self.connections.clear()

    def restore(self) -> None:
        self.up = True

    def close(self) -> None:
        self.cut()
        self.listener.close()


def test_a_database_outage_gives_clear_errors_and_recovers_without_a_restart(
        postgresql_url, app, session, tmp_path):
    """The web app, a running scheduler and a worker lose the database and get it back: clear
    answers meanwhile (503 with a reason, one log line per scheduler tick), crawlers still
    served, and afterwards all work again, none restarted."""
    site = make_site(session, schedule="off", change_delay=0)
    make_urls(session, site, 5)
    user = create_user(session, "cms@example.com", "correct horse", "editor")
    _, secret = create_token(session, user, "cms", "write", None)
    session.commit()
    jobs.regenerate(site.id, app)
    url = make_url(postgresql_url)
    outage = Outage(url.host or "127.0.0.1", url.port or 5432)
    relayed = url.set(host="127.0.0.1", port=outage.port).render_as_string(hide_password=False)
    served = create_app({**app.config, "DATABASE_URL": relayed})
    client = served.test_client()
    api = {"Authorization": f"Bearer {secret}"}
    log, worker_log = tmp_path / "scheduler.log", tmp_path / "worker.log"
    env = {**os.environ, "DATABASE_URL": relayed, "SECRET_KEY": "x",
           "INSTANCE_PATH": app.config["INSTANCE_PATH"], "CELERY_BROKER_URL": "",
           "SITEMAPS_DIR": app.config["SITEMAPS_DIR"], "SCHEDULER_TICK_SECONDS": "1"}
    with open(log, "w") as output, open(worker_log, "w") as worker_output:
        scheduler = subprocess.Popen(
            [sys.executable, "-m", "flask", "--app", "webapp", "scheduler", "run"],
            env=env, stdout=output, stderr=subprocess.STDOUT)
        worker = subprocess.Popen(
            [sys.executable, "-m", "flask", "--app", "webapp", "worker", "--concurrency", "1"],
            env=env, stdout=worker_output, stderr=subprocess.STDOUT)
    try:
        assert client.get("/healthz").status_code == 200
        assert client.get("/api/v1/sites", headers=api).status_code == 200
        dashboard = served.test_client()
        token = re.search(r'name="csrf_token" value="([^"]+)"',
                          dashboard.get("/sign-in").text).group(1)
        dashboard.post("/sign-in", data={"email": "cms@example.com",
                                         "password": "correct horse", "csrf_token": token})

        outage.cut()
        started = time.monotonic()
        health = client.get("/healthz")
        assert health.status_code == 503 and health.json["database"] == "unreachable"
        assert time.monotonic() - started < 10
        answer = client.post("/api/v1/sites/shop/urls", headers=api,
                             json={"urls": [{"loc": f"{site.base_url}during-outage"}]})
        assert answer.status_code == 503 and "send it again" in answer.json["error"]["message"]
        assert "Retry-After" in answer.headers
        page = dashboard.get("/")
        assert page.status_code == 503 and "database is not answering" in page.text
        # Crawlers are served from the published files and the routes known before.
        assert client.get("/sitemaps/shop/sitemap.xml").status_code == 200
        probes.wait_for(lambda: "the database is unreachable" in log.read_text(), 60,
                        "the scheduler to say the database is unreachable")
        assert scheduler.poll() is None  # still running

        outage.restore()
        assert client.get("/healthz").status_code == 200
        answer = client.post("/api/v1/sites/shop/urls", headers=api,
                             json={"urls": [{"loc": f"{site.base_url}after-outage"}]})
        assert answer.status_code == 200 and answer.json["created"] == 1
        assert dashboard.get("/").status_code == 200
        # The same scheduler process queues the change made after the outage, and the same
        # worker generates it.
        probes.wait_for(lambda: "after-outage" in client.get("/sitemaps/shop/sitemap.xml").text,
                        120, "the change made after the outage to be published")
        assert "Traceback" not in log.read_text()
        assert scheduler.poll() is None and worker.poll() is None  # neither restarted
    finally:
        for process in (scheduler, worker):
            process.send_signal(signal.SIGTERM)
            process.wait(timeout=60)
        served.extensions["db_engine"].dispose()
        outage.close()
