"""Every request this server sends out (announcements, pre-flight checks, imports from a URL,
Search Console's token): one module with the rules they all follow, and the error that says
whether a retry can help.

- Only addresses the operator allows: a name is resolved and every address it has must be a
  public one (not loopback, private, link-local, multicast or reserved) unless it is in
  OUTBOUND_ALLOW; the connection is made to the address that was checked, so a name that
  resolves differently a moment later (DNS rebinding) changes nothing.
- A total deadline per request, whatever the peer does: a server that drips a byte a second
  has its connection shut when the time is up.
- Redirects are never followed, a user name or password in a URL is refused, proxies and
  credentials from the environment are ignored, and what is read of an answer is capped.
"""

from __future__ import annotations

import asyncio
import contextvars
import email.utils
import http.client
import ipaddress
import re
import socket
import ssl
import threading
import time
import zlib
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Self
from urllib.parse import quote, urlsplit

import google.auth.exceptions
import google.auth.transport.requests
import requests
import urllib3
from requests.adapters import HTTPAdapter
from urllib3.connection import HTTPConnection, HTTPSConnection
from urllib3.connectionpool import HTTPConnectionPool, HTTPSConnectionPool

from webapp import outbound_reasons as reasons
from webapp.config import parse_networks
from webapp.errors import InvalidValue, rule_text
from webapp.said import Line, english

Network = ipaddress.IPv4Network | ipaddress.IPv6Network

USER_AGENT = "sitemap-dashboard/0.1 (self-hosted; announces sitemap changes)"
MAX_TOKEN_REPLY = 64 << 10  # a token address's answer (a few hundred bytes)
MAX_BODY = 1 << 20  # read at most this much of an answer: enough for robots.txt or an error
EXCERPT = 300
# Answers that say "not now": the same request may well succeed later.
RETRYABLE = {408, 425, 429, 500, 502, 503, 504}


@dataclass(frozen=True)
class Answer:
    status: int
    meaning: str
    body: str
    content_type: str = ""  # the Content-Type header, as sent
    said: dict | None = None  # the meaning in the reader's language (webapp.said), if known

    @property
    def excerpt(self) -> str:
        return excerpt(self.body)


class OutboundError(Exception):
    """A request that did not succeed; `permanent` when sending it again cannot help.

    `meaning` is English (the ledger's outcome, the CLI, the API); `said` the same reason in
    plain words for a reader's language (webapp.said), when there is one; `detail` the
    technical error for operators."""

    def __init__(self, meaning: str, *, status: int | None = None, body: str = "",
                 permanent: bool = False, retry_after: float | None = None,
                 said: Line | None = None, detail: str = ""):
        super().__init__(meaning)
        self.meaning, self.said, self.detail = meaning, said, detail
        self.status = status
        self.excerpt = excerpt(body)
        self.permanent = permanent
        self.retry_after = retry_after


def plain_reason(error: OutboundError) -> Line:
    """Why a request failed, in plain words for the reader's language (webapp.said); the
    English meaning, as it is, for an error that has none."""
    if error.said is not None:
        return error.said
    return {"text": error.meaning.removesuffix("; will try again")}


def excerpt(body: str) -> str:
    text = " ".join(body.split())
    return text if len(text) <= EXCERPT else text[: EXCERPT - 1] + "…"


def retry_after_seconds(value: str | None, now: datetime | None = None) -> float | None:
    """Retry-After as seconds: either a number of seconds or an HTTP date."""
    if not value:
        return None
    value = value.strip()
    if value.isdigit():
        return float(value)
    try:
        when = email.utils.parsedate_to_datetime(value)
    except (TypeError, ValueError):
        return None
    if when.tzinfo is None:
        when = when.replace(tzinfo=UTC)
    return max(0.0, (when - (now or datetime.now(UTC))).total_seconds())


@dataclass(frozen=True)
class Policy:
    """What one request may do: its total deadline, and the non-public networks it may reach."""

    timeout: float
    allow: tuple[Network, ...] = ()

    @classmethod
    def of(cls, config: Mapping) -> Policy:
        """The policy of the app's settings: NOTIFY_TIMEOUT and OUTBOUND_ALLOW."""
        return cls(config["NOTIFY_TIMEOUT"], parse_networks(config.get("OUTBOUND_ALLOW", ())))


Address = ipaddress.IPv4Address | ipaddress.IPv6Address


def refusal(ip: Address, allow: tuple[Network, ...]) -> str | None:
    """Why the server does not send to `ip`, or None: it is public, or the operator allows it."""
    seen = ip.ipv4_mapped if isinstance(ip, ipaddress.IPv6Address) and ip.ipv4_mapped else ip
    if any(seen in network for network in allow if network.version == seen.version):
        return None
    for kind, test in (("loopback", seen.is_loopback), ("link-local", seen.is_link_local),
                       ("multicast", seen.is_multicast), ("private", seen.is_private),
                       ("reserved", seen.is_reserved or seen.is_unspecified)):
        if test:
            return f"a {kind} address"
    return None if seen.is_global else "not a public address"


_current: contextvars.ContextVar[_Request] = contextvars.ContextVar("outbound_request")


class _Request:
    """One request in flight: its policy, the sockets it opened, and the watch on its deadline
    that shuts them when the time is up (a blocked read then returns at once): a timer
    thread."""

    def __init__(self, policy: Policy, seconds: float):
        self.policy, self.ends = policy, time.monotonic() + seconds
        self.refused: str | None = None
        self.refused_said: Line | None = None
        self.expired = self.finished = False
        self._sockets: list[socket.socket] = []
        self._lock = threading.Lock()
        self._timer = threading.Timer(seconds, self._expire)
        self._timer.daemon = True

    def remaining(self) -> float:
        return max(0.0, self.ends - time.monotonic())

    def opened(self, sock: socket.socket) -> None:
        with self._lock:
            self._sockets.append(sock)
            if self.expired:
                _shut(sock)

    def _expire(self) -> None:
        with self._lock:
            if self.finished:
                return
            self.expired = True
            for sock in self._sockets:
                _shut(sock)

    def __enter__(self) -> _Request:
        self._token = _current.set(self)
        self._timer.start()
        return self

    def __exit__(self, *exc) -> None:
        with self._lock:
            self.finished = True
        self._timer.cancel()
        _current.reset(self._token)


def _shut(sock: socket.socket) -> None:
    try:
        sock.shutdown(socket.SHUT_RDWR)
    except OSError:
        pass  # closed already


def _checked_address(host: str, port: int, request: _Request) -> tuple:
    """The address to connect to: every address the name has must be allowed (else one that
    is not could be chosen), and the one connected to is the one checked."""
    infos = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)
    refused = _refused(host, infos, request.policy.allow)
    if refused:
        request.refused, request.refused_said = refused
        raise OSError(request.refused)
    return infos[0]


def _refused(host: str, infos: list, allow: tuple[Network, ...]) -> tuple[str, Line] | None:
    """Why the server does not send to `host` (in English, and said), if an address the name
    resolves to (getaddrinfo's `infos`) is not allowed; else None."""
    for *_, sockaddr in infos:
        reason = refusal(ipaddress.ip_address(sockaddr[0].split("%")[0]), allow)
        if reason:
            # The address itself is not named: who reads the outcome need not learn how the
            # server's resolver sees an inside name.
            meaning = (f"{host} resolves to {reason}; the server sends nothing there unless "
                       "the operator allows it (OUTBOUND_ALLOW)")
            return meaning, reasons.not_allowed(host, reason.removeprefix("a ")
                                                .removesuffix(" address"))
    return None


def _open(host: str, port: int, timeout: float | None) -> socket.socket:
    """A TCP connection to `host` for the request in flight: made to the address checked, put
    under the request's deadline before it connects. OSError when refused or it fails."""
    request = _current.get(None)
    if request is None:  # every request made here sets one; nothing else may connect
        raise OSError("an outbound connection outside webapp.outbound")
    family, kind, protocol, _, sockaddr = _checked_address(host, port, request)
    sock = socket.socket(family, kind, protocol)
    request.opened(sock)
    try:
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        sock.settimeout(min(timeout or request.policy.timeout, request.remaining()))
        sock.connect(sockaddr)
    except OSError:
        sock.close()
        raise
    return sock


class _Guarded:
    """urllib3's connection, connecting only to a checked address, within the deadline."""

    def _new_conn(self) -> socket.socket:
        try:
            return _open(self._dns_host, self.port, self.timeout)
        except TimeoutError as exc:
            raise urllib3.exceptions.ConnectTimeoutError(self, f"connect to {self.host} "
                                                         "timed out") from exc
        except OSError as exc:
            raise urllib3.exceptions.NewConnectionError(self, str(exc)) from exc


class _GuardedHTTP(_Guarded, HTTPConnection):
    pass


class _GuardedHTTPS(_Guarded, HTTPSConnection):
    pass


class _Registering:
    """A pool whose kept-alive connections, when reused, are put under the deadline of the
    request that reuses them (a new one is, as it connects)."""

    def _get_conn(self, timeout=None):
        conn = super()._get_conn(timeout)
        request = _current.get(None)
        if request is not None and conn.sock is not None:
            request.opened(conn.sock)
        return conn


class _GuardedHTTPPool(_Registering, HTTPConnectionPool):
    ConnectionCls = _GuardedHTTP


class _GuardedHTTPSPool(_Registering, HTTPSConnectionPool):
    ConnectionCls = _GuardedHTTPS


def _session(pool_size: int = 10) -> requests.Session:
    """A session whose every connection goes through the guard, with nothing from the
    environment (proxies, .netrc). Callers pass allow_redirects=False."""
    session = requests.Session()
    session.trust_env = False
    session.headers["User-Agent"] = USER_AGENT
    adapter = HTTPAdapter(max_retries=0, pool_connections=pool_size, pool_maxsize=pool_size)
    adapter.poolmanager.pool_classes_by_scheme = {"http": _GuardedHTTPPool,
                                                  "https": _GuardedHTTPSPool}
    for scheme in ("http://", "https://"):
        session.mount(scheme, adapter)
    return session


@contextmanager
def _guarded(policy: Policy, url: str,
             seconds: float) -> Iterator[tuple[requests.Session, _Request]]:
    """A session and the request's watch, for one request to `url` within `seconds`."""
    if not is_http_url(url):
        raise OutboundError(f"{url!r} is not an http:// or https:// URL without a user name or "
                            "password", permanent=True, said=reasons.not_a_url(url))
    with _Request(policy, seconds) as request, _session() as session:
        yield session, request


def _failure(exc: Exception, request: _Request, url: str, seconds: float) -> OutboundError:
    """What went wrong, in words a site owner can act on: one of a few plain reasons
    (outbound_reasons), the technical error kept as `detail`."""
    if request.refused:
        return OutboundError(request.refused, permanent=True, said=request.refused_said)
    return _plain_failure(exc, url, seconds, request.expired)


def _plain_failure(exc: Exception, url: str, seconds: float, expired: bool) -> OutboundError:
    if expired or _timed_out(exc):
        return OutboundError(f"no answer within {seconds:g} s; will try again",
                             said=reasons.no_answer(seconds))
    plain = reasons.connect_failure(reasons.kind_of(exc), address(url))
    return OutboundError(f"{english([plain])}; will try again", said=plain,
                         detail=reasons.technical(exc))


def send(method: str, url: str, policy: Policy, *,
         meanings: Mapping[int, dict] | None = None,
         json: object = None, headers: Mapping[str, str] | None = None) -> Answer:
    """Send one request and return the answer when it is a success (2xx).

    Anything else raises OutboundError with what the status means for this engine (`meanings`),
    retryable for timeouts, connection failures, 408, 429 and 5xx. Redirects are not followed:
    the app only talks to addresses that someone configured.
    """
    meanings = meanings or {}
    with _guarded(policy, url, policy.timeout) as (session, request):
        try:
            with session.request(method, url, json=json, timeout=policy.timeout,
                                 allow_redirects=False, stream=True, headers=headers) as response:
                body = _read(response)
        except (requests.RequestException, urllib3.exceptions.HTTPError, OSError) as exc:
            raise _failure(exc, request, url, policy.timeout) from None
        if request.expired:  # cut off at the deadline: what was read may look complete
            raise _failure(TimeoutError(), request, url, policy.timeout)
    status = response.status_code
    # An engine's own meaning of its status says more than a generic word: said per reader
    # (a webapp.said item), in English in the ledger.
    plain = meanings.get(status)
    meaning = english([plain]) if plain is not None else _generic_meaning(response)
    if 200 <= status < 300:
        return Answer(status, meaning, body, response.headers.get("Content-Type", ""), plain)
    raise OutboundError(meaning, status=status, body=body, permanent=status not in RETRYABLE
                        and status < 500,
                        said=plain if plain is not None else
                        _generic_said(response) if 300 <= status < 400 else None,
                        retry_after=retry_after_seconds(response.headers.get("Retry-After")))


def fetch(url: str, policy: Policy, *, max_bytes: int) -> bytes:
    """GET a file (a sitemap to import) through the same rules, within ten times the policy's
    deadline (a file may be 50 MB), refusing one larger than `max_bytes`."""
    seconds = 10 * policy.timeout
    with _guarded(policy, url, seconds) as (session, request):
        try:
            with session.get(url, timeout=policy.timeout, allow_redirects=False,
                             stream=True) as response:
                if response.status_code != 200:
                    raise OutboundError(_generic_meaning(response), status=response.status_code,
                                        permanent=True, said=_generic_said(response))
                data = bytearray()
                for chunk in response.raw.stream(65536, decode_content=False):
                    data += chunk
                    if len(data) > max_bytes:
                        raise OutboundError(f"{url} is larger than {max_bytes} bytes",
                                            permanent=True,
                                            said=reasons.too_large(url, max_bytes))
        except (requests.RequestException, urllib3.exceptions.HTTPError, OSError,
                ValueError) as exc:
            raise _failure(exc, request, url, seconds) from None
        if request.expired:
            raise _failure(TimeoutError(), request, url, seconds)
        return bytes(data)


class _TokenRequest(google.auth.transport.requests.Request):
    """google-auth's transport on this module's rules: each request it makes is guarded and has
    the policy's deadline."""

    def __init__(self, policy: Policy):
        session = _session()
        session.max_redirects = 0  # google-auth follows redirects: make any one an error
        super().__init__(session)
        self.policy = policy

    def __call__(self, url, method="GET", body=None, headers=None, timeout=None, **kwargs):
        answer = None
        with _Request(self.policy, self.policy.timeout) as request:
            try:
                answer = super().__call__(url, method, body, headers,
                                          timeout=self.policy.timeout, stream=True, **kwargs)
                reply = answer._response.raw.read(MAX_TOKEN_REPLY + 1, decode_content=True)
            except google.auth.exceptions.TransportError as exc:
                # In the same words as every other request: not requests' nested repr.
                cause = exc.__cause__ if isinstance(exc.__cause__, Exception) else exc
                raise google.auth.exceptions.TransportError(
                    _failure(cause, request, url, self.policy.timeout).meaning) from None
            except (requests.RequestException, urllib3.exceptions.HTTPError) as exc:
                raise google.auth.exceptions.TransportError(
                    _failure(exc, request, url, self.policy.timeout).meaning) from None
            finally:
                if answer is not None:
                    answer._response.close()
        if len(reply) > MAX_TOKEN_REPLY:
            raise google.auth.exceptions.TransportError(
                f"the token address answered more than {MAX_TOKEN_REPLY // 1024} KB")
        # google-auth reads the body from memory: at most MAX_TOKEN_REPLY bytes were read.
        answer._response._content, answer._response._content_consumed = reply, True
        return answer


def token_transport(policy: Policy) -> google.auth.transport.requests.Request:
    """The transport google-auth gets an access token over (the signed grant goes to the
    token address and nowhere else: no redirects). Close its `session` when done."""
    return _TokenRequest(policy)


def _timed_out(exc: Exception) -> bool:
    # A timeout while reading the body arrives as a ConnectionError wrapping urllib3's error;
    # the Crawler's sockets raise TimeoutError itself.
    timeouts = (requests.Timeout, urllib3.exceptions.TimeoutError, TimeoutError)
    return isinstance(exc, timeouts) or any(
        isinstance(arg, urllib3.exceptions.TimeoutError) for arg in exc.args)


_SPACE = re.compile(r"\s")


def is_http_url(url: str) -> bool:
    """An address requests can be sent to: http(s), a host, a port in range, no user name or
    password, no white space."""
    return _parts(url) is not None


def endpoint_check(name: str) -> Callable[[str], str | None]:
    """The rule of a setting that names an address to send to (empty: the default one)."""

    def check(value: str) -> str | None:
        value = value.strip()
        if value and not is_http_url(value):
            raise InvalidValue(name, value, rule_text(
                "must be an http:// or https:// URL without a user name or password, or empty "
                "for the default"))
        return value or None

    return check


def address(url: str) -> str:
    """host[:port] of a URL, without any user name or password in it."""
    try:
        parts = urlsplit(url)
        return f"{parts.hostname}:{parts.port}" if parts.port else str(parts.hostname)
    except ValueError:
        return "an address that cannot be read"


def _read(response: requests.Response) -> str:
    data = b""
    for chunk in response.iter_content(65536):
        data += chunk
        if len(data) >= MAX_BODY:
            break
    try:
        return data[:MAX_BODY].decode(response.encoding or "utf-8", "replace")
    except LookupError:  # a charset Python does not know: the status is what matters
        return data[:MAX_BODY].decode("utf-8", "replace")


def _generic_said(response: requests.Response) -> Line:
    """What an answer that is not a success was, in plain words (the engine's own meaning of
    the status stays in the English `meaning`)."""
    status = response.status_code
    if 300 <= status < 400:
        return reasons.redirected(status, response.headers.get("Location", "?"))
    return reasons.answered(status)


def _generic_meaning(response: requests.Response) -> str:
    status = response.status_code
    reason = f"{status} {response.reason or ''}".strip()
    if 300 <= status < 400:
        return (f"{reason}: redirected to {response.headers.get('Location', '?')}; redirects "
                "are not followed, so configure that address instead")
    if status in RETRYABLE or status >= 500:
        return f"{reason}: the server is not answering now; will try again"
    if 200 <= status < 300:
        return reason
    return f"{reason}: refused; sending the same request again will not help"


@dataclass(frozen=True)
class Page:
    """A page as a crawler sees it, whatever its status (redirects are answers too): the
    headers (names looked up in lower case) and at most the first bytes of the body
    (`truncated` when there was more)."""

    url: str
    status: int
    headers: Mapping[str, str]
    body: bytes
    truncated: bool = False

    @property
    def location(self) -> str | None:
        return self.headers.get("location")

    @property
    def content_type(self) -> str:
        return self.headers.get("content-type", "")


def get_page(url: str, policy: Policy, *, max_bytes: int = MAX_BODY,
             user_agent: str | None = None) -> Page:
    """GET a page through the same rules and return whatever it answers (a redirect, a 404:
    the caller decides), reading at most `max_bytes` of its body within the deadline.

    Raises OutboundError only when there is no answer: refused, unreachable, out of time.
    """
    with _guarded(policy, url, policy.timeout) as (session, request):
        try:
            headers = {"User-Agent": user_agent} if user_agent else None
            with session.get(url, timeout=policy.timeout, allow_redirects=False, stream=True,
                             headers=headers) as response:
                data, truncated = bytearray(), False
                for chunk in response.iter_content(65536):
                    data += chunk
                    if len(data) > max_bytes:
                        truncated = True
                        break
        except (requests.RequestException, urllib3.exceptions.HTTPError, OSError) as exc:
            raise _failure(exc, request, url, policy.timeout) from None
        if request.expired:
            raise _failure(TimeoutError(), request, url, policy.timeout)
    return Page(url, response.status_code,
                {name.lower(): value for name, value in response.headers.items()},
                bytes(data[:max_bytes]), truncated)


# A request target is sent percent-encoded as urllib3 sent it: only these as they are.
_TARGET_SAFE = "/%:@!$&'()*+,;=-._~?"
_UNSAFE_TARGET = re.compile(r"[^A-Za-z0-9/%:@!$&'()*+,;=\-._~?]")
_UNSAFE_VALUE = re.compile(r"[\x00\r\n]")  # what would end a header line early
# The usual URL, read by a pattern rather than urlsplit (which costs several times as much):
# a scheme and host in lower case, a port, no white space. Anything else goes to urlsplit.
_PLAIN_URL = re.compile(
    r"(https?)://([a-z0-9.-]+)(?::(\d{1,5}))?(/[^?#\s]*)?(?:\?([^#\s]*))?(?:#\S*)?")


def _parts(url: str) -> tuple[tuple[str, str, int], str] | None:
    """(scheme, host, port) and the request target of a URL `is_http_url` accepts, or None."""
    plain = _PLAIN_URL.fullmatch(url)
    if plain and (plain[3] is None or int(plain[3]) <= 65535):
        scheme, host, port, path, query = plain.groups()
        return _place(scheme, host, int(port) if port else None, path, query)
    try:
        parts = urlsplit(url)
        port = parts.port
    except ValueError:
        return None
    if parts.scheme not in ("http", "https") or not parts.hostname or "@" in parts.netloc \
            or _SPACE.search(url):
        return None
    return _place(parts.scheme, parts.hostname, port, parts.path, parts.query)


def _place(scheme: str, host: str, port: int | None, path: str | None,
           query: str | None) -> tuple[tuple[str, str, int], str]:
    target = (path or "/") + (f"?{query}" if query else "")
    if _UNSAFE_TARGET.search(target):
        target = quote(target, safe=_TARGET_SAFE)
    return (scheme, host, port if port is not None else 443 if scheme == "https" else 80), target


def _host_header(scheme: str, host: str, port: int) -> str:
    name = host if host.isascii() else host.encode("idna").decode("ascii")
    name = f"[{name}]" if ":" in name else name
    return name if port == (443 if scheme == "https" else 80) else f"{name}:{port}"


class _Headers(dict):
    """An answer's headers: names in lower case, looked up in any case; a header sent more
    than once is one value, its values joined by ", "."""

    def get(self, name: str, default=None):
        return super().get(name.lower(), default)

    def __getitem__(self, name: str):
        return super().__getitem__(name.lower())

    def __contains__(self, name: object) -> bool:
        return isinstance(name, str) and super().__contains__(name.lower())


def _header_lines(headers: Mapping[str, str]) -> str:
    """Header lines as sent; ValueError for a value that would end its line early."""
    for value in headers.values():
        if _UNSAFE_VALUE.search(value):
            raise ValueError("a header value that would end its line early")
    return "".join(f"{name}: {value}\r\n" for name, value in headers.items())


class _Connection(asyncio.Protocol):
    """One of a Crawler's connections: what arrives while an answer is awaited waits in
    `buffer` until it is read; `closed` once the peer closed it (or it was lost, or sent
    what nobody asked for while idle): a closed connection is not used again."""

    def __init__(self):
        self.transport: asyncio.Transport | None = None
        self.buffer = bytearray()
        self.closed = False
        self._waiter: asyncio.Future | None = None
        self._wanted = 0

    def connection_made(self, transport) -> None:
        self.transport = transport

    def data_received(self, data: bytes) -> None:
        if self._waiter is None:  # idle: nobody asked for it (nor will it pile up here)
            self.shut()
            return
        self.buffer += data
        if len(self.buffer) >= self._wanted:
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

    async def more(self, wanted: int = 0) -> None:
        """Until more bytes arrived (`wanted` in all, if given), or the peer closed."""
        if self.closed:
            return
        self._wanted = max(wanted, len(self.buffer) + 1)
        self._waiter = asyncio.get_running_loop().create_future()
        try:
            await self._waiter
        finally:
            self._waiter = None

    def take(self, size: int) -> bytes:
        data = bytes(self.buffer[:size])
        del self.buffer[:size]
        return data

    async def line(self) -> bytes:
        """The next line (a chunk's size, a trailer), without its end."""
        while (end := self.buffer.find(b"\n")) < 0:
            if len(self.buffer) > _MAX_LINE:
                raise http.client.LineTooLong("chunk size or trailer")
            if self.closed:
                raise http.client.IncompleteRead(b"")
            await self.more()
        return self.take(end + 1).rstrip(b"\r\n")

    def shut(self) -> None:
        """Close it now (the peer is not waited for: a dripping one sees it at once)."""
        self.closed = True
        if self.transport is not None:
            self.transport.abort()


_MAX_LINE = 65536  # as http.client: a longer status, header or chunk-size line is refused
_HEAD_END = re.compile(rb"\n\r?\n")


async def _head(conn: _Connection) -> tuple[str, int, list[str]]:
    """The version, status and header lines of the next answer on `conn` (interim 1xx
    answers skipped), as http.client reads them."""
    while True:
        searched = 0
        while not (end := _HEAD_END.search(conn.buffer, max(0, searched - 2))):
            searched = len(conn.buffer)
            if searched > 101 * _MAX_LINE:
                raise http.client.LineTooLong("header line")
            if conn.closed:
                if not conn.buffer:
                    raise http.client.RemoteDisconnected(
                        "Remote end closed connection without response")
                raise http.client.IncompleteRead(bytes(conn.buffer))
            await conn.more()
        text = conn.take(end.end()).decode("iso-8859-1")
        lines = text.replace("\r\n", "\n").rstrip("\n").split("\n")
        if len(lines) > 101:
            raise http.client.HTTPException("got more than 100 headers")
        if len(text) > _MAX_LINE and max(map(len, lines)) > _MAX_LINE:
            raise http.client.LineTooLong("status or header line")
        try:
            version, status, *_ = lines[0].split(None, 2)
            status = int(status)
        except ValueError:
            raise http.client.BadStatusLine(lines[0]) from None
        if not version.startswith("HTTP/") or not 100 <= status <= 999:
            raise http.client.BadStatusLine(lines[0])
        if not 100 <= status < 200 or status == 101:  # 100 Continue, 103 Early Hints: skipped
            return version, status, lines[1:]


def _headers(lines: list[str]) -> dict[str, str]:
    """Header lines as {name in lower case: value}; a header sent more than once is one
    value, its values joined by ", "; a folded line continues the one before."""
    found, name = {}, None
    for line in lines:
        if line[0] in " \t":
            if name is not None:
                found[name] = f"{found[name]} {line.strip()}"
            continue
        name, colon, value = line.partition(":")
        if not colon:
            name = None
            continue
        name, value = name.strip().lower(), value.strip()
        found[name] = f"{found[name]}, {value}" if name in found else value
    return found


def _keeps_open(version: str, headers: dict[str, str]) -> bool:
    """Whether the peer keeps the connection open after this answer (http.client's rules)."""
    connection = (headers.get("connection") or "").lower()
    if version != "HTTP/1.0" and version.startswith("HTTP/1."):
        return "close" not in connection
    return bool(headers.get("keep-alive")) or "keep-alive" in connection \
        or "keep-alive" in (headers.get("proxy-connection") or "").lower()


async def _answer(conn: _Connection, method: str,
                  limit: int) -> tuple[int, _Headers, bytes, bool]:
    """The next answer on `conn`: its status, headers, at most `limit` bytes of its body
    (gzip or deflate decoded; a small answer that decodes to gigabytes stops at `limit`),
    and whether the connection can take the next request."""
    version, status, lines = await _head(conn)
    headers = _headers(lines)
    reusable = _keeps_open(version, headers)
    chunked = (headers.get("transfer-encoding") or "").lower() == "chunked"
    length = None
    if (value := headers.get("content-length")) and not chunked:
        try:
            length = int(value.split(",")[0])  # the first, as http.client reads it
        except ValueError:
            length = None
        if length is not None and length < 0:
            length = None
    if status in (204, 304) or method == "HEAD":
        body = b""
    elif chunked:
        body, whole = await _chunks(conn, limit)
        reusable = reusable and whole
    elif length is not None:
        want = min(length, limit)
        while len(conn.buffer) < want and not conn.closed:
            await conn.more(want)
        if len(conn.buffer) < want:
            raise http.client.IncompleteRead(bytes(conn.buffer), want - len(conn.buffer))
        body, reusable = conn.take(want), reusable and length <= limit
    else:  # the body ends when the connection does
        while len(conn.buffer) < limit and not conn.closed:
            await conn.more(limit)
        body, reusable = conn.take(limit), False
    coding = (headers.get("content-encoding") or "").strip().lower()
    if body and coding in ("gzip", "x-gzip", "deflate"):
        body = _decoded(body, coding, limit)
    return status, _Headers(headers), body, reusable and not conn.closed and not conn.buffer


async def _chunks(conn: _Connection, limit: int) -> tuple[bytes, bool]:
    """A chunked body, at most `limit` bytes of it, and whether it was read to its end."""
    body = bytearray()
    while True:
        try:
            size = int((await conn.line()).split(b";")[0].strip(), 16)
            if size < 0:
                raise ValueError(size)
        except ValueError:
            raise http.client.IncompleteRead(bytes(body)) from None
        if size == 0:
            while await conn.line():  # trailers, up to the blank line
                pass
            return bytes(body), True
        capped = size >= limit - len(body)  # the rest of the body is not read
        want = limit - len(body) if capped else size + 2  # the chunk and its line end
        while len(conn.buffer) < want and not conn.closed:
            await conn.more(want)
        if len(conn.buffer) < want:
            raise http.client.IncompleteRead(bytes(body))
        body += conn.take(want)[:size]
        if capped:
            return bytes(body), False


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
    which the connection is shut; answers capped at `max_bytes`). Close it when done.

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
        self._tls = ssl.create_default_context()
        if _UNSAFE_VALUE.search(user_agent):
            raise ValueError("a User-Agent that would end its header line early")
        self._lines = _header_lines(self.headers)

    async def request(self, method: str, url: str,
                      headers: Mapping[str, str] | None = None) -> Page:
        """One request; OutboundError (no status) when no answer came within the deadline."""
        parts = _parts(url)
        if parts is None:
            raise OutboundError(f"{url!r} is not an http:// or https:// URL without a user "
                                "name or password", permanent=True)
        key, target = parts
        seconds = self.policy.timeout
        try:
            if not headers:
                lines = self._lines
            elif any(name in self.headers for name in headers):
                lines = _header_lines({**self.headers, **headers})
            else:
                lines = self._lines + _header_lines(headers)
            head = (f"{method} {target} HTTP/1.1\r\nHost: {_host_header(*key)}\r\n"
                    f"{lines}\r\n").encode("latin-1")
            async with asyncio.timeout(seconds):
                status, found, body = await self._exchange(method, key, head)
        except OutboundError:
            raise
        except (http.client.HTTPException, OSError, ValueError, zlib.error) as exc:
            # TimeoutError (an OSError) is the deadline's: the connection was shut.
            raise _plain_failure(exc, url, seconds, isinstance(exc, TimeoutError)) from None
        return Page(url, status, found, body)

    async def _exchange(self, method: str, key: tuple[str, str, int],
                        head: bytes) -> tuple[int, _Headers, bytes]:
        conn, reused = self._reuse(key)
        while True:
            try:
                if conn is None:
                    conn = await self._connect(key)
                conn.transport.write(head)
                status, found, body, reusable = await _answer(conn, method, self.max_bytes)
                break
            except BaseException as exc:  # the deadline's cancellation too
                if conn is not None:
                    conn.shut()
                # RemoteDisconnected is a ConnectionResetError too.
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
            if not conn.closed and not conn.buffer:
                return conn, True
            conn.shut()
        return None, False

    async def _connect(self, key: tuple[str, str, int]) -> _Connection:
        """A new connection, to the address checked (every one the name has is allowed)."""
        scheme, host, port = key
        loop = asyncio.get_running_loop()
        infos = await loop.getaddrinfo(host, port, type=socket.SOCK_STREAM)
        refused = _refused(host, infos, self.policy.allow)
        if refused:
            raise OutboundError(refused[0], permanent=True, said=refused[1])
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
        idle, self._idle = self._idle, {}
        for conns in idle.values():
            for conn in conns:
                conn.transport.close()

    async def __aenter__(self) -> Self:
        return self

    async def __aexit__(self, *exc) -> None:
        self.close()
        await asyncio.sleep(0)  # the transports close on the loop's next turn
