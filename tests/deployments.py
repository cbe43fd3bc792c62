"""The two deployments, with a real worker, for tests of the work workers run: `make run`'s
(SQLite, the queue in the instance folder) and `make run-prod`'s (PostgreSQL, Redis). The
worker is started as `flask --app webapp worker` starts it: Celery's prefork pool, whose child
processes are daemonic, as in production.

A worker's start costs seconds: `deployment` is shared by the tests of a module (each test
makes sites of its own). Import the fixture into the test module to use it."""

from __future__ import annotations

import os
import shutil
import uuid
from dataclasses import dataclass, field
from pathlib import Path

import pytest
from flask import Flask
from sqlalchemy import select

from tests.builders import csrf_token, make_site
from tests.conftest import POSTGRESQL_URL, REDIS_URL, postgresql_schema
from tests.probes import AppProcesses, wait_for
from webapp import create_app, tasks
from webapp.models import Task
from webapp.accounts.users import create_user

PASSWORD = "a long enough password 1"


def node(app, instance: Path, **settings):
    """Another app on the test's database: a web node with an instance folder of its own."""
    shared = {name: app.config[name] for name in (
        "DATABASE_URL", "SECRET_KEY", "INDEXNOW_ENDPOINT", "GSC_ENDPOINT", "OUTBOUND_ALLOW",
        "NOTIFY_TIMEOUT")}
    return create_app({**shared, "TESTING": True, "INSTANCE_PATH": str(instance),
                       "SITEMAPS_DIR": str(instance / "sitemaps"), "CELERY_BROKER_URL": "",
                       "CELERY_TASK_ALWAYS_EAGER": False, **settings})


def environment(app, **settings) -> dict[str, str]:
    """The environment of the app's processes: the same settings as `app`."""
    names = ("DATABASE_URL", "SECRET_KEY", "INSTANCE_PATH", "SITEMAPS_DIR", "OUTBOUND_ALLOW",
             "CELERY_BROKER_URL", "CELERY_QUEUE", "INDEXNOW_ENDPOINT")
    return {**os.environ, **{name: str(app.config[name]) for name in names},
            "SCHEDULER_TICK_SECONDS": "1", **settings}


@dataclass
class Deployment:
    """A web node (`app`, in the test's process) and a worker process on one database and
    broker."""

    kind: str  # "embedded" or "production"
    app: Flask
    processes: AppProcesses
    worker: object = None
    users: set[str] = field(default_factory=set)

    def session(self):
        return self.app.extensions["db_sessionmaker"]()

    def site(self, **settings):
        """A site of the test's own: the deployment outlives the test."""
        tag = uuid.uuid4().hex[:12]
        with self.session() as session:
            site = make_site(session, name=f"Shop {tag}", base_url=f"https://{tag}.example.com/",
                             **settings)
            session.expunge(site)
            return site

    def signed_in(self, role: str = "editor"):
        """A test client of the dashboard, signed in with an account of `role`."""
        email = f"{role}@example.com"
        if email not in self.users:
            with self.session() as session:
                create_user(session, email, PASSWORD, role)
                session.commit()
            self.users.add(email)
        client = self.app.test_client()
        answer = client.post("/sign-in", data={"email": email, "password": PASSWORD,
                                               "csrf_token": csrf_token(client)})
        assert answer.status_code == 302, answer.text
        client.csrf = csrf_token(client, "/")
        return client

    def finished(self, task_id: str, within: float = 300) -> dict:
        """The task's state once it has finished (a ceiling for a stuck worker, not a
        duration: a worker's start takes many seconds on a busy machine)."""
        def state():
            with self.app.app_context(), self.session() as session:
                found = tasks.read(session, task_id)
            return found if found["status"] in ("done", "failed") else None
        try:
            return wait_for(state, within, f"task {task_id} to finish")
        except AssertionError:
            raise AssertionError(f"task {task_id} did not finish; the worker said:\n"
                                 f"{self.log()}") from None

    def payload_kept(self, task_id: str) -> bool:
        with self.session() as session:
            return session.scalar(select(Task.payload.is_not(None))
                                  .where(Task.id == task_id))

    def log(self) -> str:
        return self.worker.log.read_text(errors="replace")


@pytest.fixture(scope="module", params=["embedded", "production"])
def deployment(request, tmp_path_factory):
    """`make run`'s deployment (SQLite, the embedded queue) and `make run-prod`'s (PostgreSQL,
    Redis: TEST_POSTGRESQL_URL and TEST_REDIS_URL), each with one prefork worker."""
    folder = tmp_path_factory.mktemp(f"deployment-{request.param}")
    drop = None
    if request.param == "embedded":
        shutil.copy(request.getfixturevalue("sqlite_template"), folder / "app.db")
        database, broker = f"sqlite:///{folder / 'app.db'}", ""
    else:
        if not (POSTGRESQL_URL and REDIS_URL):
            pytest.skip("TEST_POSTGRESQL_URL and TEST_REDIS_URL are not both set")
        database, drop = postgresql_schema(f"test_deployment_{os.getpid()}")
        broker = REDIS_URL
    app = create_app({
        "TESTING": True, "DATABASE_URL": database, "SECRET_KEY": "test-secret",
        "INSTANCE_PATH": str(folder / "instance"), "SITEMAPS_DIR": str(folder / "sitemaps"),
        "INDEXNOW_ENDPOINT": "http://127.0.0.1:9/indexnow", "GSC_ENDPOINT": "http://127.0.0.1:9/",
        "OUTBOUND_ALLOW": "127.0.0.1", "CELERY_BROKER_URL": broker,
        "CELERY_QUEUE": f"test-{uuid.uuid4().hex}", "CELERY_TASK_ALWAYS_EAGER": False})
    try:
        with AppProcesses(folder, environment(app)) as processes:
            deployed = Deployment(request.param, app, processes)
            deployed.worker = processes.worker()
            # Ready: it hears broadcasts (revoke) from now on, as it takes tasks.
            wait_for(lambda: " ready." in deployed.log(), 300, "the worker to be ready")
            yield deployed
            processes.stop(deployed.worker)
    finally:
        app.extensions["db_engine"].dispose()
        if drop:
            drop()
