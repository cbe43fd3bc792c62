"""The Crawler (webapp.outbound.crawler): verification's kept-alive connections, on an asyncio
loop, keep every rule of outbound requests (allowed destinations, the connected address the
checked one, redirects never followed, the total deadline, answers capped) and read what real
servers send (chunks, gzip and deflate, HEAD, a connection the host closed while idle)."""

from __future__ import annotations

import asyncio
import gzip
import ipaddress
import re
import socket
import ssl
import sys
import threading
import time
import zlib
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from typing import Self
from urllib.parse import urlsplit

import pytest
from hypothesis import given
from hypothesis import strategies as st

from tests.probes import DripServer, wait_for
from webapp.config import parse_networks
from webapp.outbound import Crawler, OutboundError, Policy, is_http_url
from webapp.outbound import urls as outbound_urls
from webapp.outbound.crawler import MAX_HEAD

LOCAL = parse_networks("127.0.0.1, ::1")


def answer(status: int = 200, body: bytes = b"", *headers: str, length: bool = True) -> bytes:
    lines = [f"HTTP/1.1 {status} X", *headers]
    if length:
        lines.append(f"Content-Length: {len(body)}")
    return ("\r\n".join(lines) + "\r\n\r\n").encode() + body


class Peer:
    """A keep-alive HTTP/1.1 server on 127.0.0.1: `reply(path, connection, nth)` gives the
    bytes to send for the nth request (from 1) on a connection (numbered from 1), with True
    to close the connection after them, or None to close it without answering. `log` has
    (connection, method, path) of each request read."""

    def __init__(self, reply: Callable[[str, int, int], bytes | None]):
        self.reply, self.log, self.connections = reply, [], 0
        self.listener = socket.create_server(("127.0.0.1", 0))
        self.port = self.listener.getsockname()[1]
        self.url = f"http://127.0.0.1:{self.port}"
        self._lock = threading.Lock()
        threading.Thread(target=self._serve, daemon=True).start()

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc) -> None:
        self.listener.close()

    def _serve(self) -> None:
        while True:
            try:
                connection, _ = self.listener.accept()
            except OSError:
                return
            with self._lock:
                self.connections += 1
                number = self.connections
            threading.Thread(target=self._answer, args=(connection, number), daemon=True).start()

    def _answer(self, connection: socket.socket, number: int) -> None:
        buffer, nth = b"", 0
        with connection:
            connection.settimeout(10)
            while True:
                while b"\r\n\r\n" not in buffer:
                    try:
                        data = connection.recv(65536)
                    except OSError:
                        return
                    if not data:
                        return
                    buffer += data
                head, _, buffer = buffer.partition(b"\r\n\r\n")
                method, path, _ = head.split(b"\r\n")[0].decode().split(" ", 2)
                nth += 1
                self.log.append((number, method, path))
                data = self.reply(path, number, nth)
                if data is None:
                    return
                data, close = data if isinstance(data, tuple) else (data, False)
                try:
                    connection.sendall(data)
                except OSError:
                    return
                if close:
                    return


class Client:
    """A Crawler on an event loop of its own, asked one request at a time."""

    def __init__(self, crawler: Crawler):
        self.crawler, self.loop = crawler, asyncio.new_event_loop()

    def request(self, method: str, url: str, headers=None):
        return self.loop.run_until_complete(self.crawler.request(method, url, headers))

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc) -> None:
        self.loop.run_until_complete(self.crawler.__aexit__())
        self.loop.close()


def crawler(timeout: float = 5, allow=LOCAL, **options) -> Client:
    return Client(Crawler(Policy(timeout, allow), "test-agent", **options))


# Allowed destinations


@pytest.mark.parametrize("host", ["127.0.0.1", "localhost"])
def test_an_address_the_operator_does_not_allow_is_refused_before_connecting(host):
    with Peer(lambda *_: answer()) as peer, crawler(allow=()) as client:
        with pytest.raises(OutboundError) as refused:
            client.request("GET", f"http://{host}:{peer.port}/x")
        assert refused.value.permanent and "a loopback address" in refused.value.meaning
        assert "OUTBOUND_ALLOW" in refused.value.meaning
        assert peer.connections == 0


def test_the_address_connected_to_is_the_one_checked():
    """One lookup per new connection, and the connection goes to the address it gave (DNS
    rebinding changes nothing); a kept-alive connection is looked up no more."""
    seen = []
    sys.addaudithook(lambda event, args: seen.append((event, args))
                     if event in ("socket.getaddrinfo", "socket.connect") else None)
    with Peer(lambda *_: answer(body=b"ok")) as peer, crawler() as client:
        seen.clear()
        for _ in range(3):
            assert client.request("GET", f"http://localhost:{peer.port}/x").body == b"ok"
        lookups = [args for event, args in seen if event == "socket.getaddrinfo"
                   and args[0] == "localhost"]
        connects = [args[1] for event, args in seen if event == "socket.connect"]
    assert len(lookups) == 1 and len(connects) == 1 and peer.connections == 1
    assert connects[0][0] in ("127.0.0.1", "::1")


def test_a_redirect_is_an_answer_never_followed():
    with Peer(lambda *_: answer(body=b"secret")) as inside, \
            Peer(lambda *_: answer(301, b"", f"Location: {inside.url}/secret")) as peer, \
            crawler() as client:
        page = client.request("GET", f"{peer.url}/a")
    assert (page.status, page.location, page.body) == (301, f"{inside.url}/secret", b"")
    assert inside.log == []


# The total deadline


@pytest.mark.parametrize("drip_headers", [False, True], ids=["body", "headers"])
def test_a_server_dripping_its_answer_is_cut_off_at_the_deadline(drip_headers):
    with DripServer(drip_headers=drip_headers) as drip, crawler(timeout=1) as client:
        with pytest.raises(OutboundError, match=r"no answer within 1 s"):
            client.request("GET", drip.url)
        wait_for(drip.cut_short.is_set, what="the connection to be shut by the client")
        assert not drip.finished.is_set()


def test_a_kept_alive_connection_is_under_the_deadline_of_the_request_reusing_it():
    def reply(path, connection, nth):
        if path == "/fast":
            return answer(body=b"ok")
        return answer(body=b"x" * 600)[:-600]  # a body that never comes

    # 5 s: the first answer, from a thread on this machine, must come within the deadline too
    with Peer(reply) as peer, crawler(timeout=5) as client:
        assert client.request("GET", f"{peer.url}/fast").body == b"ok"
        with pytest.raises(OutboundError, match=r"no answer within 5 s"):
            client.request("GET", f"{peer.url}/slow")
    assert [entry[0] for entry in peer.log] == [1, 1]  # the same connection


def _certificate(folder) -> tuple[str, str]:
    """A self-signed certificate for 127.0.0.1 and its key, as PEM files."""
    from cryptography import x509
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.hazmat.primitives.asymmetric import ec
    from cryptography.x509.oid import NameOID

    key = ec.generate_private_key(ec.SECP256R1())
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "127.0.0.1")])
    now = datetime.now(UTC)
    certificate = (
        x509.CertificateBuilder().subject_name(name).issuer_name(name)
        .public_key(key.public_key()).serial_number(x509.random_serial_number())
        .not_valid_before(now - timedelta(hours=1)).not_valid_after(now + timedelta(days=1))
        .add_extension(x509.SubjectAlternativeName(
            [x509.IPAddress(ipaddress.ip_address("127.0.0.1"))]), critical=False)
        .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
        .sign(key, hashes.SHA256()))
    cert, private = folder / "cert.pem", folder / "key.pem"
    cert.write_bytes(certificate.public_bytes(serialization.Encoding.PEM))
    private.write_bytes(key.private_bytes(serialization.Encoding.PEM,
                                          serialization.PrivateFormat.PKCS8,
                                          serialization.NoEncryption()))
    return str(cert), str(private)


def test_an_answer_dripping_over_tls_is_cut_off_at_the_deadline(tmp_path, monkeypatch):
    """The TLS socket takes over the connection's descriptor: it is the one the deadline
    shuts (the plain socket under it, once wrapped, can no longer be shut)."""
    cert, key = _certificate(tmp_path)
    monkeypatch.setenv("SSL_CERT_FILE", cert)  # the client trusts this certificate only
    server = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    server.load_cert_chain(cert, key)
    with DripServer(tls=server) as drip, crawler(timeout=1) as client:
        with pytest.raises(OutboundError, match=r"no answer within 1 s"):
            client.request("GET", drip.url)
        wait_for(drip.cut_short.is_set, what="the connection to be shut by the client")
        assert not drip.finished.is_set()


# What servers send


def test_a_connection_the_host_closed_is_replaced():
    """Closed after its answer, or on reading the next request (its keep-alive time ran out
    just then): the request goes once more, on a new connection."""
    def reply(path, connection, nth):
        if path == "/a":
            return answer(body=b"/a"), True  # answered, then closed
        if (connection, nth) == (2, 2):
            return None  # closed on reading the request
        return answer(body=path.encode())

    with Peer(reply) as peer, crawler() as client:
        for path in ("/a", "/b", "/c"):
            assert client.request("GET", f"{peer.url}{path}").body == path.encode()
    assert [(connection, path) for connection, _, path in peer.log] == [
        (1, "/a"), (2, "/b"), (2, "/c"), (3, "/c")]


def test_a_new_connection_closed_without_an_answer_is_said_so():
    with Peer(lambda *_: None) as peer, crawler() as client, \
            pytest.raises(OutboundError, match="closed the connection without answering"):
        client.request("GET", f"{peer.url}/a")
    assert len(peer.log) == 1  # not sent again: the connection was new


def test_a_refused_connection_and_a_short_body_are_errors_worth_retrying():
    with socket.create_server(("127.0.0.1", 0)) as probe:
        port = probe.getsockname()[1]  # closed at once: nothing listens there
    with crawler() as client:
        with pytest.raises(OutboundError, match="refused the connection") as refused:
            client.request("GET", f"http://127.0.0.1:{port}/")
        assert not refused.value.permanent
        with Peer(lambda *_: (answer(body=b"0123456789")[:-5], True)) as peer, \
                pytest.raises(OutboundError, match="will try again") as short:
            client.request("GET", f"{peer.url}/a")  # closed after 5 of 10 bytes
        assert not short.value.permanent


def test_bodies_are_decoded_capped_and_framed_as_sent():
    text = b"<p>" + b"words " * 2000 + b"</p>"
    bomb = gzip.compress(b"\0" * (8 << 20))  # 8 MB of zeros in a few KB
    raw = zlib.compressobj(wbits=-zlib.MAX_WBITS)
    bare_deflate = raw.compress(text) + raw.flush()

    def chunked(data: bytes) -> bytes:
        pieces = [data[i:i + 1000] for i in range(0, len(data), 1000)]
        return b"".join(b"%x;ext=1\r\n%s\r\n" % (len(p), p) for p in pieces) + \
            b"0\r\nTrailer: x\r\n\r\n"

    replies = {
        "/gzip-chunked": answer(200, chunked(gzip.compress(text)), "Content-Encoding: gzip",
                                "Transfer-Encoding: chunked", length=False),
        "/deflate": answer(200, zlib.compress(text), "Content-Encoding: deflate"),
        "/bare-deflate": answer(200, bare_deflate, "Content-Encoding: deflate"),
        "/bomb": answer(200, bomb, "Content-Encoding: gzip"),
        "/large": answer(200, b"y" * (2 << 20)),
        "/twice": answer(200, b"", "X-Robots-Tag: noindex", "x-robots-tag: nofollow",
                         "Link: <https://a/>;", " rel=canonical"),
        "/head": answer(200, b"", "Content-Length: 12345", length=False),
        "/not-modified": answer(304, b"", 'ETag: "v1"', length=False),
        "/early-hints": b"HTTP/1.1 103 Early Hints\r\nLink: </a.css>\r\n\r\n"
                        + answer(200, b"page"),
        "/length-twice": answer(200, b"page", "Content-Length: 4"),
    }
    with Peer(lambda path, *_: replies[path]) as peer, crawler(max_bytes=1 << 20) as client:
        get = lambda path, method="GET": client.request(method, f"{peer.url}{path}")
        assert get("/gzip-chunked").body == text
        assert get("/deflate").body == text and get("/bare-deflate").body == text
        assert len(get("/bomb").body) == 1 << 20  # stopped at the cap, the rest not read
        assert len(get("/large").body) == 1 << 20
        twice = get("/twice").headers
        assert twice.get("X-ROBOTS-TAG") == "noindex, nofollow" and "x-robots-tag" in twice
        assert twice["link"] == "<https://a/>; rel=canonical"  # a folded line continues
        assert (get("/head", "HEAD").body, get("/head", "HEAD").status) == (b"", 200)
        assert get("/not-modified").status == 304
        assert get("/not-modified").headers.get("etag") == '"v1"'
        assert (get("/early-hints").status, get("/early-hints").body) == (200, b"page")
        assert get("/length-twice").body == b"page"
    # A connection whose answer was left unread (/large) is not used again; the others
    # are (the bomb's few KB were all read).
    connections = [connection for connection, _, _ in peer.log]
    assert connections == [1, 1, 1, 1, 1] + [2] * 8


def chunked(*pieces: bytes) -> bytes:
    return answer(200, b"".join(b"%x\r\n%s\r\n" % (len(p), p) for p in pieces) + b"0\r\n\r\n",
                  "Transfer-Encoding: chunked", length=False)


def test_a_chunked_body_stops_at_the_cap_and_its_connection_with_it():
    replies = {"/over": chunked(b"a" * 994, b"b" * 5, b"c" * 10),  # the cap inside a chunk
               "/at": chunked(b"a" * 999, b"b" * 5),
               "/under": chunked(b"a" * 994, b"b" * 5),  # 999 bytes: read whole
               "/after": chunked(b"ok")}
    with Peer(lambda path, *_: replies[path]) as peer, crawler(max_bytes=1000) as client:
        bodies = [client.request("GET", f"{peer.url}{path}").body
                  for path in ("/under", "/after", "/over", "/at", "/after")]
    assert bodies == [b"a" * 994 + b"b" * 5, b"ok", b"a" * 994 + b"b" * 5 + b"c",
                      b"a" * 999 + b"b", b"ok"]
    assert [connection for connection, _, _ in peer.log] == [1, 1, 1, 2, 3]


# Reading URLs


@given(st.from_regex(re.compile(
    r"(HTTP|https?|ftp)://([a-zA-Z0-9.\-@:\[\]_]{0,12})(:[0-9]{0,6})?([/?#][ -~\t\u00e9]{0,12})?"),
    fullmatch=True))
def test_the_quick_reading_of_a_url_agrees_with_urlsplits(url):
    """The usual URL is read by a pattern (a twentieth of a 304's cost); what it reads, and
    whether it accepts it at all, is what urlsplit makes of it."""
    quick = outbound_urls.parts(url)
    slow_path = re.compile(r"(?!)")  # matches nothing: every URL goes through urlsplit
    pattern, outbound_urls._PLAIN_URL = outbound_urls._PLAIN_URL, slow_path
    try:
        assert quick == outbound_urls.parts(url)
    finally:
        outbound_urls._PLAIN_URL = pattern
    if quick is not None:
        assert urlsplit(url).hostname == quick[0][1]


def test_urls_with_white_space_a_user_or_a_bad_port_are_refused():
    for url in ("http://h/a b", "http://h/\tx", " http://h/", "http://u@h/", "http://h:99999/",
                "ftp://h/", "http:///x", "http://[::1/"):
        assert not is_http_url(url), url
    for url in ("http://h", "https://H.example:8443/p?q=1#f", "http://[::1]:8080/x",
                "http://h/caf\u00e9"):
        assert is_http_url(url), url


def test_a_header_value_that_would_end_its_line_is_not_sent():
    """A validator the site sent comes back in If-None-Match: one with a line break in it
    would add a header of the site's choosing."""
    with Peer(lambda *_: answer()) as peer, crawler() as client:
        with pytest.raises(OutboundError):
            client.request("GET", f"{peer.url}/a", {"If-None-Match": '"v"\r\nX-Evil: 1'})
        assert peer.log == []


def test_bytes_nobody_asked_for_are_not_read_as_the_next_answer():
    """A server that sends a body with its answer to HEAD: the connection is not used again,
    so the next request does not read those bytes as its answer."""
    def reply(path, connection, nth):
        if path == "/file":
            return answer(200, b"", "Content-Length: 5", length=False) + b"extra"
        return answer(body=b"page")

    with Peer(reply) as peer, crawler() as client:
        assert client.request("HEAD", f"{peer.url}/file").status == 200
        assert client.request("GET", f"{peer.url}/page").body == b"page"
    assert [connection for connection, _, _ in peer.log] == [1, 2]


# What is not HTTP/1.1 (h11 reads the framing)

BIG = b"a" * (MAX_HEAD + 1)


@pytest.mark.parametrize("reply", [
    b"HTTP/1.1 abc Broken\r\nContent-Length: 0\r\n\r\n",
    b"SPDY/3 200 OK\r\nContent-Length: 0\r\n\r\n",
    b"HTTP/1.1 200 OK\r\nLink: </a\x00b>\r\nContent-Length: 0\r\n\r\n",
    b"HTTP/1.1 200 OK\r\nContent-Length: 1\r\nContent-Length: 2\r\n\r\nab",
    b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n",
], ids=["status-not-a-number", "not-http", "nul-in-a-header", "two-lengths",
        "bad-chunk-size"])
def test_an_answer_that_is_not_valid_http_is_an_error_worth_retrying(reply):
    with Peer(lambda *_: (reply, True)) as peer, crawler() as client, \
            pytest.raises(OutboundError, match="will try again") as failed:
        client.request("GET", f"{peer.url}/a")
    assert not failed.value.permanent and failed.value.status is None
    assert failed.value.detail.startswith("RemoteProtocolError")


def test_a_head_that_grows_past_its_limit_is_refused_without_waiting_for_the_deadline():
    """A server sending header bytes without end, its connection open: refused when what
    waits to be read as a head passes MAX_HEAD, not when the deadline (a minute here) is up
    (h11 reads a head that arrived whole in one read, however long: what one read brings is
    bounded)."""
    with Peer(lambda *_: b"HTTP/1.1 200 OK\r\nX-Big: " + BIG + BIG) as peer, \
            crawler(timeout=60) as client, pytest.raises(OutboundError) as failed:
        client.request("GET", f"{peer.url}/a")
    assert "no answer within" not in failed.value.meaning
    # Not because the server closed it (it does, ten seconds later).
    assert failed.value.detail == "RemoteProtocolError: Receive buffer too long"


def test_a_user_agent_that_would_end_its_line_is_refused():
    with pytest.raises(ValueError, match="User-Agent"):
        Crawler(Policy(5, LOCAL), "agent\r\nX-Evil: 1")


# The deadline is the network's time


def _held_past_the_deadline(reply, timeout: float = 0.5):
    """One request under `timeout`, the loop held (as reading a page on it holds it) from
    the moment the peer was asked until three times the deadline has passed; the peer
    replies once the loop is held. What the request gave (a Page or an OutboundError)."""
    held = threading.Event()

    def once_held(*args):
        held.wait(10)
        return reply(*args)

    async def scenario():
        async with Crawler(Policy(timeout, LOCAL), "test-agent") as client:
            asking = asyncio.ensure_future(client.request("GET", f"{peer.url}/x"))
            while not peer.log:
                await asyncio.sleep(0.01)
            held.set()
            until = time.monotonic() + 3 * timeout
            while time.monotonic() < until:  # nothing else runs on the loop meanwhile
                pass
            try:
                return await asking
            except OutboundError as exc:
                return exc

    with Peer(once_held) as peer:
        return asyncio.run(scenario())


def test_an_answer_that_arrived_while_the_loop_was_held_is_read_not_cut_off():
    """Verification reads each page on the loop its requests run on: a page that holds it
    past other requests' deadlines must not make their answers "no answer"."""
    got = _held_past_the_deadline(lambda *_: answer(200, b"here"))
    assert not isinstance(got, OutboundError), got.meaning
    assert (got.status, got.body) == (200, b"here")


def test_a_peer_that_does_not_answer_is_still_cut_off_after_the_loop_was_held():
    release = threading.Event()

    def never(*_):
        release.wait(10)
        return None

    try:
        got = _held_past_the_deadline(never)
    finally:
        release.set()
    assert isinstance(got, OutboundError) and "no answer within 0.5 s" in got.meaning
