"""gunicorn as production starts it (`-c python:webapp.gunicorn_conf`): crawler connections
spread over the workers, and an address already served is refused rather than shared."""

from __future__ import annotations

import collections
import os
import shutil
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

from tests.builders import free_port
from tests.conftest import ROOT

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"),
                                reason="SO_REUSEPORT balances connections on Linux only")

GUNICORN = Path(sys.executable).with_name("gunicorn")


@pytest.fixture
def environment(sqlite_template, tmp_path) -> dict[str, str]:
    shutil.copy(sqlite_template, tmp_path / "app.db")
    return {**os.environ, "DATABASE_URL": f"sqlite:///{tmp_path / 'app.db'}",
            "SECRET_KEY": "gunicorn-test", "INSTANCE_PATH": str(tmp_path / "instance")}


@contextmanager
def production_server(environment: dict[str, str], port: int,
                      workers: int = 2) -> Iterator[subprocess.Popen]:
    """gunicorn with the production settings on 127.0.0.1:`port`, up and answering."""
    process = subprocess.Popen(
        [str(GUNICORN), "-c", "python:webapp.gunicorn_conf", "--workers", str(workers),
         "--bind", f"127.0.0.1:{port}", "webapp:create_app()"],
        cwd=ROOT, env=environment, stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    try:
        deadline = time.monotonic() + 60
        while len(worker_pids(process)) < workers or not answers(port):
            if process.poll() is not None or time.monotonic() > deadline:
                raise AssertionError(f"gunicorn did not start: {process.communicate()[0]!r}")
            time.sleep(0.1)
        yield process
    finally:
        process.terminate()
        process.communicate(timeout=60)


def worker_pids(master: subprocess.Popen) -> list[int]:
    found = subprocess.run(["pgrep", "-P", str(master.pid)], capture_output=True, text=True)
    return [int(pid) for pid in found.stdout.split()]


def answers(port: int) -> bool:
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=2) as probe:
            probe.sendall(b"GET /sitemaps/none/sitemap.xml HTTP/1.1\r\nHost: 127.0.0.1\r\n"
                          b"Connection: close\r\n\r\n")
            return probe.recv(64).startswith(b"HTTP/1.1 404")
    except OSError:
        return False


def connections_held(port: int, pids: list[int]) -> collections.Counter:
    """How many established connections to `port` each process holds (from /proc)."""
    owner = {}
    for pid in pids:
        for fd in os.listdir(f"/proc/{pid}/fd"):
            try:
                target = os.readlink(f"/proc/{pid}/fd/{fd}")
            except OSError:
                continue  # closed meanwhile
            if target.startswith("socket:["):
                owner[target[len("socket:["):-1]] = pid
    held = collections.Counter({pid: 0 for pid in pids})
    for line in Path("/proc/net/tcp").read_text().splitlines()[1:]:
        fields = line.split()
        local_port, state, inode = int(fields[1].split(":")[1], 16), fields[3], fields[9]
        if local_port == port and state == "01" and inode in owner:  # 01: ESTABLISHED
            held[owner[inode]] += 1
    return held


def test_a_burst_of_keep_alive_connections_is_spread_over_the_workers(environment):
    # A crawler (or wrk) opens its connections at once and keeps them. With one listening
    # socket shared by the workers, the worker that happens to be idle accepted most of them
    # (4 of 5 tries left one worker 4 or fewer of 32). With a socket per worker the kernel
    # hashes each connection to one: each worker's share is 32 +- 4 of 64, and fewer than 12
    # happens about once in a million runs.
    port = free_port()
    with production_server(environment, port) as master:
        crawlers = [socket.create_connection(("127.0.0.1", port), timeout=10)
                    for _ in range(64)]
        try:
            for crawler in crawlers:
                crawler.sendall(b"GET /sitemaps/none/sitemap.xml HTTP/1.1\r\nHost: a\r\n\r\n")
            for crawler in crawlers:
                assert crawler.recv(65536).startswith(b"HTTP/1.1 404")  # served, kept open
            held = connections_held(port, worker_pids(master))
        finally:
            for crawler in crawlers:
                crawler.close()
    assert sum(held.values()) == 64 and len(held) == 2
    assert min(held.values()) >= 12, held


def test_a_second_server_on_the_same_address_is_refused_not_shared(environment):
    port = free_port()
    with production_server(environment, port, workers=1) as first:
        second = subprocess.run(
            [str(GUNICORN), "-c", "python:webapp.gunicorn_conf", "--workers", "1",
             "--bind", f"127.0.0.1:{port}", "webapp:create_app()"],
            cwd=ROOT, env=environment, capture_output=True, text=True, timeout=60)
        assert second.returncode == 1
        assert f"127.0.0.1:{port} is already in use by another server" in second.stderr
        assert first.poll() is None and answers(port)


def test_an_address_left_in_time_wait_is_not_taken_for_a_server(environment):
    # The connections the first server served linger in TIME_WAIT after it stops; a restart
    # on the same port must still start.
    port = free_port()
    with production_server(environment, port, workers=1):
        assert answers(port)
    with production_server(environment, port, workers=1):
        assert answers(port)
