"""Time a CSV import of N URLs (validation included) against a bare floor.

    python bench/import.py --urls 1000000

Writes a CSV (loc,lastmod,changefreq,priority) of N URLs, some with non-ASCII characters the
import must percent-encode, `&`, quotes and W3C dates in several forms. Then, each into its own
fresh migrated SQLite database: (1) the app's `import_urls` (parse, validate and normalise every
field, upsert by loc, commit) and (2) a floor: the csv module reading the file and sqlite3
`executemany` inserting the raw rows into the same table. Prints seconds and the ratio.
"""

from __future__ import annotations

import argparse
import csv
import sqlite3
import tempfile
import time
from pathlib import Path

from common import BASE, fresh_site_database


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


def run_app(db: Path, csv_path: Path) -> tuple[float, str]:
    from webapp import create_app
    from webapp.db import session_scope
    from webapp.importing import import_urls
    from webapp.sites import find_site

    app = create_app({"DATABASE_URL": f"sqlite:///{db}", "SECRET_KEY": "bench",
                      "INSTANCE_PATH": str(db.parent / "instance")})
    started = time.perf_counter()
    with session_scope(app) as session, open(csv_path, encoding="utf-8", newline="") as stream:
        report = import_urls(session, find_site(session, "shop"), stream)
    seconds = time.perf_counter() - started
    app.extensions["db_engine"].dispose()
    return seconds, report.summary()


def run_floor(db: Path, csv_path: Path) -> float:
    started = time.perf_counter()
    con = sqlite3.connect(db)
    with open(csv_path, encoding="utf-8", newline="") as handle:
        reader = csv.reader(handle)
        next(reader)
        con.executemany(
            "INSERT INTO urls (site_id, loc, lastmod, changefreq, priority, created_at, updated_at)"
            " VALUES (1, ?, ?, ?, ?, '2026-01-01', '2026-01-01')", reader)
    con.commit()
    con.close()
    return time.perf_counter() - started


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--urls", type=int, default=100_000)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="bench-import-") as tmp:
        tmp_path = Path(tmp)
        csv_path = tmp_path / "urls.csv"
        write_csv(csv_path, args.urls)
        (tmp_path / "floor").mkdir()
        (tmp_path / "app").mkdir()
        fresh_site_database(tmp_path / "floor" / "bench.db")
        fresh_site_database(tmp_path / "app" / "bench.db")
        floor = run_floor(tmp_path / "floor" / "bench.db", csv_path)
        app, summary = run_app(tmp_path / "app" / "bench.db", csv_path)
    print(f"{'urls':>10} {'app s':>8} {'floor s':>8} {'ratio':>6}  app report")
    print(f"{args.urls:>10} {app:>8.2f} {floor:>8.2f} {app / floor:>6.2f}  {summary}")


if __name__ == "__main__":
    main()
