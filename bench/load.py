"""Crawlers at full speed while generations publish and the dashboard is used.

    python bench/load.py [--urls 200000] [--seconds 20] [--crawlers 8] [--max-requests 200000]
                         [--per-file 10000] [--sample 4] [--postgresql postgresql://...]

Builds a site of N synthetic URLs (bench/generate.py's) split into files of --per-file URLs in a
fresh database (SQLite, or a schema of its own in the PostgreSQL database given with
--postgresql, dropped at the end), generates it once, and serves it with gunicorn (2 gthread
workers, 4 threads each, as in the README's deployment) on 127.0.0.1. Then, until --seconds
have passed or --max-requests crawler requests were made, all at once:

- crawler threads (--crawlers, one keep-alive requests.Session each) loop: GET the index
  (gzip-encoded or plain, sometimes conditional), GET --sample of the files it lists (all with
  --sample 0) as plain, gzip-encoded or `.gz` twin, sometimes conditional, then revalidate the
  index (If-None-Match). Each body must hash to its ETag, and each file must come from the
  generation of the index fetched before it, or, when the revalidation shows that a generation
  was published meanwhile, from a generation between the two indexes. The truth is each
  generation's file list in the database (read as the generations appear, before
  pruning removes them). A file from any other generation is a mixed set.
- a generator: gives a few URLs (--changes) a new lastmod with the app's save_url and runs
  jobs.regenerate, in a loop, in a child process of its own (--generator cli runs
  `flask --app webapp sitemaps generate shop --no-notify` instead, which spends 2 s starting).
- a dashboard user, signed in through the sign-in form (CSRF token from the page), fetching
  the sites page, the site page, URL list pages and the generation history.

Prints request rates, latency percentiles, statuses, generations published, mixed sets and
errors; exits 1 when there is any error or mixed set, when two published generations have the
same index bytes but a different file (a crawler revalidating the index would miss the
change), or when nothing was published during the load (the run would have proved nothing).
Every request goes to 127.0.0.1 only; gunicorn is stopped and the PostgreSQL schema dropped
even on Ctrl-C.
"""

from __future__ import annotations

import argparse
import gzip
import hashlib
import json
import os
import random
import re
import signal
import socket
import sqlite3
import subprocess
import sys
import tempfile
import threading
import time
from collections import Counter, defaultdict
from datetime import UTC, datetime, timedelta
from pathlib import Path
from urllib.parse import urlencode

import requests
from common import (
    ROOT,
    copy_urls,
    drop_schema,
    fresh_site_database,
    postgresql_site_database,
)
from generate import CHANGEFREQS, PRIORITIES, synthetic_lastmod, synthetic_loc
from werkzeug.http import parse_date

SLUG = "shop"
INDEX = "sitemap.xml"
ENTRY = re.compile(rb"<sitemap><loc>([^<]*)</loc><lastmod>([^<]*)</lastmod></sitemap>")
EMAIL, PASSWORD = "load@example.com", "load bench password"
MAX_EXAMPLES = 8
ENTRIES: dict[str, list] = {}  # index sha256 -> its entries (an index's bytes never change)


def etag_for(sha: str, variant: str) -> str:
    """The ETag the app sends: the plain file's digest, marked when the bytes are gzip."""
    return f'"{sha[:32]}{"" if variant == "plain" else "-gz"}"'


def rows(urls: int):
    for n in range(urls):
        yield synthetic_loc(n), synthetic_lastmod(n), CHANGEFREQS[n % 4], PRIORITIES[n % 4]


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def percentile(sorted_values: list[float], fraction: float) -> float:
    if not sorted_values:
        return float("nan")
    return sorted_values[min(len(sorted_values) - 1, int(fraction * len(sorted_values)))]


# ---------------------------------------------------------------------------------------------
# What each generation published, from its manifest on disk


class Truth:
    """{generation: {file name: sha256}} for every generation whose file list was seen in the
    database, read as generations appear (pruning removes old lists later)."""

    def __init__(self, store, key: str):
        self.store, self.key = store, key
        self.files: dict[int, dict[str, str]] = {}
        self.by_index: dict[str, set[int]] = defaultdict(set)
        self._lock = threading.Lock()

    def refresh(self) -> None:
        with self._lock:
            for generation in self.store.kept_generations(self.key) - set(self.files):
                kept = self.store.generation_set(self.key, generation)
                if kept is None:
                    continue  # pruned meanwhile
                self.files[generation] = {n: f.sha256 for n, f in kept.files.items()}
                if INDEX in self.files[generation]:
                    self.by_index[self.files[generation][INDEX]].add(generation)

    def add(self, generation: int, files: dict[str, str]) -> None:
        with self._lock:
            if generation not in self.files:
                self.files[generation] = files
                if INDEX in files:
                    self.by_index[files[INDEX]].add(generation)

    def index_generations(self, sha: str) -> set[int]:
        if sha not in self.by_index:
            self.refresh()
        return set(self.by_index.get(sha, ()))

    def generations_of(self, name: str, digest: str) -> set[int]:
        """Generations whose `name` has this digest (a full sha256, or an ETag's 32 chars)."""
        return {g for g, files in list(self.files.items())
                if files.get(name, "").startswith(digest)}

    def silent_changes(self) -> list[str]:
        """Pairs of generations with the same index bytes but a urlset file that differs:
        a crawler could not tell from the index that the file changed."""
        found = []
        for sha, generations in self.by_index.items():
            ordered = sorted(generations)
            for a, b in zip(ordered, ordered[1:]):
                names = {n for n in self.files[a] if n != INDEX} | {n for n in self.files[b] if n != INDEX}
                changed = sorted(n for n in names if self.files[a].get(n) != self.files[b].get(n))
                if changed:
                    found.append(f"g{a}/g{b}: same index, {', '.join(changed)} differ")
        return found


# ---------------------------------------------------------------------------------------------
# Shared counters


class Stats:
    def __init__(self, max_requests: int):
        self.lock = threading.Lock()
        self.max_requests = max_requests
        self.requests = 0
        self.latencies: list[float] = []
        self.statuses: Counter = Counter()
        self.kinds: Counter = Counter()
        self.errors: Counter = Counter()
        self.examples: list[str] = []
        self.mixed: Counter = Counter()
        self.files_same = self.files_newer = self.passes = self.overlapped_passes = 0
        self.index_generations_seen: set[int] = set()
        self.bytes = 0
        self.dashboard_latencies: list[float] = []
        self.dashboard_statuses: Counter = Counter()
        self.dashboard_pages: dict[str, list[float]] = {}
        self.generator: list[dict] = []

    def take(self) -> bool:
        """Reserve one crawler request within --max-requests."""
        with self.lock:
            if self.requests >= self.max_requests:
                return False
            self.requests += 1
            return True

    def error(self, kind: str, detail: str) -> None:
        with self.lock:
            self.errors[kind] += 1
            if len(self.examples) < MAX_EXAMPLES:
                self.examples.append(f"{kind}: {detail}")

    def mixed_set(self, kind: str, detail: str) -> None:
        with self.lock:
            self.mixed[kind] += 1
            if len(self.examples) < MAX_EXAMPLES:
                self.examples.append(f"mixed set ({kind}): {detail}")


class Stop(Exception):
    """The run is over (time or request budget)."""


# ---------------------------------------------------------------------------------------------
# Crawlers


def dated_as_listed(lastmod: str, last_modified: str | None, date: str | None) -> bool:
    """Last-Modified is the lastmod the index lists, or, while that is still ahead of the
    clock (runs within one second are dated a second apart), the time of the response: never
    later than Date (RFC 9110 8.8.2.1), which the server may take a second later."""
    listed, sent = datetime.fromisoformat(lastmod), parse_date(last_modified)
    if sent is None or sent == listed:
        return sent is not None
    answered = parse_date(date)
    return answered is not None and sent < listed and \
        answered - timedelta(seconds=1) <= sent <= answered


class Crawler:
    def __init__(self, number: int, base: str, stats: Stats, truth: Truth, stop: threading.Event,
                 sample: int):
        self.base, self.stats, self.truth, self.stop, self.sample = base, stats, truth, stop, sample
        self.random = random.Random(number)
        self.session = requests.Session()
        self.etags: dict[tuple[str, str], tuple[str, str]] = {}  # (path, variant) -> (etag, sha)
        self.latencies: list[float] = []
        self.statuses: Counter = Counter()
        self.kinds: Counter = Counter()
        self.bytes = 0

    def get(self, path: str, variant: str,
            validator: tuple[str, str] | None = None) -> tuple[int, str, dict]:
        """One request: (status, sha256 of the plain content, response headers); status 0 when
        the request itself failed. The body is left in self.body.

        variant: "plain" (identity), "gzip" (Accept-Encoding: gzip), "twin" (the .gz file);
        validator: (ETag, sha256) to send as If-None-Match."""
        if self.stop.is_set() or not self.stats.take():
            raise Stop
        url_path = path + ".gz" if variant == "twin" else path
        headers = {"Accept-Encoding": "gzip" if variant == "gzip" else "identity"}
        if validator:
            headers["If-None-Match"] = validator[0]
        started = time.perf_counter()
        try:
            response = self.session.get(self.base + url_path, headers=headers, timeout=60,
                                        allow_redirects=False)
            body = response.content  # downloaded (and gzip-decoded for "gzip") here
        except requests.RequestException as exc:
            self.statuses["exception"] += 1
            self.stats.error("request failed", f"{url_path}: {exc!r}")
            return 0, "", {}
        self.latencies.append(time.perf_counter() - started)
        self.statuses[response.status_code] += 1
        self.kinds[f"{variant}{' 304' if response.status_code == 304 else ''}"] += 1
        etag = response.headers.get("ETag")
        if response.status_code == 304:
            if not validator or etag != validator[0]:
                self.stats.error("bad 304", f"{url_path}: sent {validator}, got {etag}")
                return 304, "", response.headers
            return 304, validator[1], response.headers
        if response.status_code != 200:
            self.stats.error(f"status {response.status_code}",
                             f"GET {url_path} ({variant}): {body[:120]!r}")
            return response.status_code, "", response.headers
        self.bytes += int(response.headers.get("Content-Length", len(body)))
        encoding = response.headers.get("Content-Encoding")
        if (variant == "gzip") != (encoding == "gzip"):
            self.stats.error("content-encoding", f"{url_path} ({variant}): {encoding!r}")
        if variant == "twin":
            if response.headers.get("Content-Type") != "application/gzip":
                self.stats.error("content-type", f"{url_path}: {response.headers.get('Content-Type')}")
            try:
                body = gzip.decompress(body)
            except (OSError, EOFError) as exc:
                self.stats.error("broken gzip", f"{url_path}: {exc}")
                return 200, "", response.headers
        sha = hashlib.sha256(body).hexdigest()
        if etag != etag_for(sha, variant):
            self.stats.error("etag/body", f"{url_path} ({variant}): ETag {etag}, body "
                                          f"{etag_for(sha, variant)}")
        self.etags[(path, variant)] = (etag, sha)
        self.body = body
        return 200, sha, response.headers

    def run(self) -> None:
        try:
            while not self.stop.is_set():
                self.one_pass()
        except Stop:
            pass
        except Exception as exc:  # a bug here must not look like a clean run
            self.stats.error("crawler crashed", repr(exc))
        finally:
            self.session.close()
            with self.stats.lock:
                self.stats.latencies.extend(self.latencies)
                self.stats.statuses.update(self.statuses)
                self.stats.kinds.update(self.kinds)
                self.stats.bytes += self.bytes

    def index(self, variant: str, validator: tuple[str, str] | None) -> tuple[str, list | None]:
        """(sha256 of the index, its [(file name, lastmod)] entries, or None if it failed)."""
        status, sha, _ = self.get(f"/sitemaps/{SLUG}/{INDEX}", variant, validator)
        if status == 304 and sha in ENTRIES:
            return sha, ENTRIES[sha]
        if status != 200 or not sha:
            return "", None
        body = self.body
        entries = [(loc.rsplit(b"/", 1)[1].decode(), lastmod.decode())
                   for loc, lastmod in ENTRY.findall(body)]
        if b"<sitemapindex" not in body[:300] or not entries:
            self.stats.error("not an index", f"{body[:200]!r}")
            return "", None
        ENTRIES[sha] = entries
        return sha, entries

    def one_pass(self) -> None:
        variant = self.random.choice(("plain", "gzip"))
        known = self.etags.get((f"/sitemaps/{SLUG}/{INDEX}", variant))
        before_sha, entries = self.index(variant, known if self.random.random() < 0.3 else None)
        if entries is None:
            return
        before = self.truth.index_generations(before_sha)
        if not before:
            self.stats.mixed_set("unknown index", f"index {before_sha[:12]} is in no manifest")
            return
        chosen = entries if self.sample == 0 else \
            self.random.sample(entries, min(self.sample, len(entries)))
        fetched = []
        for name, lastmod in chosen:
            variant = self.random.choice(("plain", "gzip", "gzip", "twin"))
            path = f"/sitemaps/{SLUG}/{name}"
            known = self.etags.get((path, variant))
            status, sha, headers = self.get(path, variant,
                                            known if self.random.random() < 0.3 else None)
            if status in (200, 304) and sha:
                fetched.append((name, lastmod, sha, headers.get("Last-Modified"),
                                headers.get("Date")))
        # Revalidate the index fetched first: a 304 proves that no other index was published
        # since (an index gives each file's lastmod, so a changed file changes the index).
        after_sha, after_entries = self.index("gzip", (etag_for(before_sha, "gzip"), before_sha))
        if after_entries is None:
            return
        after = self.truth.index_generations(after_sha)
        if not after:
            self.stats.mixed_set("unknown index", f"index {after_sha[:12]} is in no manifest")
            return
        low, high = min(before), max(after)
        if high < low:
            self.stats.mixed_set("index went back", f"g{sorted(before)} then g{sorted(after)}")
            return
        self.check(fetched, before, low, high, before_sha != after_sha)
        with self.stats.lock:
            self.stats.index_generations_seen.update(before | after)

    def check(self, fetched: list, before: set[int], low: int, high: int, overlapped: bool) -> None:
        same = newer = 0
        for name, lastmod, sha, last_modified, date in fetched:
            generations = self.truth.generations_of(name, sha)
            if not generations:  # a generation whose report has not been read yet?
                self.truth.refresh()
                generations = self.truth.generations_of(name, sha)
            if generations & before:
                same += 1
                if not dated_as_listed(lastmod, last_modified, date):
                    self.stats.error("lastmod", f"{name}: index says {lastmod}, "
                                                f"Last-Modified {last_modified}, Date {date}")
            elif any(low <= g <= high for g in generations):
                newer += 1  # a generation was published between the two index requests
            elif any(g < low for g in generations):
                self.stats.mixed_set("file older than its index",
                                     f"{name} {sha[:12]} from g{sorted(generations)}, index g{sorted(before)}")
            elif generations:
                self.stats.mixed_set("file newer than the next index",
                                     f"{name} from g{sorted(generations)}, indexes g{low}..g{high}")
            else:
                self.stats.mixed_set("file in no manifest", f"{name} {sha[:12]}, index g{sorted(before)}")
        with self.stats.lock:
            self.stats.passes += 1
            self.stats.overlapped_passes += overlapped
            self.stats.files_same += same
            self.stats.files_newer += newer


# ---------------------------------------------------------------------------------------------
# The generator and the dashboard user


def change_urls(app, rng: random.Random, urls: int, changes: int, step: int) -> str:
    """Give `changes` random URLs a new lastmod through the app (save_url stamps the change);
    the site's storage key."""
    from webapp.models import Site
    from webapp.urls import save_url

    lastmod = (datetime(2026, 4, 1, tzinfo=UTC) + timedelta(minutes=step)).isoformat()
    with app.extensions["db_sessionmaker"]() as session:
        site = session.get(Site, 1)
        for n in rng.sample(range(urls), changes):
            save_url(session, site, synthetic_loc(n), {"lastmod": lastmod})
        session.commit()
        return site.storage_key


def generator_child(urls: int, changes: int) -> None:
    """--generator-child: change URLs and run jobs.regenerate in a loop, printing one JSON line
    per run (with the digests of the files it published), until stdin is closed."""
    from webapp import create_app, jobs

    app = create_app()  # DATABASE_URL, SITEMAPS_DIR, ... from the environment
    store = app.extensions["sitemap_store"]
    stop = threading.Event()
    threading.Thread(target=lambda: (sys.stdin.read(), stop.set()), daemon=True).start()
    rng, step = random.Random(7), 0
    while not stop.is_set():
        step += 1
        try:
            key = change_urls(app, rng, urls, changes, step)
            started = time.perf_counter()
            generation = jobs.regenerate(1, app)
            record = {"status": generation.status, "generation": generation.id,
                      "seconds": time.perf_counter() - started, "error": generation.error}
            kept = store.generation_set(key, generation.id)
            if kept is not None:
                record["files"] = {name: f.sha256 for name, f in kept.files.items()}
        except Exception as exc:
            record = {"status": "exception", "error": repr(exc), "seconds": 0}
        print(json.dumps(record), flush=True)
    app.extensions["db_engine"].dispose()


def generator(mode: str, app, env: dict, urls: int, changes: int, stats: Stats, truth: Truth,
              stop: threading.Event, running: dict) -> None:
    """Publish generations until `stop`: a child process running jobs.regenerate in a loop
    ("process"), or `flask sitemaps generate` once per change ("cli", 2 s of start-up each)."""

    def record(run: dict) -> None:
        with stats.lock:
            stats.generator.append(run)
        if run.get("files"):
            truth.add(run["generation"], run["files"])
        truth.refresh()  # before pruning removes this generation's folder
        if run["status"] not in ("succeeded", "unchanged"):
            stats.error("generation", f"{run['status']}: {str(run.get('error'))[-300:]}")

    if mode == "process":
        process = subprocess.Popen(
            [sys.executable, __file__, "--generator-child", "--urls", str(urls), "--changes",
             str(changes)], env=env, cwd=ROOT, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
            text=True, start_new_session=True)
        running["process"] = process
        for line in process.stdout:
            record(json.loads(line))
        if process.wait() != 0:
            stats.error("generator", f"the generator process exited with {process.returncode}")
        return
    rng, step = random.Random(7), 0
    while not stop.is_set():
        step += 1
        try:
            change_urls(app, rng, urls, changes, step)
        except Exception as exc:
            record({"status": "save_url failed", "error": repr(exc), "seconds": 0})
            stop.wait(1)
            continue
        started = time.perf_counter()
        process = subprocess.Popen(
            [sys.executable, "-m", "flask", "--app", "webapp", "sitemaps", "generate", SLUG,
             "--no-notify"], env=env, cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
            text=True, start_new_session=True)
        running["process"] = process
        out, err = process.communicate()
        match = re.search(r"\((\w+), generation (\d+)\)", out)
        record({"status": match.group(1) if match else f"exit {process.returncode}",
                "generation": int(match.group(2)) if match else None,
                "seconds": time.perf_counter() - started, "error": (err or out).strip()})


def sign_in(base: str) -> requests.Session:
    session = requests.Session()
    page = session.get(base + "/sign-in", timeout=30)
    token = re.search(r'name="csrf_token" value="([^"]+)"', page.text).group(1)
    answer = session.post(base + "/sign-in", data={"email": EMAIL, "password": PASSWORD,
                                                   "csrf_token": token},
                          allow_redirects=False, timeout=30)
    if answer.status_code != 302:
        raise RuntimeError(f"sign-in answered {answer.status_code}: {answer.text[:200]}")
    return session


def dashboard_user(base: str, urls: int, stats: Stats, stop: threading.Event, think: float) -> None:
    pages = {"sites": "/", "site": f"/sites/{SLUG}", "urls": f"/sites/{SLUG}/urls",
             "urls deep": f"/sites/{SLUG}/urls?" + urlencode({"after": synthetic_loc(urls // 2)}),
             "urls search": f"/sites/{SLUG}/urls?q=/products/category-5",
             "urls newest": f"/sites/{SLUG}/urls?sort=newest",
             "generations": f"/sites/{SLUG}/generations"}
    try:
        session = sign_in(base)
    except Exception as exc:
        stats.error("dashboard sign-in", repr(exc))
        return
    latencies, statuses, by_page = [], Counter(), defaultdict(list)
    try:
        while not stop.is_set():
            for label, page in pages.items():
                if stop.is_set():
                    break
                started = time.perf_counter()
                try:
                    answer = session.get(base + page, timeout=60, allow_redirects=False)
                except requests.RequestException as exc:
                    stats.error("dashboard request failed", f"{page}: {exc!r}")
                    statuses["exception"] += 1
                    continue
                latencies.append(time.perf_counter() - started)
                by_page[label].append(latencies[-1])
                statuses[answer.status_code] += 1
                if answer.status_code != 200:
                    stats.error(f"dashboard {answer.status_code}",
                                f"{page}: {answer.headers.get('Location') or answer.text[:200]}")
                stop.wait(think)
    finally:
        session.close()
        with stats.lock:
            stats.dashboard_latencies.extend(latencies)
            stats.dashboard_statuses.update(statuses)
            stats.dashboard_pages = by_page


# ---------------------------------------------------------------------------------------------
# Setup, run, report


def build(args, tmp: Path, schema: str) -> str:
    """A database holding the site and its URLs; its URL."""
    if args.postgresql:
        from sqlalchemy import create_engine, text

        url = postgresql_site_database(args.postgresql, schema)
        copy_urls(url, rows(args.urls))
        engine = create_engine(url)
        with engine.begin() as connection:
            connection.execute(text("UPDATE sites SET max_urls_per_file = :n WHERE id = 1"),
                               {"n": args.per_file})
        # What autovacuum does a while after a bulk load; without it, every count of the
        # freshly COPYed table visits each row to learn if it is visible.
        with engine.connect().execution_options(isolation_level="AUTOCOMMIT") as connection:
            connection.execute(text("VACUUM ANALYZE urls"))
        engine.dispose()
        return url
    path = tmp / "load.db"
    now = fresh_site_database(path)
    with sqlite3.connect(path) as con:
        con.executemany("INSERT INTO urls (site_id, loc, lastmod, changefreq, priority, "
                        "created_at, updated_at) VALUES (1, ?, ?, ?, ?, ?, ?)",
                        ((*row, now, now) for row in rows(args.urls)))
        con.execute("UPDATE sites SET max_urls_per_file = ? WHERE id = 1", (args.per_file,))
    return f"sqlite:///{path}"


def wait_until_up(url: str, process: subprocess.Popen, seconds: float = 60) -> None:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise RuntimeError(f"gunicorn exited with status {process.returncode}")
        try:
            if requests.get(url, timeout=2).status_code == 200:
                return
        except requests.RequestException:
            pass
        time.sleep(0.2)
    raise RuntimeError(f"{url} did not answer within {seconds} s")


def stop_process(process: subprocess.Popen | None, seconds: float = 15) -> None:
    if process is None or process.poll() is not None:
        return
    process.send_signal(signal.SIGTERM)
    try:
        process.wait(timeout=seconds)
    except subprocess.TimeoutExpired:
        process.kill()
        process.wait()


def report(args, stats: Stats, truth: Truth, elapsed: float, first_generation: int,
           database: str) -> int:
    lat = sorted(stats.latencies)
    dash = sorted(stats.dashboard_latencies)
    ms = lambda v: f"{v * 1000:.1f}"  # noqa: E731
    published = sorted(g for g in truth.files if g > first_generation)
    runs = Counter(g["status"] for g in stats.generator)
    gen_seconds = sorted(g["seconds"] for g in stats.generator if g["seconds"])
    silent = truth.silent_changes()
    mixed = sum(stats.mixed.values())
    errors = sum(stats.errors.values())
    print(f"load: {database}, {args.urls} URLs in {len(truth.files[first_generation]) - 2} files "
          f"of {args.per_file}; gunicorn 2 gthread workers x 4 threads on 127.0.0.1; "
          f"{args.crawlers} crawlers, {args.sample or 'all'} files a pass; {os.cpu_count()} cores")
    table = [
        ("run", f"{elapsed:.1f} s"),
        ("crawler requests", f"{len(lat)} ({len(lat) / elapsed:.0f}/s, "
                             f"{stats.bytes / elapsed / 2**20:.1f} MiB/s of bodies on the wire)"),
        ("crawler latency ms", f"p50 {ms(percentile(lat, .50))}  p95 {ms(percentile(lat, .95))}  "
                               f"p99 {ms(percentile(lat, .99))}  max {ms(lat[-1] if lat else 0)}"),
        ("crawler statuses", ", ".join(f"{k}: {v}" for k, v in sorted(stats.statuses.items(), key=str))),
        ("crawler requests by kind", ", ".join(f"{k}: {v}" for k, v in sorted(stats.kinds.items()))),
        ("crawl passes", f"{stats.passes} (index, files, index revalidated); "
                         f"{stats.overlapped_passes} saw a new index on revalidation"),
        ("files checked", f"{stats.files_same + stats.files_newer}: {stats.files_same} of the "
                          f"index's generation, {stats.files_newer} of a generation published "
                          f"during the pass"),
        ("generation runs", f"{len(stats.generator)} ({', '.join(f'{k}: {v}' for k, v in runs.items())}); "
                            f"seconds p50 {percentile(gen_seconds, .5):.2f}, max "
                            f"{gen_seconds[-1] if gen_seconds else float('nan'):.2f}"),
        ("generations published", f"{len(published)} during the load "
                                  f"(g{published[0]}..g{published[-1]})" if published else "0"),
        ("index generations seen", f"{len(stats.index_generations_seen)} by crawlers"),
        ("dashboard requests", f"{len(dash)} ({len(dash) / elapsed:.1f}/s); p50 "
                               f"{ms(percentile(dash, .5))} ms, p95 {ms(percentile(dash, .95))} ms; "
                               + ", ".join(f"{k}: {v}" for k, v in sorted(stats.dashboard_statuses.items(), key=str))),
        ("dashboard p95 by page ms", "  ".join(
            f"{page} {ms(percentile(sorted(times), .95))}" for page, times in stats.dashboard_pages.items())),
        ("mixed sets", f"{mixed}" + (f" ({dict(stats.mixed)})" if mixed else "")),
        ("index unchanged, file changed", f"{len(silent)}" + (f" ({'; '.join(silent[:3])})" if silent else "")),
        ("errors", f"{errors}" + (f" ({dict(stats.errors)})" if errors else "")),
    ]
    for name, value in table:
        print(f"  {name:<30} {value}")
    for example in stats.examples:
        print(f"  ! {example}")
    failed = bool(mixed or errors or silent)
    if not published:
        print("  ! no generation was published during the load: nothing was tested")
        failed = True
    print("FAILED" if failed else "OK: no error responses, no mixed index/file sets")
    return 1 if failed else 0


def interrupted(*_) -> None:
    raise KeyboardInterrupt


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--urls", type=int, default=200_000)
    parser.add_argument("--per-file", type=int, default=10_000, help="max_urls_per_file")
    parser.add_argument("--seconds", type=float, default=20)
    parser.add_argument("--max-requests", type=int, default=200_000,
                        help="crawler requests at most")
    parser.add_argument("--crawlers", type=int, default=8)
    parser.add_argument("--sample", type=int, default=4,
                        help="files fetched per pass over the index (0: every file)")
    parser.add_argument("--changes", type=int, default=3, help="URLs changed before each generation")
    parser.add_argument("--think", type=float, default=0.05,
                        help="seconds the dashboard user waits between pages")
    parser.add_argument("--generator", choices=["process", "cli"], default="process",
                        help="jobs.regenerate in a loop in one child process, or the flask CLI "
                             "once per generation")
    parser.add_argument("--postgresql", help="a PostgreSQL database to work in (a schema of its own)")
    parser.add_argument("--generator-child", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.generator_child:
        generator_child(args.urls, args.changes)
        return 0
    if args.urls <= args.per_file:
        parser.error("--urls must exceed --per-file, so that the site has an index")

    # Ctrl-C and SIGTERM end the run through the finally clauses below.
    signal.signal(signal.SIGINT, signal.default_int_handler)  # even when started in background
    signal.signal(signal.SIGTERM, interrupted)
    schema = f"bench_load_{os.getpid()}"
    server = app = None
    stop = threading.Event()
    running: dict = {"process": None}
    threads: list[threading.Thread] = []
    with tempfile.TemporaryDirectory(prefix="bench-load-") as tmp_name:
        tmp = Path(tmp_name)
        try:
            database = build(args, tmp, schema)
            env = {**os.environ, "DATABASE_URL": database, "SECRET_KEY": "bench-load",
                   "INSTANCE_PATH": str(tmp / "instance"), "SITEMAPS_DIR": str(tmp / "sitemaps"),
                   "PYTHONPATH": str(ROOT)}
            from webapp import create_app
            from webapp.models import Site
            from webapp.accounts.users import create_user

            app = create_app({"DATABASE_URL": database, "SECRET_KEY": "bench-load",
                              "INSTANCE_PATH": str(tmp / "instance"),
                              "SITEMAPS_DIR": str(tmp / "sitemaps")})
            with app.extensions["db_sessionmaker"]() as session:
                create_user(session, EMAIL, PASSWORD, "viewer")
                key = session.get(Site, 1).storage_key
                session.commit()
            started = time.perf_counter()
            first = subprocess.run(
                [sys.executable, "-m", "flask", "--app", "webapp", "sitemaps", "generate", SLUG,
                 "--no-notify"], env=env, cwd=ROOT, capture_output=True, text=True)
            if first.returncode:
                raise RuntimeError(f"the first generation failed: {first.stderr}")
            print(f"first generation: {first.stdout.strip()} in "
                  f"{time.perf_counter() - started:.1f} s", flush=True)
            truth = Truth(app.extensions["sitemap_store"], key)
            truth.refresh()
            first_generation = max(truth.files)

            port = free_port()
            base = f"http://127.0.0.1:{port}"
            gunicorn = Path(sys.executable).with_name("gunicorn")
            server = subprocess.Popen(
                [str(gunicorn), "-c", "python:webapp.gunicorn_conf", "--workers", "2",
                 "--bind", f"127.0.0.1:{port}", "--log-level", "warning", "webapp:create_app()"],
                env=env, cwd=ROOT, start_new_session=True)
            wait_until_up(f"{base}/sitemaps/{SLUG}/{INDEX}", server)

            stats = Stats(args.max_requests)
            crawlers = [Crawler(n, base, stats, truth, stop, args.sample) for n in range(args.crawlers)]
            threads = [threading.Thread(target=c.run, name=f"crawler-{n}", daemon=True)
                       for n, c in enumerate(crawlers)]
            threads.append(threading.Thread(target=generator, name="generator", daemon=True, args=(
                args.generator, app, env, args.urls, args.changes, stats, truth, stop, running)))
            threads.append(threading.Thread(target=dashboard_user, name="dashboard", daemon=True,
                                            args=(base, args.urls, stats, stop, args.think)))
            began = time.perf_counter()
            for thread in threads:
                thread.start()
            deadline = began + args.seconds
            while time.perf_counter() < deadline and any(t.is_alive() for t in threads[:-2]):
                time.sleep(0.1)
            elapsed = time.perf_counter() - began
            stop.set()
            if running["process"] is not None and running["process"].stdin:
                running["process"].stdin.close()  # the generator child ends after this run
            for thread in threads:
                thread.join(timeout=120)
            truth.refresh()
            return report(args, stats, truth, elapsed, first_generation,
                          "PostgreSQL" if args.postgresql else "SQLite")
        except KeyboardInterrupt:
            print("interrupted; cleaning up", file=sys.stderr)
            return 130
        finally:
            stop.set()
            signal.signal(signal.SIGINT, signal.SIG_IGN)  # let the clean-up finish
            signal.signal(signal.SIGTERM, signal.SIG_IGN)
            stop_process(running["process"], seconds=30)
            for thread in threads:
                thread.join(timeout=5)
            stop_process(server)
            if app is not None:
                app.extensions["db_engine"].dispose()
            if args.postgresql:
                drop_schema(args.postgresql, schema)


if __name__ == "__main__":
    sys.exit(main())
