"""Time the dashboard's site overview and URL list on a 1,000,000-URL site against the sites
page with one site.

    python bench/dashboard.py --urls 1000000

Two fresh SQLite databases: one with a single small site (the reference: the sites page), one
with a site of N URLs. Each page is fetched through the app (Flask test client, signed in as a
viewer) --rounds times; the median time is printed with its ratio to the reference. Target:
each of these pages under 10x the sites page.
"""

from __future__ import annotations

import argparse
import re
import sqlite3
import statistics
import tempfile
import time
from pathlib import Path

from common import BASE, fresh_site_database


def app_for(path: Path):
    from webapp import create_app
    from webapp.db import session_scope
    from webapp.accounts.users import create_user

    app = create_app({"DATABASE_URL": f"sqlite:///{path}", "SECRET_KEY": "bench",
                      "INSTANCE_PATH": str(path.parent / "instance")})
    with app.app_context(), session_scope() as session:
        create_user(session, "bench@example.com", "bench password", "viewer")
    client = app.test_client()
    token = re.search(r'name="csrf_token" value="([^"]+)"', client.get("/sign-in").text).group(1)
    answer = client.post("/sign-in", data={"email": "bench@example.com",
                                           "password": "bench password", "csrf_token": token})
    assert answer.status_code == 302
    return client


def timed(client, path: str, rounds: int) -> float:
    client.get(path)  # warm
    times = []
    for _ in range(rounds):
        start = time.perf_counter()
        answer = client.get(path)
        times.append(time.perf_counter() - start)
        assert answer.status_code == 200, (path, answer.status_code)
    return statistics.median(times)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--urls", type=int, default=1_000_000)
    parser.add_argument("--rounds", type=int, default=20)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as folder:
        small, large = Path(folder) / "small.db", Path(folder) / "large.db"
        for path, count in ((small, 10), (large, args.urls)):
            now = fresh_site_database(path)
            with sqlite3.connect(path) as con:
                con.executemany(
                    "INSERT INTO urls (site_id, loc, lastmod, change_seq, created_at, updated_at)"
                    " VALUES (1, ?, ?, 0, ?, ?)",
                    ((f"{BASE}products/{n:07d}", f"2026-{1 + n % 12:02d}-{1 + n % 28:02d}", now,
                      now) for n in range(count)))
        reference = timed(app_for(small), "/", args.rounds)
        client = app_for(large)
        deep = f"{BASE}products/{args.urls * 9 // 10:07d}"
        pages = {
            "site overview": "/sites/shop",
            "URL list, first page": "/sites/shop/urls",
            "URL list, 90% deep": f"/sites/shop/urls?after={deep}",
            "search /products/05": "/sites/shop/urls?q=/products/05",
            "newest first": "/sites/shop/urls?sort=newest",
            "by lastmod, deep": "/sites/shop/urls?sort=lastmod&after=2026-03-03|500000",
        }
        print(f"{'page':28} {'ms':>8} {'x sites page':>13}")
        print(f"{'sites page (1 site)':28} {reference * 1000:8.2f} {1:13.2f}")
        for name, path in pages.items():
            took = timed(client, path, args.rounds)
            print(f"{name:28} {took * 1000:8.2f} {took / reference:13.2f}")


if __name__ == "__main__":
    main()
