"""Peers that misbehave, for the security tests: a server on 127.0.0.1 that drips its answer a
byte at a time; ways to wait for a condition instead of a duration; and the app's own
processes (workers, schedulers) started for a test."""

from __future__ import annotations

import signal
import socket
import ssl
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from pathlib import Path

from sqlalchemy import text


def wait_for(condition: Callable[[], object], within: float = 30.0, what: str = "condition"):
    """The condition's first true value, checked every 20 ms; AssertionError after `within` s
    (a ceiling for a stuck test, not a duration the test relies on)."""
    ends = time.monotonic() + within
    while time.monotonic() < ends:
        value = condition()
        if value:
            return value
        time.sleep(0.02)
    raise AssertionError(f"{what} did not happen within {within} s")


class DripServer:
    """Answers every request with a status line and headers, then a body of `size` bytes
    sent one byte every `interval` seconds (or, with `drip_headers`, the status line too).

    It records, per connection, how many bytes it sent and whether the client hung up before
    the answer was complete (`cut_short`): the sign that a deadline was enforced.
    """

    def __init__(self, size: int = 600, interval: float = 0.05, drip_headers: bool = False,
                 tls: ssl.SSLContext | None = None):
        self.size, self.interval, self.drip_headers = size, interval, drip_headers
        self.tls = tls  # a server context: the answer drips over TLS
        self.listener = socket.create_server(("127.0.0.1", 0))
        self.port = self.listener.getsockname()[1]
        self.url = f"{'https' if tls else 'http'}://127.0.0.1:{self.port}/"
        self.requests: list[bytes] = []
        self.open = 0
        self.cut_short = threading.Event()
        self.finished = threading.Event()  # an answer was sent whole
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._serve, daemon=True)

    def __enter__(self) -> DripServer:
        self._thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self._stop.set()
        self.listener.close()
        self._thread.join(5)

    def _serve(self) -> None:
        self.listener.settimeout(0.1)
        while not self._stop.is_set():
            try:
                connection, _ = self.listener.accept()
            except (TimeoutError, OSError):
                continue
            threading.Thread(target=self._answer, args=(connection,), daemon=True).start()

    def _answer(self, connection: socket.socket) -> None:
        with self._lock:
            self.open += 1
        try:
            if self.tls:
                connection.settimeout(5)
                connection = self.tls.wrap_socket(connection, server_side=True)
            with connection:
                connection.settimeout(5)
                head = b""
                while b"\r\n\r\n" not in head:
                    data = connection.recv(4096)
                    if not data:
                        return
                    head += data
                self.requests.append(head)
                headers = (f"HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\n"
                           f"Content-Length: {self.size}\r\n\r\n").encode()
                if not self.drip_headers:
                    connection.sendall(headers)
                    headers = b""
                for byte in headers + b"x" * self.size:
                    if self._stop.wait(self.interval):
                        return
                    connection.sendall(bytes([byte]))
                self.finished.set()
        except OSError:  # the client shut the connection while bytes were still to come
            self.cut_short.set()
        finally:
            with self._lock:
                self.open -= 1


def waiting_on_locks(session, count: int):
    """A condition: `count` other connections wait on a row lock (PostgreSQL). Each look is a
    transaction of its own: within one, pg_stat_activity keeps showing its first snapshot."""
    def waiting() -> bool:
        session.rollback()
        return session.execute(text("SELECT count(*) FROM pg_stat_activity "
                                    "WHERE wait_event_type = 'Lock'")).scalar() >= count
    return waiting


class AppProcesses:
    """`flask --app webapp ...` processes of a test (workers, schedulers), each logging to a
    file of its own (a pipe nobody reads would fill and stop the process); all stopped at the
    end, by SIGTERM and then, if they linger, SIGKILL."""

    def __init__(self, folder: Path, env: dict[str, str]):
        self.folder, self.env, self.started = folder, env, []

    def start(self, *args: str, env: dict[str, str] | None = None,
              new_session: bool = False) -> subprocess.Popen:
        """`flask --app webapp ARGS`; with `new_session`, in a process group of its own (to
        kill it with its children)."""
        log = self.folder / f"{args[0]}-{len(self.started)}.log"
        with open(log, "wb") as output:  # the process has its own copy
            process = subprocess.Popen(
                [sys.executable, "-m", "flask", "--app", "webapp", *args],
                env={**self.env, **(env or {})}, stdout=subprocess.DEVNULL, stderr=output,
                start_new_session=new_session)
        process.log = log
        self.started.append(process)
        return process

    def worker(self, *args: str, **kwargs) -> subprocess.Popen:
        return self.start("worker", "--concurrency", "1", *args, **kwargs)

    def scheduler(self, **kwargs) -> subprocess.Popen:
        return self.start("scheduler", "run", **kwargs)

    @staticmethod
    def stop(process: subprocess.Popen, timeout: float = 180) -> str:
        """SIGTERM (a worker finishes the task in hand); the process's log. `timeout` is a
        ceiling for a stuck process (then SIGKILL), not a duration: a run takes its time."""
        if process.poll() is None:
            process.send_signal(signal.SIGTERM)
        try:
            process.wait(timeout)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()
        return process.log.read_text(errors="replace")

    def __enter__(self) -> AppProcesses:
        return self

    def __exit__(self, *exc) -> None:
        for process in self.started:
            if process.poll() is None:
                process.kill()
                process.wait()
