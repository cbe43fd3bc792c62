"""Time a full sitemap generation against a floor, and measure peak memory.

    python bench/generate.py --urls 100000 1000000 [--postgresql postgresql://...]

For each N: build a synthetic site of N URLs (some with `&`, quotes, percent-encoded non-ASCII)
in a fresh SQLite database and, with --postgresql URL (or TEST_POSTGRESQL_URL), in a fresh
schema of that PostgreSQL database; then, each in a fresh child process, (1) the app's
generation (`jobs.regenerate`: XML files, gzip twins, index, the bodies stored in the database
and the set published there) and (2) a floor: a
bare loop that reads the same rows with the driver (sqlite3, or psycopg with a server-side
cursor) and writes the same XML files with plain string formatting and gzip level 6 twins. Both outputs are compared byte for byte, so the floor does the
same work. Prints seconds, ratio, and peak RSS of each child.

    python bench/generate.py --extensions --urls 1000000

With --extensions: the same site generated twice, each in a fresh database and child process,
without extensions and with them (add_extensions: 10% of the URLs carry a video, 1% are news
articles of a news publisher); prints both
times and their ratio (the target is 1.5 at most).

    python bench/generate.py --sections --urls 100000

With --sections: the same site's first run without sections and with each definition of
SECTIONS (path prefixes only; globs and `re:` patterns), each in a fresh database and child
process; prints the time every URL's section takes to assign (per URL too) and the whole run's,
and the CPU ratio to the run without sections.
"""

from __future__ import annotations

import argparse
import gzip
import json
import os
import sqlite3
import subprocess
import sys
import tempfile
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path

from common import BASE, copy_urls, drop_schema, fresh_site_database, postgresql_site_database

CHANGEFREQS = ("daily", "weekly", "monthly", None)
PRIORITIES = (0.8, 0.5, None, 0.3)
ENCODED = "%E3%82%B5%E3%82%A4%E3%83%88%E3%83%9E%E3%83%83%E3%83%97"  # サイトマップ in UTF-8


def synthetic_loc(n: int) -> str:
    if n % 10 == 0:
        return f"{BASE}search?q=item-{n}&sort=price&page=2"
    if n % 7 == 0:
        return f"{BASE}products/{n}/o'brien-{n}"
    if n % 5 == 0:
        return f"{BASE}{ENCODED}/{n}"
    return f"{BASE}products/category-{n % 97}/item-{n}.html"


def synthetic_lastmod(n: int) -> str | None:
    if n % 3 == 0:
        return None
    day = 1 + n % 28
    return f"2026-03-{day:02d}" if n % 2 else f"2026-03-{day:02d}T10:{n % 60:02d}:00+00:00"


def build_database(path: Path, urls: int) -> None:
    """A migrated database with one site and `urls` URLs, inserted directly for speed."""
    now = fresh_site_database(path)
    with sqlite3.connect(path) as con:
        con.executemany(
            "INSERT INTO urls (site_id, loc, lastmod, changefreq, priority, created_at, updated_at)"
            " VALUES (1, ?, ?, ?, ?, ?, ?)",
            ((synthetic_loc(n), synthetic_lastmod(n), CHANGEFREQS[n % 4], PRIORITIES[n % 4], now, now)
             for n in range(urls)))


def add_extensions(db: str, urls: int) -> None:
    """The extension rows of the --extensions run, each kind loaded by a function of its own."""
    add_videos(db, urls)
    add_news(db, urls)


def add_videos(db: str, urls: int) -> None:
    """A video on every tenth URL (ids 1, 11, 21, ...), with the fields a video site fills in,
    every fourth with tags and a restriction as well."""
    from sqlalchemy import create_engine, insert

    from webapp.models import UrlVideo

    def video(n: int) -> dict:
        url_id = n * 10 + 1
        tagged = n % 4 == 0
        return {"url_id": url_id, "position": 0, "thumbnail_loc": f"{BASE}thumbs/{n}.jpg",
                "title": f"How to choose item {n} & its size",
                "description": f"A {n % 9 + 1}-minute walk through item {n}: what it is made "
                               "of, how it wears, and how it compares with the others.",
                "content_loc": f"https://cdn.example.net/videos/{n}.mp4",
                "player_loc": f"{BASE}player?video={n}" if n % 2 else None,
                "duration": 60 + n % 3600, "rating": (n % 50) / 10,
                "view_count": n * 37 % 100_000, "publication_date": "2026-03-01",
                "family_friendly": True, "live": False,
                "restriction_relationship": "allow" if tagged else None,
                "restriction_countries": "JP US GB" if tagged else None,
                "tags": ["how-to", f"category-{n % 97}"] if tagged else []}

    engine = create_engine(db)
    with engine.begin() as connection:
        count = -(-urls // 10)
        for start in range(0, count, 10_000):
            connection.execute(insert(UrlVideo), [video(n) for n in
                                                  range(start, min(start + 10_000, count))])
    engine.dispose()
def add_news(db: str, urls: int, now: datetime | None = None, rows: bool = True,
             site_is_news: bool = True) -> int:
    """The `--extensions` mode's news: 1% of the URLs (every 100th) are Google News articles
    published within the last two days (`rows`), and the site is a news publisher
    (`site_is_news`); how many articles. The next run writes every file again."""
    from sqlalchemy import create_engine, insert, select, update

    from webapp.models import Generation, Site, Url, UrlNews

    now = now or datetime.now(UTC)
    engine = create_engine(db)
    with engine.begin() as con:
        if site_is_news:
            con.execute(update(Site).where(Site.id == 1).values(news_name="Bench Times",
                                                                news_language="en"))
        ids = con.execute(select(Url.id).where(Url.site_id == 1).order_by(Url.id)).scalars().all()
        articles = [{"url_id": url_id, "title": f"Story {n} & more",
                     "publication_date": (now - timedelta(minutes=n % 2_800)).strftime(
                         "%Y-%m-%dT%H:%M:%S+00:00")}
                    for n, url_id in enumerate(ids[::100])]
        for start in range(0, len(articles) if rows else 0, 5_000):
            con.execute(insert(UrlNews), articles[start:start + 5_000])
        # The run timed next writes every file, as the run without extensions did.
        con.execute(update(Generation).values(layout=None))
    engine.dispose()
    return len(articles)


def run_app(db: str, out: Path) -> dict:
    from webapp import create_app, jobs
    from webapp.models import Site

    app = create_app({"DATABASE_URL": db, "SECRET_KEY": "bench",
                      "INSTANCE_PATH": str(out), "SITEMAPS_DIR": str(out / "sitemaps")})
    started, cpu = time.perf_counter(), time.process_time()
    generation = jobs.regenerate(1, app)
    seconds, cpu = time.perf_counter() - started, time.process_time() - cpu
    assert generation.status == "succeeded", generation.error
    with app.extensions["db_sessionmaker"]() as session:
        key = session.get(Site, 1).storage_key
    # The bytes compared with the floor's are those another node, with an empty cache, gets
    # from the database: an export through a second app (not timed).
    node = create_app({"DATABASE_URL": db, "SECRET_KEY": "bench", "INSTANCE_PATH": str(out),
                       "SITEMAPS_DIR": str(out / "node-b")})
    folder = out / "published"
    node.extensions["sitemap_store"].export(key, folder)
    return {"seconds": seconds, "cpu": cpu, "folder": str(folder),
            "files": generation.file_count}


def _escape(text: str) -> str:
    return (text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")
            .replace('"', "&quot;").replace("'", "&apos;"))


def _priority(value: float) -> str:
    return f"{value:.1f}" if round(value, 1) == value else f"{value:.3f}".rstrip("0")


def _rows(db: str):
    """The site's rows straight from the driver: sqlite3, or psycopg with a server-side
    cursor (as the app streams them)."""
    query = ("SELECT id, loc, lastmod, changefreq, priority FROM urls"
             " WHERE site_id = 1 AND deleted_at IS NULL ORDER BY id")
    if db.startswith("sqlite:///"):
        con = sqlite3.connect(db.removeprefix("sqlite:///"))
        yield from con.execute(query)
        con.close()
        return
    import psycopg
    from sqlalchemy.engine import make_url

    url = make_url(db)
    with psycopg.connect(host=url.host, port=url.port or 5432, user=url.username,
                         password=url.password, dbname=url.database,
                         options=url.query.get("options", "")) as con:
        with con.cursor(name="floor") as cursor:
            cursor.itersize = 10_000
            cursor.execute(query)
            yield from cursor


def run_floor(db: str, out: Path) -> dict:
    """The bare loop: driver rows, string formatting, plain file and gzip twin, one thread."""
    started = time.perf_counter()
    header = ('<?xml version="1.0" encoding="UTF-8"?>\n'
              '<?xml-stylesheet type="text/xsl" href="sitemap.xsl"?>\n'
              '<urlset xmlns="http://www.sitemaps.org/schemas/sitemap/0.9">\n').encode()
    rows = _rows(db)
    out.mkdir(parents=True, exist_ok=True)
    files = 0
    plain = packed = raw = None
    parts: list[str] = []

    def close():
        chunk = ("".join(parts) + "</urlset>\n").encode()
        plain.write(chunk)
        packed.write(chunk)
        plain.close()
        packed.close()
        raw.close()
        parts.clear()

    count = 0
    for _id, loc, lastmod, changefreq, priority in rows:
        if plain is None or count == 50_000:
            if plain is not None:
                close()
            files += 1
            name = out / f"sitemap-{files}.xml"
            plain, raw = open(name, "wb"), open(f"{name}.gz", "wb")
            packed = gzip.GzipFile(filename="", mode="wb", compresslevel=6, mtime=0, fileobj=raw)
            plain.write(header)
            packed.write(header)
            count = 0
        line = f"<url><loc>{_escape(loc)}</loc>"
        if lastmod:
            line += f"<lastmod>{lastmod}</lastmod>"
        if changefreq:
            line += f"<changefreq>{changefreq}</changefreq>"
        if priority is not None:
            line += f"<priority>{_priority(priority)}</priority>"
        parts.append(line + "</url>\n")
        count += 1
        if len(parts) == 5000:
            chunk = "".join(parts).encode()
            plain.write(chunk)
            packed.write(chunk)
            parts.clear()
    close()
    return {"seconds": time.perf_counter() - started, "folder": str(out), "files": files}


# Section definitions for --sections, over synthetic_loc's paths: search pages, category
# items, items named after a person, and percent-encoded Japanese paths (matched decoded).
SECTIONS = {
    "prefixes": "search /search\ncategories /products/category-\nnames /products/\n"
                "japanese /サイトマップ/",
    "patterns": "search re:^/search\ncategories /products/category-*/item-*.html\n"
                "names /products/*/o'brien-*\njapanese /サイトマップ/*",
}


def run_sections(db: str, out: Path) -> dict:
    """run_app, with the sections assigned first and timed on their own."""
    from webapp import create_app
    from webapp.models import Site
    from webapp.sitemaps import assign_sections

    app = create_app({"DATABASE_URL": db, "SECRET_KEY": "bench",
                      "INSTANCE_PATH": str(out), "SITEMAPS_DIR": str(out / "sitemaps")})
    started, cpu = time.perf_counter(), time.process_time()
    with app.extensions["db_sessionmaker"]() as session:
        assign_sections(session, session.get(Site, 1))
        session.commit()
    assign = {"assign_seconds": time.perf_counter() - started,
              "assign_cpu": time.process_time() - cpu}
    result = run_app(db, out)
    result["seconds"] += assign["assign_seconds"]
    result["cpu"] += assign["assign_cpu"]
    return result | assign


def child(kind: str, db: str, out: str) -> None:
    result = {"app": run_app, "sections": run_sections, "floor": run_floor}[kind](db, Path(out))
    result["peak_mb"] = peak_rss_mb()
    print(json.dumps(result))


def peak_rss_mb() -> float:
    """This process's peak resident memory. ru_maxrss would also count the parent's peak,
    which a child keeps across fork and exec; VmHWM belongs to this address space alone."""
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) / 1024
    raise RuntimeError("no VmHWM in /proc/self/status")


def measure(kind: str, db: str, out: Path) -> dict:
    done = subprocess.run([sys.executable, __file__, "--child", kind, str(db), str(out)],
                          capture_output=True, text=True)
    if done.returncode:
        sys.exit(f"the {kind} run failed:\n{done.stderr}")
    return json.loads(done.stdout.strip().splitlines()[-1])


def same_output(app_folder: Path, floor_folder: Path) -> bool:
    """The floor's urlset files equal the app's (as exported by a node with an empty cache),
    byte for byte (the app also writes an index and a stylesheet, which the floor does not)."""
    names = sorted(p.name for p in floor_folder.iterdir())
    if len(names) == 2:  # one file: the app names it after the sitemap URL
        renamed = {"sitemap-1.xml": "sitemap.xml", "sitemap-1.xml.gz": "sitemap.xml.gz"}
        return all((app_folder / renamed[n]).read_bytes() == (floor_folder / n).read_bytes()
                   for n in names)
    return all((app_folder / n).read_bytes() == (floor_folder / n).read_bytes() for n in names)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--urls", type=int, nargs="+", default=[100_000])
    parser.add_argument("--postgresql", default=os.environ.get("TEST_POSTGRESQL_URL"),
                        help="also measure on this PostgreSQL database, in a schema of its own")
    parser.add_argument("--extensions", action="store_true",
                        help="compare a run with extensions (10%% of URLs with a video, 1%% news "
                             "articles of a news publisher) against one without")
    parser.add_argument("--sections", action="store_true",
                        help="compare a site's first run with sections (prefixes; globs and "
                             "patterns) against one without")
    parser.add_argument("--child", nargs=3, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        child(*args.child)
        return
    if args.sections:
        compare_sections(args.urls, args.postgresql)
        return
    if args.extensions:
        compare_extensions(args.urls, args.postgresql)
        return
    print(f"{'database':<10} {'urls':>9} {'app s':>7} {'floor s':>7} {'ratio':>6} {'app MB':>7} "
          f"{'floor MB':>8} {'files':>5}  same bytes")
    peaks: dict[tuple[str, int], float] = {}
    for kind in ["sqlite"] + (["postgresql"] if args.postgresql else []):
        for urls in args.urls:
            with tempfile.TemporaryDirectory(prefix="bench-generate-") as tmp:
                tmp_path = Path(tmp)
                schema = f"bench_generate_{os.getpid()}"
                if kind == "sqlite":
                    build_database(tmp_path / "bench.db", urls)
                    db = f"sqlite:///{tmp_path / 'bench.db'}"
                else:
                    db = postgresql_site_database(args.postgresql, schema)
                    copy_urls(db, ((synthetic_loc(n), synthetic_lastmod(n), CHANGEFREQS[n % 4],
                                    PRIORITIES[n % 4]) for n in range(urls)))
                try:
                    floor = measure("floor", db, tmp_path / "floor")
                    app = measure("app", db, tmp_path / "app")
                finally:
                    if kind == "postgresql":
                        drop_schema(args.postgresql, schema)
                same = same_output(Path(app["folder"]), Path(floor["folder"]))
            peaks[kind, urls] = app["peak_mb"]
            print(f"{kind:<10} {urls:>9} {app['seconds']:>7.2f} {floor['seconds']:>7.2f} "
                  f"{app['seconds'] / floor['seconds']:>6.2f} {app['peak_mb']:>7.1f} "
                  f"{floor['peak_mb']:>8.1f} {app['files']:>5}  {same}", flush=True)
        sizes = sorted(urls for (k, urls) in peaks if k == kind)
        if len(sizes) > 1:
            growth = peaks[kind, sizes[-1]] / peaks[kind, sizes[0]] - 1
            print(f"{kind}: peak memory at {sizes[-1]} URLs is {growth:+.1%} against "
                  f"{sizes[0]} URLs")
    print(f"(python {sys.version.split()[0]}, sqlite {sqlite3.sqlite_version}, "
          f"{os.cpu_count()} cores)")


def site_database(kind: str, urls: int, folder: Path, server_url: str | None,
                  schema: str) -> str:
    """A fresh database (SQLite in `folder`, or a PostgreSQL schema) with the synthetic site."""
    if kind == "sqlite":
        build_database(folder / "bench.db", urls)
        return f"sqlite:///{folder / 'bench.db'}"
    db = postgresql_site_database(server_url, schema)
    copy_urls(db, ((synthetic_loc(n), synthetic_lastmod(n), CHANGEFREQS[n % 4],
                    PRIORITIES[n % 4]) for n in range(urls)))
    return db


def compare_extensions(sizes: list[int], server_url: str | None) -> None:
    """The app's run without extensions and with them, each on a fresh database."""
    # CPU seconds (every thread of the child, the gzip one included) say more than wall time
    # when other work shares the cores.
    print(f"{'database':<10} {'urls':>9} {'plain s':>7} {'ext s':>7} {'ratio':>6} "
          f"{'plain cpu':>9} {'ext cpu':>7} {'ratio':>6} {'plain MB':>8} {'ext MB':>7} "
          f"{'files':>5} {'plain bytes':>11} {'ext bytes':>11}")
    for kind in ["sqlite"] + (["postgresql"] if server_url else []):
        for urls in sizes:
            runs = {}
            for extended in (False, True):
                with tempfile.TemporaryDirectory(prefix="bench-generate-") as tmp:
                    tmp_path = Path(tmp)
                    schema = f"bench_extensions_{os.getpid()}"
                    db = site_database(kind, urls, tmp_path, server_url, schema)
                    try:
                        if extended:
                            add_extensions(db, urls)
                        runs[extended] = measure("app", db, tmp_path / "app")
                        runs[extended]["bytes"] = sum(
                            p.stat().st_size for p in Path(runs[extended]["folder"]).iterdir()
                            if p.suffix == ".xml")
                    finally:
                        if kind == "postgresql":
                            drop_schema(server_url, schema)
            plain, ext = runs[False], runs[True]
            print(f"{kind:<10} {urls:>9} {plain['seconds']:>7.2f} {ext['seconds']:>7.2f} "
                  f"{ext['seconds'] / plain['seconds']:>6.2f} {plain['cpu']:>9.2f} "
                  f"{ext['cpu']:>7.2f} {ext['cpu'] / plain['cpu']:>6.2f} "
                  f"{plain['peak_mb']:>8.1f} {ext['peak_mb']:>7.1f} {ext['files']:>5} "
                  f"{plain['bytes']:>11} {ext['bytes']:>11}", flush=True)
    print(f"(python {sys.version.split()[0]}, sqlite {sqlite3.sqlite_version}, "
          f"{os.cpu_count()} cores, load average {os.getloadavg()[0]:.2f})")


def compare_sections(sizes: list[int], server_url: str | None) -> None:
    """The app's first run of the site without sections and with each of SECTIONS."""
    from sqlalchemy import create_engine, update

    from webapp.models import Site
    from webapp.sitemaps.sections import parse_sections

    print(f"{'database':<10} {'urls':>9} {'sections':<9} {'assign s':>8} {'assign cpu':>10} "
          f"{'us/url':>6} {'run s':>6} {'run cpu':>7} {'cpu ratio':>9} {'files':>5}")
    for kind in ["sqlite"] + (["postgresql"] if server_url else []):
        for urls in sizes:
            plain_cpu = None
            for name in (None, *SECTIONS):
                with tempfile.TemporaryDirectory(prefix="bench-generate-") as tmp:
                    tmp_path = Path(tmp)
                    schema = f"bench_sections_{os.getpid()}"
                    db = site_database(kind, urls, tmp_path, server_url, schema)
                    try:
                        if name:
                            engine = create_engine(db)
                            with engine.begin() as con:
                                con.execute(update(Site).where(Site.id == 1).values(
                                    sections=parse_sections(SECTIONS[name])))
                            engine.dispose()
                        run = measure("sections", db, tmp_path / "app")
                    finally:
                        if kind == "postgresql":
                            drop_schema(server_url, schema)
                plain_cpu = plain_cpu or run["cpu"]
                print(f"{kind:<10} {urls:>9} {name or '-':<9} {run['assign_seconds']:>8.2f} "
                      f"{run['assign_cpu']:>10.2f} {run['assign_cpu'] / urls * 1e6:>6.1f} "
                      f"{run['seconds']:>6.2f} {run['cpu']:>7.2f} "
                      f"{run['cpu'] / plain_cpu:>9.2f} {run['files']:>5}", flush=True)
    print(f"(python {sys.version.split()[0]}, sqlite {sqlite3.sqlite_version}, "
          f"{os.cpu_count()} cores, load average {os.getloadavg()[0]:.2f})")


if __name__ == "__main__":
    main()
