"""Verification's crawler: many requests to a site over kept-alive connections on an asyncio
loop, each under the rules every outbound request follows. h11 reads and writes HTTP/1.1
(status line, headers, chunks, keep-alive); this module owns the connections, the deadline,
the cap and the decoding."""

from __future__ import annotations

import asyncio
import socket
import ssl
import zlib
from collections.abc import Mapping
from typing import Self

import h11

from webapp.outbound.answers import OutboundError, Page, failure, not_a_url
from webapp.outbound.guard import Policy, refused
from webapp.outbound.network_time import Deadline, Held
from webapp.outbound.urls import host_header, parts

# The most an answer's status line and headers may take (h11's default is 16 KB; some sites
# send long Content-Security-Policy or Link headers). A longer head is a protocol error.
MAX_HEAD = 64 << 10


class _Connection(asyncio.Protocol):
    """One of a Crawler's connections and its h11 state: what arrives while an answer is
    awaited goes to h11; `closed` once the peer closed it (or it was lost, or sent what
    nobody asked for while idle): a closed connection is not used again."""

    def __init__(self):
        self.transport: asyncio.Transport | None = None
        self.http = h11.Connection(h11.CLIENT, max_incomplete_event_size=MAX_HEAD)
        self.closed = False
        self.heard = False  # whether anything arrived since the last request was sent
        self._waiter: asyncio.Future | None = None

    def connection_made(self, transport) -> None:
        self.transport = transport

    def data_received(self, data: bytes) -> None:
        if self._waiter is None:  # idle: nobody asked for it (nor will it pile up here)
            self.shut()
            return
        self.heard = True
        self.http.receive_data(data)
        self._wake()

    def eof_received(self) -> None:
        self.closed = True
        self._wake()

    def connection_lost(self, exc) -> None:
        self.closed = True
        self._wake()

    def _wake(self) -> None:
        if self._waiter is not None and not self._waiter.done():
            self._waiter.set_result(None)

    def ask(self, request: h11.Request) -> None:
        """Send a request (it has no body)."""
        self.heard = False
        self.transport.write(self.http.send(request) + self.http.send(h11.EndOfMessage()))

    async def next_event(self) -> h11.Event:
        """h11's next event of the answer, waiting for bytes as long as it needs them."""
        if not self.heard and not self.closed:  # nothing to read yet: h11 is not asked
            await self._arrival()
        while (event := self.http.next_event()) is h11.NEED_DATA:
            if self.closed:
                if not self.heard:  # retried once when the connection was kept alive
                    raise ConnectionResetError("Remote end closed connection without response")
                self.http.receive_data(b"")  # h11 ends an unframed body, or raises
                continue
            await self._arrival()
        return event

    async def _arrival(self) -> None:
        """Until more bytes arrived, or the peer closed."""
        self._waiter = asyncio.get_running_loop().create_future()
        try:
            await self._waiter
        finally:
            self._waiter = None

    def shut(self) -> None:
        """Close it now (the peer is not waited for: a dripping one sees it at once)."""
        self.closed = True
        if self.transport is not None:
            self.transport.abort()


class _Headers(dict):
    """An answer's headers: names in lower case, looked up in any case; a header sent more
    than once is one value, its values joined by ", "."""

    def get(self, name: str, default=None):
        return super().get(name.lower(), default)

    def __getitem__(self, name: str):
        return super().__getitem__(name.lower())

    def __contains__(self, name: object) -> bool:
        return isinstance(name, str) and super().__contains__(name.lower())


def _headers(pairs: h11.Headers) -> _Headers:
    values: dict[str, list[str]] = {}
    # raw_items: one list (iterating the Sequence itself costs a call per item); folded
    # lines are joined by h11. A name sent many times is joined once, at the end: joined
    # line by line, a head of many short lines would cost its length squared.
    for raw_name, raw_value in pairs.raw_items():
        values.setdefault(raw_name.decode("ascii").lower(), []).append(
            raw_value.decode("iso-8859-1"))
    found = _Headers()
    for name, those in values.items():
        dict.__setitem__(found, name, those[0] if len(those) == 1 else ", ".join(those))
    return found


async def _answer(conn: _Connection, limit: int) -> tuple[int, _Headers, bytes, bool]:
    """The next answer on `conn`: its status, headers, at most `limit` bytes of its body
    (gzip or deflate decoded; a small answer that decodes to gigabytes stops at `limit`),
    and whether the connection can take the next request (then it is ready for it)."""
    while True:
        event = await conn.next_event()
        if type(event) is h11.Response:
            break
        if event.status_code == 101:  # switching protocols, unasked: nothing more to read
            return 101, _headers(event.headers), b"", False
        # 100 Continue, 103 Early Hints: skipped
    status, headers, body, whole = event.status_code, _headers(event.headers), bytearray(), False
    while True:
        event = await conn.next_event()
        if type(event) is h11.EndOfMessage:
            whole = True
            break
        body += event.data
        if len(body) >= limit:  # the rest of the body is not read
            whole = len(body) == limit and _ends_now(conn.http)
            break
    http = conn.http
    reusable = (whole and http.our_state is h11.DONE and http.their_state is h11.DONE
                and not conn.closed and not http.trailing_data[0])
    if reusable:
        http.start_next_cycle()
    coding = (headers.get("content-encoding") or "").strip().lower()
    data = bytes(body[:limit])
    if data and coding in ("gzip", "x-gzip", "deflate"):
        data = _decoded(data, coding, limit)
    return status, headers, data, reusable


def _ends_now(http: h11.Connection) -> bool:
    """Whether the answer ends with what has arrived (a body exactly at the cap)."""
    try:
        return type(http.next_event()) is h11.EndOfMessage
    except h11.RemoteProtocolError:
        return False


def _decoded(data: bytes, coding: str, limit: int) -> bytes:
    """gzip or deflate (with its zlib header or without) decoded, at most `limit` bytes."""
    if coding == "deflate":
        try:
            return zlib.decompressobj().decompress(data, limit)
        except zlib.error:
            return zlib.decompressobj(-zlib.MAX_WBITS).decompress(data, limit)
    return zlib.decompressobj(16 + zlib.MAX_WBITS).decompress(data, limit)


class Crawler:
    """Many requests to a site over kept-alive connections, each under the same rules as
    `send` (every address a name has must be allowed, and the one connected to is the one
    checked; a redirect is an answer, never followed; the policy's total deadline, after
    which the connection is shut, counted on the network's time: a page read on the loop's
    thread while answers wait does not use theirs up; answers capped at `max_bytes`). Close
    it when done.

    asyncio's, in the thread of the run that uses it: a verification run makes a thousand
    requests a second, most answered 304, and with a thread per connection the threads'
    turns at the interpreter lock (taken from one core to the other at every send and
    receive) cost more than the answers. Use within `async with`."""

    HOSTS = 8  # hosts whose idle connections are kept

    def __init__(self, policy: Policy, user_agent: str, max_bytes: int = 4 << 20,
                 connections: int = 10):
        self.policy, self.max_bytes, self.connections = policy, max_bytes, connections
        self.headers = {"User-Agent": user_agent, "Accept-Encoding": "gzip, deflate",
                        "Accept": "*/*"}
        self._idle: dict[tuple[str, str, int], list[_Connection]] = {}
        self._held: Held | None = None  # started on the loop of the first request
        self._tls = ssl.create_default_context()
        try:  # h11 refuses a value with a line break in it, which would add a header
            h11.Request(method="GET", target="/", headers=[("Host", "h"),
                                                           *self.headers.items()])
        except h11.LocalProtocolError:
            raise ValueError("a User-Agent that would end its header line early") from None

    async def request(self, method: str, url: str,
                      headers: Mapping[str, str] | None = None,
                      seconds: float | None = None) -> Page:
        """One request; OutboundError (no status) when no answer came within the deadline
        (the policy's, or `seconds` when shorter: what is left of a chain of requests)."""
        found = parts(url)
        if found is None:
            raise not_a_url(url)
        key, target = found
        seconds = self.policy.timeout if seconds is None else min(seconds, self.policy.timeout)
        if self._held is None:
            self._held = Held(asyncio.get_running_loop())
        try:
            sent = {**self.headers, **headers} if headers else self.headers
            ask = h11.Request(method=method, target=target,
                              headers=[("Host", host_header(*key)), *sent.items()])
            async with asyncio.timeout(None) as timeout:
                deadline = Deadline(self._held, timeout, seconds)
                try:
                    status, answered, body = await self._exchange(key, ask)
                finally:
                    deadline.cancel()
        except OutboundError:
            raise
        except (h11.ProtocolError, OSError, ValueError, zlib.error) as exc:
            # TimeoutError (an OSError) is the deadline's: the connection was shut.
            raise failure(exc, url, seconds, isinstance(exc, TimeoutError)) from None
        return Page(url, status, answered, body)

    async def _exchange(self, key: tuple[str, str, int],
                        ask: h11.Request) -> tuple[int, _Headers, bytes]:
        conn, reused = self._reuse(key)
        while True:
            try:
                if conn is None:
                    conn = await self._connect(key)
                conn.ask(ask)
                status, found, body, reusable = await _answer(conn, self.max_bytes)
                break
            except BaseException as exc:  # the deadline's cancellation too
                if conn is not None:
                    conn.shut()
                if not reused or not isinstance(exc, ConnectionResetError | BrokenPipeError):
                    raise
            # The host closed it while it was idle: once more, on a new connection.
            conn, reused = None, False
        if reusable:
            self._keep(key, conn)
        else:
            conn.shut()  # the rest is not wanted, or the host closes it
        return status, found, body

    def _reuse(self, key: tuple[str, str, int]) -> tuple[_Connection | None, bool]:
        """An idle connection to the host that is still open and quiet, if there is one."""
        idle = self._idle.get(key) or []
        while idle:
            conn = idle.pop()
            if not conn.closed:
                return conn, True
            conn.shut()
        return None, False

    async def _connect(self, key: tuple[str, str, int]) -> _Connection:
        """A new connection, to the address checked (every one the name has is allowed)."""
        scheme, host, port = key
        loop = asyncio.get_running_loop()
        infos = await loop.getaddrinfo(host, port, type=socket.SOCK_STREAM)
        refusing = refused(host, infos, self.policy.allow)
        if refusing:
            raise OutboundError(refusing[0], permanent=True, said=refusing[1],
                                by_own_rules="OUTBOUND_ALLOW")
        family, kind, protocol, _, sockaddr = infos[0]
        sock = socket.socket(family, kind, protocol)
        try:
            sock.setblocking(False)
            sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            await loop.sock_connect(sock, sockaddr)
            secure = scheme == "https"
            _, conn = await loop.create_connection(
                _Connection, sock=sock, ssl=self._tls if secure else None,
                server_hostname=host if secure else None)
        except BaseException:
            sock.close()
            raise
        return conn

    def _keep(self, key: tuple[str, str, int], conn: _Connection) -> None:
        idle = self._idle.get(key)
        if idle is None:
            if len(self._idle) >= self.HOSTS:  # the host kept first makes room
                for old in self._idle.pop(next(iter(self._idle))):
                    old.shut()
            idle = self._idle[key] = []
        if len(idle) < self.connections:
            idle.append(conn)
        else:
            conn.shut()

    def close(self) -> None:
        if self._held is not None:
            self._held.stop()
            self._held = None
        idle, self._idle = self._idle, {}
        for conns in idle.values():
            for conn in conns:
                conn.transport.close()

    async def __aenter__(self) -> Self:
        return self

    async def __aexit__(self, *exc) -> None:
        self.close()
        await asyncio.sleep(0)  # the transports close on the loop's next turn
