"""The migrations build exactly the schema the models describe, and can be undone."""

from __future__ import annotations

import pytest
from alembic import command
from alembic.autogenerate import compare_metadata
from alembic.migration import MigrationContext
from sqlalchemy import inspect

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
