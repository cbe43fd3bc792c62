"""gunicorn as production starts it (`-c python:webapp.gunicorn_conf`): crawler connections
spread over the workers, and an address already served is refused rather than shared."""

from __future__ import annotations

import collections
import os
import shutil
import signal
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

from tests.builders import free_port
from tests.conftest import ROOT
from tests.probes import wait_for

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
    """gunicorn with the production settings on 127.0.0.1:`port`, up and answering; `.lines`
    holds what it has printed so far, and once stopped, `.output` all it printed."""
    process = start(environment, f"127.0.0.1:{port}", workers)
    process.lines = []
    reader = threading.Thread(target=_read_into, args=(process.stdout, process.lines),
                              daemon=True)
    reader.start()  # read as it comes, so that a test can wait for a line
    try:
        deadline = time.monotonic() + 120  # a ceiling: a start takes seconds on a busy machine
        while len(worker_pids(process)) < workers or not answers(port):
            if process.poll() is not None or time.monotonic() > deadline:
                process.terminate()
                process.wait(60)
                reader.join(60)
                process.stdout.close()
                raise AssertionError(f"gunicorn did not start: {''.join(process.lines)!r}")
            time.sleep(0.1)
        yield process
    finally:
        if process.returncode is None:
            process.terminate()
            process.wait(60)
        reader.join(60)  # its output ends when gunicorn and every process it started have
        process.stdout.close()
        process.output = "".join(process.lines)  # what it printed


def _read_into(stream, lines: list[str]) -> None:
    for line in stream:
        lines.append(line)  # noqa: PERF402 - one at a time: a test reads them meanwhile


def start(environment: dict[str, str], bind: str, workers: int = 2) -> subprocess.Popen:
    """gunicorn as production starts it, its output (text) on one pipe."""
    return subprocess.Popen(
        [str(GUNICORN), "-c", "python:webapp.gunicorn_conf", "--workers", str(workers),
         "--bind", bind, "webapp:create_app()"],
        cwd=ROOT, env=environment, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)


def worker_pids(master: subprocess.Popen) -> list[int]:
    found = subprocess.run(["pgrep", "-P", str(master.pid)], capture_output=True, text=True)
    return [int(pid) for pid in found.stdout.split()]


def answers(port: int) -> bool:
    """Whether a server on `port` answers a request (a refused connection says no at once; the
    timeout is a ceiling for a server that accepted and is stuck)."""
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=30) as probe:
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
    for fields in sockets_on(port, "01"):  # 01: ESTABLISHED
        if fields[9] in owner:  # its inode
            held[owner[fields[9]]] += 1
    return held


def listening(port: int) -> list[int]:
    """How many connections wait in the accept queue of each socket listening on `port`
    (/proc/net/tcp shows a listener's queue as its rx_queue)."""
    return [int(fields[4].split(":")[1], 16) for fields in sockets_on(port, "0A")]  # LISTEN


def sockets_on(port: int, state: str) -> list[list[str]]:
    """The rows of /proc/net/tcp (split in fields) of the sockets on local `port` in `state`."""
    rows = [line.split() for line in Path("/proc/net/tcp").read_text().splitlines()[1:]]
    return [fields for fields in rows
            if int(fields[1].split(":")[1], 16) == port and fields[3] == state]


def send_requests(port: int, count: int) -> list[socket.socket]:
    crawlers = [socket.create_connection(("127.0.0.1", port), timeout=60) for _ in range(count)]
    for crawler in crawlers:
        crawler.sendall(b"GET /sitemaps/none/sitemap.xml HTTP/1.1\r\nHost: a\r\n\r\n")
    return crawlers


@contextmanager
def kept_alive(port: int, count: int) -> Iterator[list[socket.socket]]:
    """`count` connections, each with a request answered and kept alive, as a crawler's."""
    crawlers = send_requests(port, count)
    try:
        for crawler in crawlers:
            assert crawler.recv(65536).startswith(b"HTTP/1.1 404")  # served, kept open
        yield crawlers
    finally:
        for crawler in crawlers:
            crawler.close()


def unanswered(crawlers: list[socket.socket]) -> list[str]:
    """What went wrong with each connection that got no 404 (the timeout is a ceiling)."""
    failures = []
    for crawler in crawlers:
        try:
            answer = crawler.recv(65536)
            if not answer.startswith(b"HTTP/1.1 404"):
                failures.append(repr(answer[:40]))
        except OSError as error:
            failures.append(repr(error))
        finally:
            crawler.close()
    return failures


def test_a_burst_of_keep_alive_connections_is_spread_over_the_workers(environment):
    # A crawler (or wrk) opens its connections at once and keeps them. With one listening
    # socket shared by the workers, the worker that happens to be idle accepted most of them
    # (4 of 5 tries left one worker 4 or fewer of 32). With a socket per worker the kernel
    # hashes each connection to one: each worker's share is 32 +- 4 of 64, and fewer than 12
    # happens about once in a million runs.
    port = free_port()
    with production_server(environment, port) as master, kept_alive(port, 64):
        held = connections_held(port, worker_pids(master))
    assert sum(held.values()) == 64 and len(held) == 2
    assert min(held.values()) >= 12, held


def test_a_second_server_on_the_same_address_is_refused_not_shared(environment):
    port = free_port()
    with production_server(environment, port, workers=1) as first:
        second = start(environment, f"127.0.0.1:{port}", workers=1)
        output = second.communicate(timeout=60)[0]
        assert second.returncode == 1
        assert f"127.0.0.1:{port} is already in use by another server" in output
        assert first.poll() is None and answers(port)


def test_an_address_left_in_time_wait_is_not_taken_for_a_server(environment):
    # The connections the first server served linger in TIME_WAIT after it stops; a restart
    # on the same port must still start.
    port = free_port()
    with production_server(environment, port, workers=1):
        assert answers(port)
    with production_server(environment, port, workers=1):
        assert answers(port)


def test_a_reload_answers_every_new_connection(environment):
    # On HUP, new workers start and the old ones stop gracefully: they linger while crawlers
    # hold kept-alive connections (2 s) or requests are in flight (up to 30 s). What the
    # kernel queues on an old worker's socket must not be reset when it exits: the new worker
    # takes the socket over. Until the new workers have loaded the app, new connections wait
    # for them (seconds on a loaded machine): the test waits as a crawler would, and
    # connects again and again until the reload is over.
    port = free_port()
    with production_server(environment, port) as master:
        old_workers = set(worker_pids(master))
        with kept_alive(port, 8):  # the old workers linger on stop for them
            master.send_signal(signal.SIGHUP)
            unanswered, answered, while_old_lingered = [], 0, 0
            deadline = time.monotonic() + 120  # a ceiling for a stuck reload, not a duration
            while (workers := set(worker_pids(master))) & old_workers or len(workers) < 2:
                assert time.monotonic() < deadline, f"no reload: workers {workers}"
                while_old_lingered += bool(workers & old_workers)
                if answers(port):
                    answered += 1
                else:
                    unanswered.append(f"no answer with workers {workers}")
            new_workers = workers
    assert unanswered == [] and answered > 0 and while_old_lingered > 0
    assert new_workers and not new_workers & old_workers  # it did reload


def test_connections_queued_for_a_worker_that_dies_are_answered_by_its_replacement(
        environment):
    # A worker that crashes or is killed for a timeout leaves connections the kernel queued on
    # its socket and it never accepted. The socket outlives it (the master holds it), so the
    # worker that replaces it answers them; closed with the worker, it would reset them.
    port = free_port()
    with production_server(environment, port) as master:
        stuck, _running = worker_pids(master)
        os.kill(stuck, signal.SIGSTOP)  # accepts nothing from now on
        try:
            crawlers = send_requests(port, 16)  # about half are hashed to the stuck one
            assert sum(listening(port)) > 0  # queued where nobody accepts
        finally:
            os.kill(stuck, signal.SIGKILL)
        assert unanswered(crawlers) == []
        assert stuck not in worker_pids(master) and len(listening(port)) == 2


def test_fewer_workers_leave_no_socket_that_nobody_accepts_from(environment):
    # TTOU stops a worker for good: its socket must close with it, or the kernel would go on
    # queueing a share of the new connections where nobody accepts them. The stopped worker
    # lingers for the kept-alive connections, while the master sends it TERM again and again.
    port = free_port()
    with production_server(environment, port) as master:
        with kept_alive(port, 16):
            master.send_signal(signal.SIGTTOU)
            wait_for(lambda: len(worker_pids(master)) == 1 and len(listening(port)) == 1, 120,
                     "one worker and one socket")
        assert unanswered(send_requests(port, 32)) == []
    assert "Exception in worker process" not in master.output, master.output
    assert "exited with code" not in master.output, master.output


def test_more_workers_each_listen_on_a_socket_of_their_own(environment):
    port = free_port()
    with production_server(environment, port) as master:
        master.send_signal(signal.SIGTTIN)
        wait_for(lambda: len(worker_pids(master)) == 3 and answers(port), 120, "a third worker")
        assert len(listening(port)) == 3
        # Each worker's first requests are slow, and kept-alive connections close after 2 s:
        # warm every one up, or those of the first two may close before the third answers.
        assert all(answers(port) for _ in range(48))  # a worker missed: 3 * (2/3)**48
        with kept_alive(port, 64):
            held = connections_held(port, worker_pids(master))
    assert sum(held.values()) == 64 and len(held) == 3
    assert min(held.values()) > 0, held  # all of them on two workers: (2/3)**64 by chance


def test_a_unix_socket_is_shared_by_the_workers(environment, tmp_path):
    # SO_REUSEPORT is refused on unix sockets, and each worker would unlink the others' file.
    path = tmp_path / "gunicorn.sock"
    server = start(environment, f"unix:{path}")
    try:
        deadline = time.monotonic() + 120  # a ceiling: a start takes seconds on a busy machine
        while len(worker_pids(server)) < 2 or not path.exists():
            assert server.poll() is None and time.monotonic() < deadline
            time.sleep(0.1)
        workers = worker_pids(server)
        for _ in range(4):
            with socket.socket(socket.AF_UNIX) as client:
                client.settimeout(60)
                client.connect(str(path))
                client.sendall(b"GET /sitemaps/none/sitemap.xml HTTP/1.1\r\nHost: a\r\n"
                               b"Connection: close\r\n\r\n")
                assert client.recv(64).startswith(b"HTTP/1.1 404")
        assert worker_pids(server) == workers
    finally:
        server.terminate()
        output = server.communicate(timeout=60)[0]
    assert "One listening socket shared by the workers" in output
    assert output.count("Booting worker") == 2, output  # none failed and was restarted


def test_an_address_that_is_not_this_machines_stops_gunicorn_at_once(environment):
    # 192.0.2.1 is reserved for documentation (RFC 5737): binding to it fails here, and
    # nothing is sent anywhere.
    server = start(environment, f"192.0.2.1:{free_port()}")
    output = server.communicate(timeout=60)[0]
    assert server.returncode == 1
    assert "192.0.2.1" in output and "cannot be listened on" in output


def test_a_binary_upgrade_is_refused_in_words_and_the_server_goes_on(environment):
    # The master forks a new master for the upgrade; that one refuses, says why and exits.
    # Once the old master has seen it end, it must still be running and serving.
    port = free_port()
    with production_server(environment, port) as master:
        workers = set(worker_pids(master))
        master.send_signal(signal.SIGUSR2)
        wait_for(lambda: any("a binary upgrade (USR2) does not work with a socket per worker"
                             in line for line in master.lines), 120, "the upgrade refused")
        wait_for(lambda: set(worker_pids(master)) == workers, 120,
                 "the master to reap the refused upgrade")
        assert master.poll() is None and answers(port)


def test_a_socket_from_systemd_is_shared_by_the_workers(environment):
    # Socket activation: systemd listens, and hands the socket to gunicorn as fd 3 with
    # LISTEN_FDS and LISTEN_PID naming the process it is for (here, bash before its exec).
    listener = socket.create_server(("127.0.0.1", 0))
    port = listener.getsockname()[1]
    server = subprocess.Popen(
        ["bash", "-c", 'exec 3<&"$SOCKET_FD"; LISTEN_PID=$$ LISTEN_FDS=1 exec "$0" "$@"',
         str(GUNICORN), "-c", "python:webapp.gunicorn_conf", "--workers", "2",
         "webapp:create_app()"],
        cwd=ROOT, env={**environment, "SOCKET_FD": str(listener.fileno())},
        pass_fds=(listener.fileno(),), stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
        text=True)
    listener.close()  # gunicorn holds it now
    try:
        deadline = time.monotonic() + 120  # a ceiling: a start takes seconds on a busy machine
        while len(worker_pids(server)) < 2 or not answers(port):
            if server.poll() is not None or time.monotonic() > deadline:
                break
            time.sleep(0.1)
        served = answers(port)
    finally:
        server.terminate()
        output = server.communicate(timeout=60)[0]
    assert served, output
    assert "One listening socket shared by the workers" in output
