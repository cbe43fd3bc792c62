"""The crawler verification asks the live site with (webapp.outbound.Crawler): http.client's
kept-alive connections under the rules every outbound request follows. Each test talks to a
raw socket server on 127.0.0.1 that answers exactly as the test says, byte for byte."""

from __future__ import annotations

import gzip
import socket
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager

import pytest

from webapp.outbound import Crawler, OutboundError, Policy

ALLOW = Policy.of({"NOTIFY_TIMEOUT": 5, "OUTBOUND_ALLOW": "127.0.0.1"}).allow


def answer(status: str, headers: list[tuple[str, str]], body: bytes = b"") -> bytes:
    lines = [f"HTTP/1.1 {status}", *(f"{name}: {value}" for name, value in headers),
             f"Content-Length: {len(body)}"]
    return ("\r\n".join(lines) + "\r\n\r\n").encode() + body


class Server:
    """Accepts connections; `handle(conn, request_number_on_it)` answers each request read."""

    def __init__(self, handle: Callable[[socket.socket, int], bool]):
        self.handle, self.connections, self.requests = handle, 0, []
        self.listener = socket.create_server(("127.0.0.1", 0))
        self.port = self.listener.getsockname()[1]
        self.base = f"http://127.0.0.1:{self.port}"
        threading.Thread(target=self._accept, daemon=True).start()

    def _accept(self) -> None:
        while True:
            try:
                conn, _ = self.listener.accept()
            except OSError:
                return
            self.connections += 1
            threading.Thread(target=self._serve, args=(conn,), daemon=True).start()

    def _serve(self, conn: socket.socket) -> None:
        data, number = b"", 0
        with conn:
            while True:
                while b"\r\n\r\n" not in data:
                    chunk = conn.recv(65536)
                    if not chunk:
                        return
                    data += chunk
                head, _, data = data.partition(b"\r\n\r\n")
                self.requests.append(head.decode())
                number += 1
                if not self.handle(conn, number):  # False: close the connection
                    return


@contextmanager
def serving(handle) -> Iterator[Server]:
    server = Server(handle)
    try:
        yield server
    finally:
        server.listener.close()


def crawler(seconds: float = 5, **options) -> Crawler:
    return Crawler(Policy(seconds, ALLOW), "test-agent", **options)


def test_a_gzip_answer_is_decoded_and_capped_and_the_connection_then_dropped():
    page = b"<p>" + b"words " * 20_000 + b"</p>"

    def handle(conn, number):
        conn.sendall(answer("200 OK", [("Content-Type", "text/html"),
                                       ("Content-Encoding", "gzip")], gzip.compress(page)))
        return True

    with serving(handle) as server, crawler(max_bytes=1000) as client:
        first = client.request("GET", f"{server.base}/a")
        assert first.body == page[:1000]
        whole = crawler().request("GET", f"{server.base}/a")
        assert whole.body == page and whole.status == 200
        assert client.request("GET", f"{server.base}/b").body == page[:1000]
    assert "Accept-Encoding: gzip" in server.requests[0]
    # The capped answers' connections were not reused: what is left of a body would be read
    # as the next answer.
    assert server.connections == 3


def test_repeated_headers_are_read_together_and_by_any_case():
    def handle(conn, number):
        conn.sendall(answer("200 OK", [("X-Robots-Tag", "nosnippet"),
                                       ("x-robots-tag", "noindex"), ("ETag", '"v1"')], b"hi"))
        return True

    with serving(handle) as server, crawler() as client:
        page = client.request("GET", f"{server.base}/")
    assert page.headers.get("X-Robots-Tag") == "nosnippet, noindex"
    assert page.headers.get("etag") == page.headers["ETAG"] == '"v1"'
    assert "Content-Type" not in page.headers and page.headers.get("Location") is None


def test_a_kept_alive_connection_the_server_closed_is_asked_again_on_a_new_one():
    def handle(conn, number):
        conn.sendall(answer("200 OK", [], b"page"))
        return False  # closed after the answer without saying so (no Connection: close)

    with serving(handle) as server, crawler() as client:
        for n in range(3):
            assert client.request("GET", f"{server.base}/{n}").body == b"page"
    assert server.connections == 3 and len(server.requests) == 3


def test_one_connection_per_thread_is_kept_alive_and_conditional_headers_are_sent():
    def handle(conn, number):
        conn.sendall(answer("304 Not Modified", [("ETag", '"v1"')]))
        return True

    with serving(handle) as server, crawler() as client:
        pages = [client.request("GET", f"{server.base}/{n}", {"If-None-Match": '"v1"'})
                 for n in range(20)]
    assert {page.status for page in pages} == {304} and server.connections == 1
    assert all('If-None-Match: "v1"' in request and "User-Agent: test-agent" in request
               for request in server.requests)


def test_an_address_the_operator_did_not_allow_is_never_connected_to():
    with serving(lambda conn, number: False) as server:
        client = Crawler(Policy(5, ()), "test-agent")
        with pytest.raises(OutboundError) as refused:
            client.request("GET", f"{server.base}/")
        client.close()
    assert "OUTBOUND_ALLOW" in refused.value.meaning and refused.value.permanent
    assert server.connections == 0


def test_a_body_that_drips_is_cut_off_at_the_deadline():
    stop = threading.Event()

    def handle(conn, number):
        conn.sendall(b"HTTP/1.1 200 OK\r\nContent-Length: 100000\r\n\r\n")
        while not stop.is_set():  # a byte at a time, never done
            try:
                conn.sendall(b"x")
            except OSError:
                return False
            stop.wait(0.05)
        return False

    with serving(handle) as server, crawler(seconds=0.5) as client:
        with pytest.raises(OutboundError) as late:
            client.request("GET", f"{server.base}/")
        stop.set()
    assert "no answer within 0.5 s" in late.value.meaning


def test_finished_requests_do_not_pile_up_until_their_deadline():
    def handle(conn, number):
        conn.sendall(answer("304 Not Modified", []))
        return True

    with serving(handle) as server, crawler(seconds=600) as client:
        watchdog = client._watchdog
        for n in range(watchdog.KEEP + 500):
            client.request("GET", f"{server.base}/{n}")
        deadline = time.monotonic() + 30
        while len(watchdog._heap) + len(watchdog._incoming) > watchdog.KEEP \
                and time.monotonic() < deadline:
            time.sleep(watchdog.GRAIN)  # the watchdog looks each GRAIN: wait for it to look
        assert len(watchdog._heap) + len(watchdog._incoming) <= watchdog.KEEP
