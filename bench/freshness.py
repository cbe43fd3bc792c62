"""Time from one changed URL to the search engine: API write -> served file -> IndexNow POST.

    python bench/freshness.py --urls 1000000 --postgresql URL --redis URL [--changes 20]

A site of N URLs with change_delay 0 and IndexNow pointed at a fake engine on 127.0.0.1, a
gunicorn web node, a Celery worker and the scheduler, as `make run-prod` starts them. Each
round changes one URL's lastmod with `POST /api/v1/sites/shop/urls` and measures, from just
before the request, (a) when the web node serves the file that holds the URL with its new
lastmod (polled with If-None-Match every 10 ms) and (b) when the fake engine receives the
IndexNow POST naming it. Prints p50, p95 and the worst of each (target: p95 under 3 s).

Without --postgresql (or TEST_POSTGRESQL_URL) it runs on SQLite, and without --redis (or
TEST_REDIS_URL) on the embedded broker, and says so.
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import uuid
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import requests
from common import ROOT, copy_urls, drop_schema, postgresql_site_database
from generate import synthetic_loc
from incremental import rows, sqlite_database

PER_FILE = 50_000


class FakeEngine(ThreadingHTTPServer):
    """An IndexNow endpoint that notes when each URL arrived."""

    def __init__(self):
        self.arrived: dict[str, float] = {}
        engine = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self):
                body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
                now = time.perf_counter()
                for url in body.get("urlList", []):
                    engine.arrived.setdefault(url, now)
                self.send_response(200)
                self.send_header("Content-Length", "0")
                self.end_headers()

            def log_message(self, *args):
                pass

        super().__init__(("127.0.0.1", 0), Handler)
        threading.Thread(target=self.serve_forever, daemon=True).start()


def free_port() -> int:
    import socket

    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def prepare(database_url: str, folder: Path, engine_url: str) -> str:
    """Site settings, a full first generation, and an API token; the token's secret."""
    from webapp import create_app, jobs
    from webapp.models import Site
    from webapp.accounts.tokens import create_token
    from webapp.accounts.users import create_user

    app = create_app({"DATABASE_URL": database_url, "SECRET_KEY": "bench",
                      "INSTANCE_PATH": str(folder / "node"),
                      "CELERY_BROKER_URL": "memory://"})
    with app.extensions["db_sessionmaker"]() as session:
        site = session.get(Site, 1)
        site.change_delay, site.schedule = 0, "off"
        site.indexnow_enabled, site.indexnow_endpoint = True, engine_url
        user = create_user(session, "cms@example.com", "a long bench password 1", "editor")
        _, secret = create_token(session, user, "cms", "write", None)
        session.commit()
    generation = jobs.regenerate(1, app)
    assert generation.status == "succeeded", generation.error
    app.extensions["db_engine"].dispose()
    return secret


def changed_file(base: str, name: str, etag: str | None, needle: str,
                 deadline: float) -> tuple[float, str]:
    """Poll `name` until it holds `needle`; (when it did, its ETag)."""
    while time.perf_counter() < deadline:
        headers = {"If-None-Match": etag} if etag else {}
        answer = requests.get(f"{base}/sitemaps/shop/{name}", headers=headers, timeout=10)
        if answer.status_code == 200:
            etag = answer.headers["ETag"]
            if needle in answer.text:
                return time.perf_counter(), etag
        time.sleep(0.01)
    raise SystemExit(f"{name} did not change within the deadline")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--urls", type=int, default=1_000_000)
    parser.add_argument("--changes", type=int, default=20)
    parser.add_argument("--postgresql", default=os.environ.get("TEST_POSTGRESQL_URL"))
    parser.add_argument("--redis", default=os.environ.get("TEST_REDIS_URL"))
    args = parser.parse_args()
    engine = FakeEngine()
    engine_url = f"http://127.0.0.1:{engine.server_address[1]}/indexnow"
    schema = f"bench_freshness_{os.getpid()}"
    with tempfile.TemporaryDirectory(prefix="bench-freshness-") as tmp:
        folder = Path(tmp)
        if args.postgresql:
            database_url = postgresql_site_database(args.postgresql, schema)
            copy_urls(database_url, rows(args.urls))
        else:
            database_url = sqlite_database(folder, args.urls)
        started = time.perf_counter()
        secret = prepare(database_url, folder, engine_url)
        print(f"{args.urls} URLs on {'PostgreSQL' if args.postgresql else 'SQLite'}, broker "
              f"{'Redis' if args.redis else 'embedded'}; first generation and setup "
              f"{time.perf_counter() - started:.1f} s", flush=True)
        port = free_port()
        env = {**os.environ, "DATABASE_URL": database_url, "SECRET_KEY": "bench",
               "INSTANCE_PATH": str(folder / "node"), "OUTBOUND_ALLOW": "127.0.0.1",
               "CELERY_BROKER_URL": args.redis or "", "SCHEDULER_TICK_SECONDS": "1",
               "CELERY_QUEUE": f"bench-{uuid.uuid4().hex}", "PYTHONPATH": str(ROOT)}
        flask = [sys.executable, "-m", "flask", "--app", "webapp"]
        logs = open(folder / "processes.log", "wb")
        processes = [
            subprocess.Popen([sys.executable, "-m", "gunicorn", "-c", "python:webapp.gunicorn_conf",
                              "--workers", "2", "--bind", f"127.0.0.1:{port}",
                              "webapp:create_app()"], env=env, cwd=ROOT, stdout=logs,
                             stderr=logs, start_new_session=True),
            subprocess.Popen([*flask, "worker", "--concurrency", "2"], env=env, cwd=ROOT,
                             stdout=logs, stderr=logs, start_new_session=True),
            subprocess.Popen([*flask, "scheduler", "run"], env=env, cwd=ROOT, stdout=logs,
                             stderr=logs, start_new_session=True)]
        base = f"http://127.0.0.1:{port}"
        try:
            deadline = time.perf_counter() + 60
            while True:
                try:
                    if requests.get(f"{base}/healthz", timeout=5).ok:
                        break
                except requests.RequestException:  # not listening, or still starting
                    pass
                if time.perf_counter() > deadline:
                    raise SystemExit("the web node did not start")
                time.sleep(0.1)
            served, announced = measure(base, secret, engine, args)
        finally:
            for process in processes:
                os.killpg(process.pid, signal.SIGTERM)
            for process in processes:
                try:
                    process.wait(30)
                except subprocess.TimeoutExpired:
                    os.killpg(process.pid, signal.SIGKILL)
            logs.close()
            if args.postgresql:
                drop_schema(args.postgresql, schema)
    for label, times in (("(a) served file holds the change", served),
                         ("(b) IndexNow POST received", announced)):
        ordered = sorted(times)
        p95 = ordered[max(0, round(0.95 * len(ordered)) - 1)]
        print(f"{label:<34} p50 {statistics.median(ordered):.2f} s  p95 {p95:.2f} s  "
              f"worst {ordered[-1]:.2f} s  ({len(ordered)} changes)")


def measure(base: str, secret: str, engine: FakeEngine, args) -> tuple[list, list]:
    served, announced = [], []
    etags: dict[str, str] = {}
    headers = {"Authorization": f"Bearer {secret}"}
    for round_number in range(args.changes):
        n = (round_number * 48_611 + 12_347) % args.urls
        while n % 10 == 0 or n % 7 == 0:  # a plain loc, to find it in the file as it is
            n += 1
        loc = synthetic_loc(n)
        lastmod = f"2030-01-{round_number % 28 + 1:02d}T00:00:{round_number % 60:02d}+00:00"
        name = f"sitemap-{n // PER_FILE + 1}.xml"
        if name not in etags:  # the file's current ETag, before the change
            etags[name] = requests.get(f"{base}/sitemaps/shop/{name}", timeout=30).headers["ETag"]
        start = time.perf_counter()
        answer = requests.post(f"{base}/api/v1/sites/shop/urls", headers=headers, timeout=30,
                               json={"urls": [{"loc": loc, "lastmod": lastmod}]})
        assert answer.status_code == 200, answer.text
        when, etags[name] = changed_file(base, name, etags[name],
                                         f"<loc>{loc}</loc><lastmod>{lastmod}</lastmod>",
                                         start + 60)
        served.append(when - start)
        deadline = start + 60
        while loc not in engine.arrived and time.perf_counter() < deadline:
            time.sleep(0.005)
        if loc not in engine.arrived:
            raise SystemExit(f"{loc} was not announced within a minute")
        announced.append(engine.arrived[loc] - start)
        print(f"  change {round_number + 1}: served {served[-1]:.2f} s, announced "
              f"{announced[-1]:.2f} s", flush=True)
    return served, announced


if __name__ == "__main__":
    main()
