"""Fixtures: an app per test on SQLite and on PostgreSQL, its CLI runner, a session, builders.

The schema is made once per database by running the real migrations. Tests then commit freely,
as the app does, and each test starts from empty tables: SQLite gets a fresh copy of the
migrated file, PostgreSQL has its tables truncated. PostgreSQL tests run when
TEST_POSTGRESQL_URL is set (`.ci/run` sets it) and are skipped otherwise; each run works in a
schema of its own in that database and drops it at the end.
"""

from __future__ import annotations

import asyncio
import os
import re
import shutil
from collections.abc import Callable, Iterator
from contextlib import nullcontext
from pathlib import Path

import pytest
from alembic import command
from alembic.config import Config
from flask import Flask
from jinja2 import BytecodeCache
from pytest_httpserver import HTTPServer
from sqlalchemy import text
from sqlalchemy.engine import make_url

from webapp import create_app
from webapp.accounts import users
from webapp.config import normalize_database_url
from webapp.db import Base, make_engine

ROOT = Path(__file__).resolve().parent.parent
POSTGRESQL_URL = os.environ.get("TEST_POSTGRESQL_URL")
REDIS_URL = os.environ.get("TEST_REDIS_URL")


class CompiledTemplates(BytecodeCache):
    """The templates compiled once per test process: every test makes an app of its own, and
    each app's Jinja environment would otherwise parse and compile every template it renders
    again (a few hundred ms a test that shows dashboard pages). Jinja's own bytecode cache,
    checked against each template's source, so an edited template is compiled anew."""

    def __init__(self) -> None:
        self.compiled: dict[str, bytes] = {}

    def load_bytecode(self, bucket) -> None:
        if bucket.key in self.compiled:
            bucket.bytecode_from_string(self.compiled[bucket.key])

    def dump_bytecode(self, bucket) -> None:
        self.compiled[bucket.key] = bucket.bytecode_to_string()


@pytest.fixture(scope="session", autouse=True)
def compiled_templates() -> Iterator[None]:
    """Every app of the test process (`app`, and those tests make themselves) shares one
    CompiledTemplates; the apps' processes (workers, servers) compile their own, as in
    production."""
    patch = pytest.MonkeyPatch()
    patch.setattr(Flask, "jinja_options", {**Flask.jinja_options,
                                           "bytecode_cache": CompiledTemplates()})
    yield
    patch.undo()


def alembic_config(url: str) -> Config:
    config = Config(str(ROOT / "alembic.ini"))
    config.attributes["database_url"] = url
    config.attributes["configure_logger"] = False
    return config


def migrate(url: str) -> None:
    command.upgrade(alembic_config(url), "head")


@pytest.fixture(scope="session")
def sqlite_template(tmp_path_factory) -> Path:
    path = tmp_path_factory.mktemp("template") / "migrated.db"
    migrate(f"sqlite:///{path}")
    return path


def postgresql_schema(name: str) -> tuple[str, Callable[[], None]]:
    """A migrated schema of its own on the test server: its URL, and what drops it."""
    server = make_engine(normalize_database_url(POSTGRESQL_URL))
    with server.begin() as connection:
        connection.execute(text(f"DROP SCHEMA IF EXISTS {name} CASCADE"))
        connection.execute(text(f"CREATE SCHEMA {name}"))
    url = make_url(normalize_database_url(POSTGRESQL_URL)).update_query_dict(
        {"options": f"-csearch_path={name}"}).render_as_string(hide_password=False)
    migrate(url)

    def drop() -> None:
        with server.begin() as connection:
            connection.execute(text(f"DROP SCHEMA {name} CASCADE"))
        server.dispose()

    return url, drop


@pytest.fixture(scope="session")
def postgresql_database() -> Iterator[str]:
    """A schema of its own for this test process, so runs (and the processes of one run)
    sharing the database never meet."""
    if not POSTGRESQL_URL:
        pytest.skip("TEST_POSTGRESQL_URL is not set")
    url, drop = postgresql_schema(f"test_run_{os.getpid()}")
    yield url
    drop()


def _truncate(url: str) -> None:
    engine = make_engine(url)
    tables = ", ".join(table.name for table in Base.metadata.sorted_tables)
    with engine.begin() as connection:
        connection.execute(text(f"TRUNCATE {tables} RESTART IDENTITY CASCADE"))
    engine.dispose()


@pytest.fixture(params=["sqlite", "postgresql"])
def database_url(request, tmp_path) -> str:
    """A migrated, empty database of each kind."""
    if request.param == "sqlite":
        path = tmp_path / "test.db"
        shutil.copy(request.getfixturevalue("sqlite_template"), path)
        return f"sqlite:///{path}"
    url = request.getfixturevalue("postgresql_database")
    _truncate(url)
    return url


def new_app(database_url: str, folder: Path):
    """The app of a test: on `database_url`, its files in `folder`."""
    return create_app({
        "TESTING": True,
        "DATABASE_URL": database_url,
        "SECRET_KEY": "test-secret",
        "INSTANCE_PATH": str(folder / "instance"),
        "SITEMAPS_DIR": str(folder / "sitemaps"),
        # Nothing in a test may reach the internet: the default engines are a closed local port.
        "INDEXNOW_ENDPOINT": "http://127.0.0.1:9/indexnow",
        "GSC_ENDPOINT": "http://127.0.0.1:9/",
        # A ceiling for a peer that is stuck, not a limit an answer must beat on a busy
        # machine: a test of the time-out sets its own, against a peer that hangs until
        # released.
        "NOTIFY_TIMEOUT": 30,
        "NOTIFY_MAX_ATTEMPTS": 4,
        "NOTIFY_RETRY_SECONDS": 60,
        # The fake engines and sites of the tests listen on the loopback address.
        "OUTBOUND_ALLOW": "127.0.0.1",
        # Verification against the test website: its slow page, which hangs until released, is
        # cut off in a few seconds (what a run with it costs), while every other page answers
        # in milliseconds, on a busy machine too; and no pause.
        "VERIFY_TIMEOUT": 5,
        "VERIFY_DELAY_MS": 0,
        # Work asked for runs where it is asked, at once; delayed work waits for the clock.
        # Tests of real workers and brokers make apps of their own (test_workers.py).
        "CELERY_BROKER_URL": "memory://",
        "CELERY_TASK_ALWAYS_EAGER": True,
    })


@pytest.fixture
def app(database_url, tmp_path):
    app = new_app(database_url, tmp_path)
    yield app
    app.extensions["db_engine"].dispose()


@pytest.fixture(scope="module", params=["sqlite", "postgresql"])
def module_app(request, tmp_path_factory):
    """One app for the tests of a module that only read what its fixtures stored (the
    browser tests' showcase dashboard): a migrated database of each kind of its own, a
    PostgreSQL schema dropped at the end."""
    folder = tmp_path_factory.mktemp("module-app")
    drop = None
    if request.param == "sqlite":
        shutil.copy(request.getfixturevalue("sqlite_template"), folder / "test.db")
        url = f"sqlite:///{folder / 'test.db'}"
    else:
        if not POSTGRESQL_URL:
            pytest.skip("TEST_POSTGRESQL_URL is not set")
        url, drop = postgresql_schema(f"test_module_{os.getpid()}")
    app = new_app(url, folder)
    yield app
    app.extensions["db_engine"].dispose()
    if drop:
        drop()


# Tests about passwords and signing in, which hash and check passwords at the cost production
# pays; every other test makes its accounts with a cheap scrypt (see `password_hash_cost`).
PRODUCTION_HASH_MODULES = {"tests.test_accounts_security"}
PRODUCTION_HASH_NAMES = re.compile(r"password|sign_in|sign_out")
CHEAP_SCRYPT = "scrypt:128:8:1"  # N=128 instead of werkzeug's 32768: about 1 ms, not 100+


@pytest.fixture(autouse=True)
def password_hash_cost(request, monkeypatch):
    """Accounts made by a test that is not about passwords get a cheap scrypt hash: same
    algorithm and format, a lower work factor, checked by the same code (the parameters are
    stored in the hash). A sign-in costs two hashes at production's cost, a few hundred ms on
    a busy core; the tests about passwords and signing in (PRODUCTION_HASH_*) and every
    process a test starts keep production's cost."""
    if request.node.module.__name__ in PRODUCTION_HASH_MODULES or \
            PRODUCTION_HASH_NAMES.search(request.node.name):
        return
    real = users.generate_password_hash
    monkeypatch.setattr(users, "generate_password_hash",
                        lambda password, method="scrypt", salt_length=16:
                        real(password, CHEAP_SCRYPT if method == "scrypt" else method,
                             salt_length))


@pytest.fixture(scope="session")
def engine_server() -> Iterator[HTTPServer]:
    server = HTTPServer(host="127.0.0.1", port=0, threaded=True)
    server.start()
    yield server
    server.clear()
    server.stop()


@pytest.fixture
def engine(engine_server) -> HTTPServer:
    """A fake search engine on 127.0.0.1: it records every request (`engine.log`) and answers
    as each test tells it to (pytest-httpserver's expect_request / respond_with_*)."""
    engine_server.clear()
    return engine_server


@pytest.fixture(scope="session")
def chromium() -> Iterator[tuple[object, asyncio.AbstractEventLoop]]:
    """One headless Chromium (tests.builders.launch_chromium) for the test process: starting
    Playwright's driver and the browser costs seconds, a test's own context a fraction of one.

    Playwright's sync API leaves its event loop marked as running in this thread between its
    calls, where asyncio.run() (the crawlers of other tests) refuses to start: the mark is
    set only while a test holds `browser`."""
    from playwright.sync_api import sync_playwright

    from tests.builders import launch_chromium

    with sync_playwright() as playwright:
        browser = launch_chromium(playwright)
        loop = asyncio.get_running_loop()
        asyncio._set_running_loop(None)
        try:
            yield browser, loop
        finally:
            asyncio._set_running_loop(loop)
            browser.close()


@pytest.fixture
def browser(chromium):
    """The test process's Chromium (`chromium`); the contexts a test opens are closed after
    it, so each test starts with no pages, cookies or storage of another's."""
    browser, loop = chromium
    asyncio._set_running_loop(loop)
    try:
        yield browser
        for context in browser.contexts:
            context.close()
    finally:
        asyncio._set_running_loop(None)


@pytest.fixture
def runner(app):
    return app.test_cli_runner()


@pytest.fixture
def client(app):
    return app.test_client()


def pytest_configure(config):
    config.addinivalue_line("markers", "session_outside_app_context: the `session` fixture is "
                            "opened outside any app context (see `session`)")


@pytest.fixture
def session(request, app):
    """A session on the test's database, opened in an app context. A module that sets
    `pytestmark = pytest.mark.session_outside_app_context` gets it outside any app context
    instead: each test-client request then gets a context of its own, as in production (a
    shared context would share Flask-Login's cached user between requests and clients)."""
    outside = request.node.get_closest_marker("session_outside_app_context") is not None
    context = nullcontext() if outside else app.app_context()
    with context, app.extensions["db_sessionmaker"]() as session:
        yield session


@pytest.fixture
def redis_url() -> str:
    """A Redis server for brokers of real workers (`.ci/run` sets TEST_REDIS_URL); each test
    gives its processes a queue name of its own, so runs sharing the server never meet."""
    if not REDIS_URL:
        pytest.skip("TEST_REDIS_URL is not set")
    return REDIS_URL
