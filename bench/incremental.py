"""Time a one-URL change against a full generation of a large site, on SQLite and PostgreSQL.

    python bench/incremental.py --urls 1000000 [--postgresql postgresql://postgres@127.0.0.1/test]

For each database: a site of N URLs (the synthetic URLs of bench/generate.py), a full
generation (`jobs.regenerate`), then one URL changed through the app (`save_url`, which stamps
the change) and `jobs.regenerate` again. Prints both times, their ratio (target: under 10%), and
which files the second run published with new content (the others name the bodies the first
run stored: nothing is copied). Also times a run with no change at all, which writes nothing and publishes nothing.
PostgreSQL runs in a schema of its own that is dropped at the end; without --postgresql (or
TEST_POSTGRESQL_URL) only SQLite is measured.
"""

from __future__ import annotations

import argparse
import os
import sqlite3
import tempfile
import time
from pathlib import Path

from common import copy_urls, drop_schema, fresh_site_database, postgresql_site_database
from generate import CHANGEFREQS, PRIORITIES, synthetic_lastmod, synthetic_loc


def rows(urls: int):
    for n in range(urls):
        yield synthetic_loc(n), synthetic_lastmod(n), CHANGEFREQS[n % 4], PRIORITIES[n % 4]


def sqlite_database(folder: Path, urls: int) -> str:
    path = folder / "bench.db"
    now = fresh_site_database(path)
    with sqlite3.connect(path) as con:
        con.executemany("INSERT INTO urls (site_id, loc, lastmod, changefreq, priority, "
                        "created_at, updated_at) VALUES (1, ?, ?, ?, ?, ?, ?)",
                        ((*row, now, now) for row in rows(urls)))
    return f"sqlite:///{path}"


def digests(store, key: str) -> dict[str, str]:
    """The digest of each published file, by name: a file written again with other content
    has another one (an unchanged file is named by its stored body, not copied)."""
    return {name: f.sha256 for name, f in store.current_set(key).files.items()}


def measure(database_url: str, folder: Path, urls: int) -> dict:
    from webapp import create_app, jobs
    from webapp.models import Site
    from webapp.urls import save_url

    app = create_app({"DATABASE_URL": database_url, "SECRET_KEY": "bench",
                      "INSTANCE_PATH": str(folder), "SITEMAPS_DIR": str(folder / "sitemaps")})
    store = app.extensions["sitemap_store"]

    def timed_run():
        started = time.perf_counter()
        generation = jobs.regenerate(1, app)
        return generation, time.perf_counter() - started

    full, full_seconds = timed_run()
    assert full.status == "succeeded", full.error
    with app.extensions["db_sessionmaker"]() as session:
        site = session.get(Site, 1)
        key = site.storage_key
        before = digests(store, key)
        save_url(session, site, synthetic_loc(urls // 2), {"lastmod": "2026-11-22"})
        session.commit()
    changed, changed_seconds = timed_run()
    assert changed.status == "succeeded", changed.error
    after = digests(store, key)
    rewritten = sorted(name for name in after if name.endswith(".xml")
                       and after[name] != before.get(name))
    idle, idle_seconds = timed_run()
    app.extensions["db_engine"].dispose()
    return {"full": full_seconds, "one": changed_seconds, "idle": idle_seconds,
            "idle_status": idle.status, "files": full.file_count, "rewritten": rewritten}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--urls", type=int, default=1_000_000)
    parser.add_argument("--postgresql", default=os.environ.get("TEST_POSTGRESQL_URL"),
                        help="a PostgreSQL server database to measure in a schema of its own")
    args = parser.parse_args()
    print(f"{'database':<10} {'urls':>9} {'full s':>7} {'one URL s':>9} {'ratio':>6} "
          f"{'no change s':>11}  files rewritten by the one-URL run")
    kinds = ["sqlite"] + (["postgresql"] if args.postgresql else [])
    for kind in kinds:
        with tempfile.TemporaryDirectory(prefix="bench-incremental-") as tmp:
            folder = Path(tmp)
            schema = f"bench_incremental_{os.getpid()}"
            if kind == "sqlite":
                url = sqlite_database(folder, args.urls)
            else:
                url = postgresql_site_database(args.postgresql, schema)
                copy_urls(url, rows(args.urls))
            try:
                result = measure(url, folder, args.urls)
            finally:
                if kind == "postgresql":
                    drop_schema(args.postgresql, schema)
        print(f"{kind:<10} {args.urls:>9} {result['full']:>7.2f} {result['one']:>9.2f} "
              f"{result['one'] / result['full']:>6.1%} {result['idle']:>11.2f}  "
              f"{', '.join(result['rewritten'])} (of {result['files']} files; the run with no "
              f"change: {result['idle_status']})", flush=True)


if __name__ == "__main__":
    main()
