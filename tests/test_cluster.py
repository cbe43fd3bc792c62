"""A deployment of many parts on 127.0.0.1, as on many machines: one PostgreSQL and one Redis,
two gunicorn web nodes each with its own instance folder (its cache), two Celery workers and
two schedulers, sharing nothing but DATABASE_URL, SECRET_KEY and CELERY_BROKER_URL."""

from __future__ import annotations

import hashlib
import io
import os
import re
import signal
import subprocess
import sys
import threading
import uuid
from pathlib import Path

import pytest
import requests
from sqlalchemy import select

from tests.builders import free_port, make_site
from tests.conftest import ROOT
from tests.probes import AppProcesses, wait_for
from tests.test_notify import KEY, posted
from webapp.models import Generation, Site
from webapp.accounts.tokens import create_token
from webapp.urls import import_urls
from webapp.accounts.users import create_user

GUNICORN = Path(sys.executable).with_name("gunicorn")


@pytest.fixture
def cluster_env(database_url, redis_url, app):
    if not database_url.startswith("postgresql"):
        pytest.skip("a deployment of many machines runs on PostgreSQL")
    return {**{k: v for k, v in os.environ.items() if not k.startswith(("CELERY_",
                                                                          "SITEMAPS_DIR"))},
            "DATABASE_URL": database_url, "SECRET_KEY": "cluster-test",
            "CELERY_BROKER_URL": redis_url, "CELERY_QUEUE": f"test-{uuid.uuid4().hex}",
            "OUTBOUND_ALLOW": "127.0.0.1", "SCHEDULER_TICK_SECONDS": "1",
            "INDEXNOW_ENDPOINT": app.config["INDEXNOW_ENDPOINT"]}


def web_node(env: dict[str, str], instance: Path, log: Path) -> tuple[subprocess.Popen, str]:
    port = free_port()
    with open(log, "wb") as output:
        process = subprocess.Popen(
            [str(GUNICORN), "-c", "python:webapp.gunicorn_conf", "--workers", "1",
             "--bind", f"127.0.0.1:{port}", "webapp:create_app()"], cwd=ROOT,
            env={**env, "INSTANCE_PATH": str(instance)}, stdout=output, stderr=output)
    base = f"http://127.0.0.1:{port}"
    wait_for(lambda: _get(f"{base}/healthz") is not None, 180, f"the web node on {port}")
    return process, base


def _get(url: str) -> requests.Response | None:
    try:
        answer = requests.get(url, timeout=30, headers={"Accept-Encoding": "identity"})
    except requests.RequestException:
        return None
    return answer if answer.status_code == 200 else None


def served_set(base: str) -> dict[str, str] | None:
    """The digest of the index and of every file it lists, as one node serves them (plain
    and .gz twins); None unless all of them answer and the index did not change meanwhile."""
    index = _get(f"{base}/sitemaps/shop/sitemap.xml")
    if index is None:
        return None
    files = {"sitemap.xml": hashlib.sha256(index.content).hexdigest()}
    for name in re.findall(r"<loc>[^<]*/([^/<]+)</loc>", index.text):
        for variant in (name, f"{name}.gz"):
            answer = _get(f"{base}/sitemaps/shop/{variant}")
            if answer is None:
                return None
            files[variant] = hashlib.sha256(answer.content).hexdigest()
    again = _get(f"{base}/sitemaps/shop/sitemap.xml")
    if again is None or again.content != index.content:
        return None  # published meanwhile: look again
    return files


def generations(session, site_id: int) -> list[Generation]:
    session.expire_all()
    return list(session.scalars(select(Generation).where(Generation.site_id == site_id)
                                .order_by(Generation.id)))


def test_nodes_workers_and_clocks_share_nothing_but_the_database_and_the_queue(
        cluster_env, session, engine, tmp_path):
    engine.expect_request("/indexnow").respond_with_data("", status=200)
    site = make_site(session, base_url=engine.url_for("/"), change_delay=0, schedule="off",
                     indexnow_enabled=True, indexnow_key=KEY,
                     indexnow_endpoint=engine.url_for("/indexnow"))
    user = create_user(session, "cms@example.com", "a long enough password 1", "editor")
    _, secret = create_token(session, user, "cms", "write", None)
    import_urls(session, site, io.StringIO("\n".join(
        f"{site.base_url}p/{n}" for n in range(60_000))))
    session.commit()
    site_id = site.id
    nodes = []
    with AppProcesses(tmp_path, cluster_env) as processes:
        try:
            nodes = [web_node(cluster_env, tmp_path / name, tmp_path / f"{name}.log")
                     for name in ("node-a", "node-b")]
            (_, a), (_, b) = nodes
            clocks = [processes.scheduler(env={"INSTANCE_PATH": str(tmp_path / f"clock-{n}")})
                      for n in range(2)]
            workers = [processes.worker(env={"INSTANCE_PATH": str(tmp_path / f"worker-{n}")},
                                        new_session=True) for n in range(2)]

            # The clocks find the imported URLs due; a worker generates; both nodes serve it.
            # (Every wait has a ceiling for a stuck test, not a duration: processes start and
            # work slowly on a busy machine.)
            first = wait_for(lambda: served_set(a), 240, "node A to serve the first set")
            assert served_set(b) == first  # node B's cache was empty: byte-identical

            # A content system writes through node A's API; node B serves the new set.
            added = requests.post(f"{a}/api/v1/sites/shop/urls", timeout=30,
                                  headers={"Authorization": f"Bearer {secret}"},
                                  json={"urls": [{"loc": f"{site.base_url}from-the-cms"}]})
            assert added.status_code == 200, added.text
            second = wait_for(lambda: (s := served_set(b)) and s != first and s, 180,
                              "node B to serve the set with the CMS's URL")
            assert b"from-the-cms" in _get(f"{b}/sitemaps/shop/sitemap-2.xml").content
            assert wait_for(lambda: (s := served_set(a)) == second and s, 120,
                            "node A to agree")

            # A large change; kill -9 the worker generating it and one clock meanwhile.
            seen: list[dict[str, bytes]] = []
            stop = threading.Event()
            watcher = threading.Thread(target=_watch, args=(b, seen, stop))
            watcher.start()
            import_urls(session, session.get(Site, site_id), io.StringIO("\n".join(
                f"{site.base_url}q/{n}" for n in range(300_000))))
            session.commit()
            running = wait_for(lambda: [g for g in generations(session, site_id)
                                        if g.status == "running"], 180, "the large run")
            session.expire_all()
            owner = int(session.get(Site, site_id).run_owner.split(":")[1])
            victim = next(w for w in workers if w.pid in (owner, _parent(owner)))
            os.killpg(victim.pid, signal.SIGKILL)
            clocks[0].kill()
            final = wait_for(lambda: [g for g in generations(session, site_id)
                                      if g.status == "succeeded" and g.url_count == 360_001],
                             480, "the surviving worker to finish the run")[0]
            assert final.id > running[0].id
            third = wait_for(lambda: (s := served_set(b)) and len(s) > len(second) and s, 180,
                             "node B to serve the large set")
            stop.set()
            watcher.join()
            assert wait_for(lambda: served_set(a) == third, 120, "node A to agree")
            wait_for(lambda: len({u for body in posted(engine) for u in body["urlList"]})
                     == 360_001, 240, "every URL announced")
            for process in [*clocks, *workers]:
                processes.stop(process)
        finally:
            for process, _ in nodes:
                process.terminate()
                process.wait(60)
    # Throughout the kill, node B served complete sets only: the one before, then the new one.
    assert seen and all(s in (second, third) for s in seen)
    sent = [url for body in posted(engine) for url in body["urlList"]]
    assert len(sent) == len(set(sent)) == 360_001  # nothing announced twice, nothing lost


def _watch(base: str, seen: list, stop: threading.Event) -> None:
    while not stop.is_set():
        found = served_set(base)
        if found is not None:
            seen.append(found)


def _parent(pid: int) -> int:
    try:
        return int(Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[1])
    except (OSError, ValueError, IndexError):
        return 0
