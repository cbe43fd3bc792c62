"""What the benchmarks share: a fresh migrated database (SQLite or PostgreSQL) holding one empty
site, and a fast way to fill it."""

from __future__ import annotations

import sqlite3
import sys
import uuid
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

BASE = "https://shop.example.com/"


def fresh_site_database(path: Path) -> str:
    """Migrate a new SQLite file and add site 1 at BASE; return the timestamp used for rows."""
    from tests.conftest import migrate
    from webapp.models import utcnow

    migrate(f"sqlite:///{path}")
    now = utcnow().isoformat(sep=" ")
    with sqlite3.connect(path) as con:
        con.execute(
            "INSERT INTO sites (id, slug, name, base_url, sitemap_url, encoding, max_urls_per_file,"
            " stylesheet, indexnow_key, storage_key, created_at, updated_at)"
            " VALUES (1, 'shop', 'Shop', ?, ?, 'utf-8', 50000, 1, ?, ?, ?, ?)",
            (BASE, BASE + "sitemap.xml", uuid.uuid4().hex, uuid.uuid4().hex, now, now))
    return now


def postgresql_site_database(server_url: str, schema: str) -> str:
    """Migrate a new schema of the PostgreSQL database at `server_url` and add site 1 at BASE;
    return a database URL that works in that schema (drop it with drop_schema)."""
    from sqlalchemy import create_engine, text
    from sqlalchemy.engine import make_url

    from tests.conftest import migrate
    from webapp.config import normalize_database_url

    server = create_engine(normalize_database_url(server_url))
    with server.begin() as connection:
        connection.execute(text(f"DROP SCHEMA IF EXISTS {schema} CASCADE"))
        connection.execute(text(f"CREATE SCHEMA {schema}"))
    server.dispose()
    url = make_url(normalize_database_url(server_url)).update_query_dict(
        {"options": f"-csearch_path={schema}"}).render_as_string(hide_password=False)
    migrate(url)
    engine = create_engine(url)
    with engine.begin() as connection:
        connection.execute(text(
            "INSERT INTO sites (id, slug, name, base_url, sitemap_url, encoding, max_urls_per_file,"
            " stylesheet, indexnow_key, storage_key) VALUES (1, 'shop', 'Shop', :base, :sitemap,"
            " 'utf-8', 50000, true, :key, :storage)"),
            {"base": BASE, "sitemap": BASE + "sitemap.xml", "key": uuid.uuid4().hex,
             "storage": uuid.uuid4().hex})
        connection.execute(text("SELECT setval('sites_id_seq', 1)"))
    engine.dispose()
    return url


def copy_urls(url: str, rows) -> None:
    """Load (loc, lastmod, changefreq, priority) rows into site 1 of a PostgreSQL database
    with COPY, the way a bulk load is done there."""
    import psycopg
    from sqlalchemy.engine import make_url

    parsed = make_url(url)
    with psycopg.connect(host=parsed.host, port=parsed.port or 5432, user=parsed.username,
                         password=parsed.password, dbname=parsed.database,
                         options=parsed.query.get("options", "")) as con, con.cursor() as cur:
        with cur.copy("COPY urls (site_id, loc, lastmod, changefreq, priority) FROM STDIN") as copy:
            for row in rows:
                copy.write_row((1, *row))


def drop_schema(server_url: str, schema: str) -> None:
    from sqlalchemy import create_engine, text

    from webapp.config import normalize_database_url

    server = create_engine(normalize_database_url(server_url))
    with server.begin() as connection:
        connection.execute(text(f"DROP SCHEMA IF EXISTS {schema} CASCADE"))
    server.dispose()
