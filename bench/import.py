"""Time a CSV import of N URLs (validation included) against a bare floor, and a sitemap (XML)
import of the same URLs.

    python bench/import.py --urls 1000000 [--format csv|sitemap|both] [--progress]
                           [--only sqlite|postgresql] [--other-sites 4]

Writes a CSV (loc,lastmod,changefreq,priority) of N URLs, some with non-ASCII characters the
import must percent-encode, `&`, quotes and W3C dates in several forms. Then, each into its own
fresh migrated database (SQLite; and PostgreSQL schemas with --postgresql URL or
TEST_POSTGRESQL_URL): (1) the app's `import_urls` (parse, validate and normalise every field,
upsert by loc, commit) and (2) a floor: the csv module reading the file and the driver's bulk
path (sqlite3 `executemany`, PostgreSQL `COPY`) storing the raw rows in the same table. Prints
seconds and the ratio. With --format sitemap (or both), the same rows as one urlset file
imported as a fetched or uploaded sitemap is (open_import, import_opened): one transaction,
batches of 2,000 entries, on PostgreSQL after ANALYZE of the empty tables or of
--other-sites sites (`analyze`); --progress prints the entries done every 20,000 with the
seconds.
"""

from __future__ import annotations

import argparse
import csv
import os
import sqlite3
import tempfile
import time
import uuid
from pathlib import Path
from xml.sax.saxutils import escape

from common import BASE, copy_urls, drop_schema, fresh_site_database, postgresql_site_database


def synthetic_row(n: int) -> tuple[str, str, str, str]:
    if n % 10 == 0:
        loc = f"{BASE}search?q=item-{n}&sort=price"
    elif n % 7 == 0:
        loc = f"{BASE}products/{n}/o'brien"
    elif n % 5 == 0:
        loc = f"{BASE}サイトマップ/{n}"
    else:
        loc = f"{BASE}products/category-{n % 97}/item-{n}.html"
    day = 1 + n % 28
    lastmod = ("", f"2026-03-{day:02d}", f"2026-03-{day:02d}T10:{n % 60:02d}+02:00")[n % 3]
    return loc, lastmod, ("daily", "weekly", "")[n % 3], ("0.8", "", "0.5")[n % 3]


def write_csv(path: Path, urls: int) -> None:
    with open(path, "w", newline="", encoding="utf-8") as handle:
        writer = csv.writer(handle)
        writer.writerow(["loc", "lastmod", "changefreq", "priority"])
        writer.writerows(synthetic_row(n) for n in range(urls))


def write_sitemap(path: Path, urls: int) -> None:
    """The rows of write_csv as one urlset (W3C dates as they are; empty fields left out)."""
    with open(path, "w", encoding="utf-8") as handle:
        handle.write('<?xml version="1.0" encoding="UTF-8"?>\n'
                     '<urlset xmlns="http://www.sitemaps.org/schemas/sitemap/0.9">\n')
        for n in range(urls):
            loc, lastmod, changefreq, priority = synthetic_row(n)
            handle.write(f"<url><loc>{escape(loc)}</loc>"
                         + (f"<lastmod>{lastmod}</lastmod>" if lastmod else "")
                         + (f"<changefreq>{changefreq}</changefreq>" if changefreq else "")
                         + (f"<priority>{priority}</priority>" if priority else "")
                         + "</url>\n")
        handle.write("</urlset>\n")


def analyze(url: str, other_sites: int) -> None:
    """Statistics as autovacuum leaves them on a server in use, taken before the import: of
    empty tables, or of `other_sites` sites of 5,000 URLs each. The planner then believes the
    new site's URLs are (nearly) none all through the import's transaction; without any
    statistics PostgreSQL guesses from the table's size, and the probe's slowdown hides."""
    from sqlalchemy import create_engine, text

    engine = create_engine(url)
    with engine.begin() as connection:
        for site in range(2, other_sites + 2):
            connection.execute(text(
                "INSERT INTO sites (id, slug, name, base_url, sitemap_url, encoding, "
                "max_urls_per_file, stylesheet, indexnow_key, storage_key) VALUES (:id, :slug, "
                ":slug, :base, :sitemap, 'utf-8', 50000, true, :key, :storage)"),
                {"id": site, "slug": f"other{site}", "base": f"https://other{site}.example.com/",
                 "sitemap": f"https://other{site}.example.com/sitemap.xml",
                 "key": uuid.uuid4().hex, "storage": uuid.uuid4().hex})
            connection.execute(text(
                "INSERT INTO urls (site_id, loc) SELECT :id, :base || 'p/' || n "
                "FROM generate_series(1, 5000) AS n"),
                {"id": site, "base": f"https://other{site}.example.com/"})
        connection.execute(text("ANALYZE"))
    engine.dispose()


def run_sitemap(db: str, path: Path, instance: Path, progress: bool) -> tuple[float, str]:
    from webapp import create_app
    from webapp.db import session_scope
    from webapp.outbound import Policy
    from webapp.sites import find_site
    from webapp.urls import import_opened, open_import

    app = create_app({"DATABASE_URL": db, "SECRET_KEY": "bench", "INSTANCE_PATH": str(instance)})
    started = time.perf_counter()
    policy = Policy.of({"NOTIFY_TIMEOUT": 1, "OUTBOUND_ALLOW": ""})

    def said(done: int, total: int) -> None:
        if progress and done % 20_000 == 0:
            print(f"  {done:>9} entries {time.perf_counter() - started:8.1f} s", flush=True)

    with session_scope(app) as session, \
            open_import(path, path.name, BASE, None, policy) as opened:
        report = import_opened(session, find_site(session, "shop"), opened, progress=said)
    seconds = time.perf_counter() - started
    app.extensions["db_engine"].dispose()
    return seconds, report.summary()


def run_app(db: str, csv_path: Path, instance: Path) -> tuple[float, str]:
    from webapp import create_app
    from webapp.db import session_scope
    from webapp.sites import find_site
    from webapp.urls import import_urls

    app = create_app({"DATABASE_URL": db, "SECRET_KEY": "bench", "INSTANCE_PATH": str(instance)})
    started = time.perf_counter()
    with session_scope(app) as session, open(csv_path, encoding="utf-8", newline="") as stream:
        report = import_urls(session, find_site(session, "shop"), stream)
    seconds = time.perf_counter() - started
    app.extensions["db_engine"].dispose()
    return seconds, report.summary()


def run_floor(db: str, csv_path: Path) -> float:
    """The csv module and the driver's bulk path: sqlite3 executemany, or COPY on PostgreSQL."""
    started = time.perf_counter()
    with open(csv_path, encoding="utf-8", newline="") as handle:
        reader = csv.reader(handle)
        next(reader)
        if db.startswith("sqlite:///"):
            con = sqlite3.connect(db.removeprefix("sqlite:///"))
            con.executemany(
                "INSERT INTO urls (site_id, loc, lastmod, changefreq, priority, created_at, "
                "updated_at) VALUES (1, ?, ?, ?, ?, '2026-01-01', '2026-01-01')", reader)
            con.commit()
            con.close()
        else:
            copy_urls(db, ((loc, lastmod or None, changefreq or None, priority or None)
                           for loc, lastmod, changefreq, priority in reader))
    return time.perf_counter() - started


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--urls", type=int, default=100_000)
    parser.add_argument("--postgresql", default=os.environ.get("TEST_POSTGRESQL_URL"),
                        help="also measure on this PostgreSQL database, in schemas of its own")
    parser.add_argument("--format", choices=("csv", "sitemap", "both"), default="csv",
                        help="a sitemap of more than about 350,000 such URLs passes 50 MiB, "
                             "the most a sitemap import reads")
    parser.add_argument("--progress", action="store_true",
                        help="print a sitemap import's progress every 20,000 entries")
    parser.add_argument("--other-sites", type=int, default=0,
                        help="PostgreSQL: sites of 5,000 URLs each in the statistics taken "
                             "before a sitemap import")
    parser.add_argument("--only", choices=("sqlite", "postgresql"),
                        help="measure on this database alone")
    args = parser.parse_args()
    kinds = ["sqlite"] + (["postgresql"] if args.postgresql else [])
    kinds = [kind for kind in kinds if args.only in (None, kind)]
    with tempfile.TemporaryDirectory(prefix="bench-import-") as tmp:
        tmp_path = Path(tmp)
        csv_path = tmp_path / "urls.csv"
        write_csv(csv_path, args.urls)
        if args.format in ("sitemap", "both"):
            sitemap_path = tmp_path / "sitemap.xml"
            write_sitemap(sitemap_path, args.urls)
            print(f"sitemap: {sitemap_path.stat().st_size / 1e6:.1f} MB")
            print(f"{'database':<10} {'urls':>9} {'sitemap s':>9}  app report")
            for kind in kinds:
                schema = f"bench_import_sitemap_{os.getpid()}"
                if kind == "sqlite":
                    (tmp_path / "sitemap").mkdir()
                    fresh_site_database(tmp_path / "sitemap" / "bench.db")
                    url = f"sqlite:///{tmp_path / 'sitemap' / 'bench.db'}"
                else:
                    url = postgresql_site_database(args.postgresql, schema)
                try:
                    if kind == "postgresql":
                        analyze(url, args.other_sites)
                    seconds, summary = run_sitemap(url, sitemap_path,
                                                   tmp_path / f"instance-sitemap-{kind}",
                                                   args.progress)
                finally:
                    if kind == "postgresql":
                        drop_schema(args.postgresql, schema)
                print(f"{kind:<10} {args.urls:>9} {seconds:>9.2f}  {summary}", flush=True)
        if args.format == "sitemap":
            return
        print(f"{'database':<10} {'urls':>9} {'app s':>7} {'floor s':>7} {'ratio':>6}  app report")
        for kind in kinds:
            schemas = [f"bench_import_{name}_{os.getpid()}" for name in ("floor", "app")]
            if kind == "sqlite":
                urls = []
                for name in ("floor", "app"):
                    (tmp_path / name).mkdir()
                    fresh_site_database(tmp_path / name / "bench.db")
                    urls.append(f"sqlite:///{tmp_path / name / 'bench.db'}")
            else:
                urls = [postgresql_site_database(args.postgresql, schema) for schema in schemas]
            try:
                floor = run_floor(urls[0], csv_path)
                app, summary = run_app(urls[1], csv_path, tmp_path / f"instance-{kind}")
            finally:
                if kind == "postgresql":
                    for schema in schemas:
                        drop_schema(args.postgresql, schema)
            print(f"{kind:<10} {args.urls:>9} {app:>7.2f} {floor:>7.2f} {app / floor:>6.2f}  "
                  f"{summary}", flush=True)


if __name__ == "__main__":
    main()
