"""Declarative base, engine and sessions: the one home of a session's life.

`get_session` is the request's (closed at teardown), `session_scope` is one unit of work for a
job or a command, `new_session` is a session of its own for work that outlives the request, and
`after_commit` holds what must happen only once a transaction has committed.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from datetime import UTC, datetime
from pathlib import Path

from flask import Flask, current_app, g
from sqlalchemy import DateTime, MetaData, TypeDecorator, create_engine, event
from sqlalchemy.engine import Engine, make_url
from sqlalchemy.orm import DeclarativeBase, Session, sessionmaker

from webapp.config import private_file, private_folder

NAMING_CONVENTION = {
    "ix": "ix_%(column_0_label)s",
    "uq": "uq_%(table_name)s_%(column_0_N_name)s",
    "ck": "ck_%(table_name)s_%(constraint_name)s",
    "fk": "fk_%(table_name)s_%(column_0_name)s_%(referred_table_name)s",
    "pk": "pk_%(table_name)s",
}


class UTCDateTime(TypeDecorator):
    """A point in time that reads back as an aware UTC datetime on every database.

    SQLite keeps no zone and returns naive values; comparing those with aware ones fails.
    """

    impl = DateTime(timezone=True)
    cache_ok = True

    def process_bind_param(self, value: datetime | None, dialect) -> datetime | None:
        if value is not None and value.tzinfo is not None:
            value = value.astimezone(UTC)
        return value

    def process_result_value(self, value: datetime | None, dialect) -> datetime | None:
        if value is not None and value.tzinfo is None:
            value = value.replace(tzinfo=UTC)
        return value


class Base(DeclarativeBase):
    metadata = MetaData(naming_convention=NAMING_CONVENTION)


def _sqlite_pragmas(dbapi_connection, _record) -> None:
    # WAL lets crawlers and the dashboard read while a generation or an import writes;
    # busy_timeout makes a second writer wait instead of failing at once.
    cursor = dbapi_connection.cursor()
    cursor.execute("PRAGMA foreign_keys=ON")
    cursor.execute("PRAGMA journal_mode=WAL")
    cursor.execute("PRAGMA synchronous=NORMAL")
    cursor.execute("PRAGMA busy_timeout=30000")
    cursor.close()


def make_engine(url: str) -> Engine:
    """An engine for `url`; for SQLite, the folder of the file is created and pragmas are set."""
    parsed = make_url(url)
    if parsed.get_backend_name() == "sqlite":
        if parsed.database and parsed.database != ":memory:":
            # Its own user's alone, and so are its -wal and -shm files: SQLite gives them
            # the database file's mode.
            path = Path(parsed.database)
            private_folder(path.parent)
            private_file(path)
        engine = create_engine(url)
        event.listen(engine, "connect", _sqlite_pragmas)
        return engine
    # A database that does not answer is reported within seconds instead of hanging a worker
    # (libpq would wait for the operating system's TCP timeout, minutes).
    engine = create_engine(url, pool_pre_ping=True, connect_args={"connect_timeout": 5})
    if parsed.get_backend_name() == "postgresql":
        event.listen(engine, "connect", _binary_lists)
    return engine


def _binary_lists(dbapi_connection, _record) -> None:
    # Lists (the array parameters of many_rows) travel in binary: psycopg's text format
    # quotes and escapes them element by element, several times slower.
    from psycopg.types.array import ListBinaryDumper

    dbapi_connection.adapters.register_dumper(list, ListBinaryDumper)


def init_app(app: Flask) -> None:
    engine = make_engine(app.config["DATABASE_URL"])
    app.extensions["db_engine"] = engine
    # Each session knows its app, for what runs after its commits (urls.changes).
    app.extensions["db_sessionmaker"] = sessionmaker(engine, expire_on_commit=False,
                                                     info={"app": app})
    app.teardown_appcontext(_close_request_session)


def get_session() -> Session:
    """The session of the current request or app context, opened on first use."""
    if "db_session" not in g:
        g.db_session = new_session()
    return g.db_session


def _close_request_session(_exc: BaseException | None) -> None:
    session = g.pop("db_session", None)
    if session is not None:
        session.close()


def new_session(app: Flask | None = None) -> Session:
    """A session of its own, not the request's: for a streamed download or background work,
    which go on after the request's session is closed. The caller closes it (`with`)."""
    return (app or current_app).extensions["db_sessionmaker"]()


@contextmanager
def session_scope(app: Flask | None = None) -> Iterator[Session]:
    """One unit of work for a job or CLI command: commit on success, roll back on error."""
    with new_session(app) as session, session.begin():
        yield session


_STEPS = "after_commit"


def after_commit(session: Session, step: Callable[[], None]) -> None:
    """Run `step()` once the session's transaction has committed, never if it rolls back: for
    what may not happen before the data says so (removing a deleted site's files).

    A step registered inside a savepoint is dropped if that savepoint rolls back, and waits
    for the outermost commit if it is released.
    """
    transaction = session.get_nested_transaction() or session.get_transaction() \
        or session.begin()
    session.info.setdefault(_STEPS, []).append((transaction, step))


@event.listens_for(Session, "after_commit")
def _run_steps(session: Session) -> None:
    if session.get_nested_transaction() is not None:
        return  # a savepoint released: the outer transaction may still roll back
    for _, step in session.info.pop(_STEPS, []):
        step()


@event.listens_for(Session, "after_soft_rollback")
def _drop_steps(session: Session, previous_transaction) -> None:
    """Steps of the transaction rolled back, and of the savepoints inside it, are dropped."""
    def inside(transaction) -> bool:
        while transaction is not None:
            if transaction is previous_transaction:
                return True
            transaction = transaction.parent
        return False

    kept = [(t, step) for t, step in session.info.get(_STEPS, []) if not inside(t)]
    session.info[_STEPS] = kept


@event.listens_for(Session, "after_transaction_end")
def _forget_steps(session: Session, transaction) -> None:
    if transaction.parent is None:  # ended without a commit (closed): nothing is to follow
        session.info.pop(_STEPS, None)
