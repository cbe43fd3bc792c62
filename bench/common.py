"""What the benchmarks share: a fresh migrated SQLite database holding one empty site."""

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
