"""The migrations build exactly the schema the models describe, and can be undone."""

from __future__ import annotations

import pytest
from alembic import command
from alembic.autogenerate import compare_metadata
from alembic.migration import MigrationContext
from sqlalchemy import inspect, text

from tests.conftest import alembic_config
from webapp.db import Base, make_engine


def schema_differences(url: str) -> list:
    engine = make_engine(url)
    try:
        with engine.connect() as connection:
            context = MigrationContext.configure(connection, opts={"compare_type": True})
            return compare_metadata(context, Base.metadata)
    finally:
        engine.dispose()


def table_names(url: str) -> set[str]:
    engine = make_engine(url)
    try:
        return set(inspect(engine).get_table_names())
    finally:
        engine.dispose()


def test_migrated_schema_matches_the_models(database_url):
    assert schema_differences(database_url) == []


@pytest.mark.parametrize("database_url", ["sqlite"], indirect=True)
def test_downgrade_to_base_and_upgrade_again_rebuilds_the_schema(database_url):
    config = alembic_config(database_url)

    command.downgrade(config, "base")
    assert table_names(database_url) <= {"alembic_version"}

    command.upgrade(config, "head")
    assert table_names(database_url) == set(Base.metadata.tables) | {"alembic_version"}
    assert schema_differences(database_url) == []


def test_migrating_a_database_with_data_keeps_every_row(database_url):
    """Batch mode on SQLite rebuilds tables; with foreign keys on that once cascaded deletes."""
    config = alembic_config(database_url)
    command.downgrade(config, "0001")
    engine = make_engine(database_url)
    with engine.begin() as connection:
        connection.execute(text(
            "INSERT INTO sites (id, slug, name, base_url, sitemap_url, encoding, max_urls_per_file)"
            " VALUES (7, 'shop', 'Shop', 'https://shop.example.com/',"
            " 'https://shop.example.com/sitemap.xml', 'utf-8', 50000)"))
        connection.execute(text("INSERT INTO urls (site_id, loc) VALUES"
                                " (7, 'https://shop.example.com/a'), (7, 'https://shop.example.com/b')"))
        connection.execute(text("INSERT INTO generations (site_id, status, started_at, url_count,"
                                " file_count, bytes) VALUES (7, 'succeeded', '2026-01-01', 2, 1, 9)"))

    def counts():
        with engine.connect() as connection:
            return [connection.execute(text(f"SELECT count(*) FROM {table}")).scalar()
                    for table in ("sites", "urls", "generations")]

    try:
        command.upgrade(config, "head")
        assert counts() == [1, 2, 1]
        with engine.connect() as connection:
            keys = connection.execute(text("SELECT indexnow_key, storage_key FROM sites")).one()
        assert all(len(key) == 32 for key in keys)
        command.downgrade(config, "0001")
        assert counts() == [1, 2, 1]
    finally:
        command.upgrade(config, "head")
        engine.dispose()
