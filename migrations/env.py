"""Alembic environment: metadata from webapp.db, URL from webapp.config unless one is passed in."""

from __future__ import annotations

from logging.config import fileConfig

from alembic import context

from webapp import config as app_config
from webapp import models  # noqa: F401  (registers every table on Base.metadata)
from webapp.db import Base, make_engine

alembic_config = context.config
if alembic_config.config_file_name and alembic_config.attributes.get("configure_logger", True):
    fileConfig(alembic_config.config_file_name, disable_existing_loggers=False)


def database_url() -> str:
    url = alembic_config.attributes.get("database_url") or app_config.database_url()
    return app_config.normalize_database_url(url)


def run_migrations_offline() -> None:
    context.configure(url=database_url(), target_metadata=Base.metadata, literal_binds=True,
                      render_as_batch=True)
    with context.begin_transaction():
        context.run_migrations()


def run_migrations_online() -> None:
    connection = alembic_config.attributes.get("connection")
    if connection is not None:
        _run(connection)
        return
    engine = make_engine(database_url())
    with engine.connect() as connection:
        _run(connection)
    engine.dispose()


def _run(connection) -> None:
    # Batch mode lets later revisions alter SQLite tables, which SQLite cannot do in place: it
    # copies the table and drops the original. With foreign keys on, that DROP would delete
    # every row that refers to the table (ON DELETE CASCADE), so they are off while migrating
    # and checked afterwards. SQLite only honours the pragma outside a transaction.
    sqlite = connection.dialect.name == "sqlite"
    if sqlite:
        connection.exec_driver_sql("PRAGMA foreign_keys=OFF")
        connection.commit()
    context.configure(connection=connection, target_metadata=Base.metadata, render_as_batch=True)
    with context.begin_transaction():
        context.run_migrations()
    if sqlite:
        broken = connection.exec_driver_sql("PRAGMA foreign_key_check").all()
        connection.exec_driver_sql("PRAGMA foreign_keys=ON")
        connection.commit()
        if broken:
            raise RuntimeError(f"the migration left rows that refer to missing rows: {broken[:5]}")


if context.is_offline_mode():
    run_migrations_offline()
else:
    run_migrations_online()
