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

import contextvars
import email.utils
import heapq
import http.client
import ipaddress
import itertools
import re
import socket
import ssl
import threading
import time
import zlib
from collections import deque
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import UTC, datetime
from urllib.parse import SplitResult, urlsplit

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
    that shuts them when the time is up (a blocked read then returns at once). The watch is a
    timer thread of its own, or a `_Watchdog` shared by many requests."""

    def __init__(self, policy: Policy, seconds: float, watchdog: _Watchdog | None = None):
        self.policy, self.ends = policy, time.monotonic() + seconds
        self.refused: str | None = None
        self.refused_said: Line | None = None
        self.expired = self.finished = False
        self._sockets: list[socket.socket] = []
        self._lock = threading.Lock()
        self._watchdog = watchdog
        self._timer = None if watchdog else threading.Timer(seconds, self._expire)
        if self._timer:
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
        if self._timer:
            self._timer.start()
        else:
            self._watchdog.watch(self)
        return self

    def __exit__(self, *exc) -> None:
        with self._lock:
            self.finished = True
        if self._timer:
            self._timer.cancel()
        _current.reset(self._token)


class _Watchdog:
    """One thread that shuts the sockets of requests past their deadline: for a crawler, whose
    thousand requests a second would otherwise start as many timer threads.

    A request is handed over without a lock (a deque's append is atomic) and the thread looks
    every GRAIN: at a thousand requests a second from eight threads, a lock and a wake-up per
    request cost the crawl more than a deadline kept GRAIN late."""

    GRAIN = 0.05  # seconds
    KEEP = 4096  # finished requests dropped from the heap whenever it holds more

    def __init__(self):
        self._incoming: deque[_Request] = deque()
        self._heap: list[tuple[float, int, _Request]] = []
        self._order = itertools.count()
        self._stopped = threading.Event()
        self._start = threading.Lock()
        self._thread: threading.Thread | None = None

    def watch(self, request: _Request) -> None:
        self._incoming.append(request)
        if self._thread is None:
            with self._start:
                if self._thread is None:
                    self._thread = threading.Thread(target=self._run, daemon=True,
                                                    name="outbound-watchdog")
                    self._thread.start()

    def _run(self) -> None:
        heap = self._heap
        while not self._stopped.wait(self.GRAIN):
            while self._incoming:
                request = self._incoming.popleft()
                heapq.heappush(heap, (request.ends, next(self._order), request))
            now = time.monotonic()
            while heap and heap[0][0] <= now:
                heapq.heappop(heap)[2]._expire()  # a finished one ignores it
            if len(heap) > self.KEEP:  # most have long finished: keep memory flat
                heap[:] = [entry for entry in heap if not entry[2].finished]
                heapq.heapify(heap)

    def stop(self) -> None:
        self._stopped.set()


def _shut(sock: socket.socket) -> None:
    try:
        sock.shutdown(socket.SHUT_RDWR)
    except OSError:
        pass  # closed already


def _checked_address(host: str, port: int, request: _Request) -> tuple:
    """The address to connect to: every address the name has must be allowed (else one that
    is not could be chosen), and the one connected to is the one checked."""
    infos = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)
    for *_, sockaddr in infos:
        reason = refusal(ipaddress.ip_address(sockaddr[0].split("%")[0]), request.policy.allow)
        if reason:
            # The address itself is not named: who reads the outcome need not learn how the
            # server's resolver sees an inside name.
            request.refused = (f"{host} resolves to {reason}; the server sends nothing there "
                               "unless the operator allows it (OUTBOUND_ALLOW)")
            request.refused_said = reasons.not_allowed(
                host, reason.removeprefix("a ").removesuffix(" address"))
            raise OSError(request.refused)
    return infos[0]


class _Guarded:
    """urllib3's connection, connecting only to a checked address, within the deadline."""

    def _new_conn(self) -> socket.socket:
        request = _current.get(None)
        if request is None:  # every session made here sets one; nothing else may use these
            raise OSError("an outbound connection outside webapp.outbound")
        family, kind, protocol, _, sockaddr = _checked_address(self._dns_host, self.port,
                                                               request)
        sock = socket.socket(family, kind, protocol)
        request.opened(sock)
        try:
            for option in self.socket_options or ():
                sock.setsockopt(*option)
            sock.settimeout(min(self.timeout or request.policy.timeout, request.remaining()))
            sock.connect(sockaddr)
        except OSError as exc:
            sock.close()
            if isinstance(exc, TimeoutError):
                raise urllib3.exceptions.ConnectTimeoutError(self, f"connect to {self.host} "
                                                             "timed out") from exc
            raise urllib3.exceptions.NewConnectionError(self, str(exc)) from exc
        return sock


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
    if request.expired or _timed_out(exc):
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
    # the crawler's sockets time out at the request's deadline (TimeoutError).
    return isinstance(exc, (requests.Timeout, urllib3.exceptions.TimeoutError,
                            TimeoutError)) or any(
        isinstance(arg, urllib3.exceptions.TimeoutError) for arg in exc.args)


_SPACE = re.compile(r"\s")  # what str.isspace() says is white space


def is_http_url(url: str) -> bool:
    """An address requests can be sent to: http(s), a host, a port in range, no user name or
    password, no white space."""
    return _http_parts(url) is not None


def _http_parts(url: str) -> SplitResult | None:
    """The parts of an address requests can be sent to (is_http_url), or None."""
    try:
        parts = urlsplit(url)
        parts.port  # noqa: B018 - raises on a port out of range
    except ValueError:  # an unclosed [IPv6] host, a port that is not a number or out of range
        return None
    if parts.scheme in ("http", "https") and parts.hostname and "@" not in parts.netloc \
            and not _SPACE.search(url):
        return parts
    return None


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
class _Headers(dict):
    """An answer's headers by lower-case name, repeated ones joined with ", " (as urllib3
    joins them): `get("X-Robots-Tag")` sees every value the server sent."""

    @classmethod
    def of(cls, message: http.client.HTTPMessage) -> _Headers:
        headers = cls()
        for name, value in message.items():
            key = name.lower()
            headers[key] = f"{headers[key]}, {value}" if key in headers else value
        return headers

    def get(self, name: str, default=None):
        return dict.get(self, name.lower(), default)

    def __getitem__(self, name: str) -> str:
        return dict.__getitem__(self, name.lower())

    def __contains__(self, name: object) -> bool:
        return isinstance(name, str) and dict.__contains__(self, name.lower())


def _guarded_socket(address: tuple[str, int], timeout: float, source_address=None,
                    **_) -> socket.socket:
    """http.client's connect, to a checked address within the deadline of the request."""
    request = _current.get(None)
    if request is None:
        raise OSError("an outbound connection outside webapp.outbound")
    family, kind, protocol, _, sockaddr = _checked_address(*address, request)
    sock = socket.socket(family, kind, protocol)
    request.opened(sock)
    try:
        sock.settimeout(min(timeout, request.remaining()))
        sock.connect(sockaddr)
    except BaseException:
        sock.close()
        raise
    return sock


class _CrawlHTTP(http.client.HTTPConnection):
    def __init__(self, host: str, port: int | None = None):
        super().__init__(host, port)
        self._create_connection = _guarded_socket


class _CrawlHTTPS(http.client.HTTPSConnection):
    def __init__(self, host: str, port: int | None = None):
        super().__init__(host, port, context=ssl.create_default_context())
        self._create_connection = _guarded_socket


# A kept-alive connection the server closed while it was idle fails like this on reuse: the
# request is asked again once, on a new connection (GET and HEAD are safe to repeat).
_STALE = (http.client.RemoteDisconnected, ConnectionResetError, BrokenPipeError)


class Crawler:
    """Many requests to a site over kept-alive connections, each under the same rules as
    `send` (allowed addresses, the policy's total deadline, no redirects followed, answers
    capped at `max_bytes`); safe to share between threads, each of which keeps its own
    connection per host (so as many threads as connections at most). Close it when done.

    http.client without urllib3 or requests on top: a verification run makes a thousand
    requests a second, and their work per request (pools, header dicts, retries) cost three
    times the request itself; an unchanged page's 304 is then mostly that work."""

    def __init__(self, policy: Policy, user_agent: str, max_bytes: int = 4 << 20,
                 connections: int = 10):
        self.policy, self.max_bytes = policy, max_bytes
        self.headers = {"User-Agent": user_agent, "Accept-Encoding": "gzip", "Accept": "*/*"}
        self.connections = connections  # the threads sharing it keep one each per host
        self._local = threading.local()
        self._opened: list[http.client.HTTPConnection] = []
        self._lock = threading.Lock()
        self._watchdog = _Watchdog()

    def request(self, method: str, url: str,
                headers: Mapping[str, str] | None = None) -> Page:
        """One request; OutboundError (no status) when no answer came within the deadline."""
        parts = _http_parts(url)
        if parts is None:
            raise OutboundError(f"{url!r} is not an http:// or https:// URL without a user "
                                "name or password", permanent=True)
        seconds = self.policy.timeout
        with _Request(self.policy, seconds, self._watchdog) as request:
            try:
                page = self._exchange(request, method, url, parts,
                                      {**self.headers, **(headers or {})})
            except (http.client.HTTPException, OSError, zlib.error) as exc:
                raise _failure(exc, request, url, seconds) from None
            if request.expired:
                raise _failure(TimeoutError(), request, url, seconds)
        return page

    def _exchange(self, request: _Request, method: str, url: str, parts: SplitResult,
                  headers: dict[str, str]) -> Page:
        target = (parts.path or "/") + (f"?{parts.query}" if parts.query else "")
        conn = self._connection(parts.scheme, parts.hostname, parts.port)
        for fresh in (conn.sock is None, True):
            if conn.sock is None:
                conn.timeout = request.remaining()
                conn.connect()
            request.opened(conn.sock)  # under this request's deadline, new or kept alive
            conn.sock.settimeout(max(request.remaining(), 0.001))
            try:
                conn.request(method, target, headers=headers)
                response = conn.getresponse()
                break
            except _STALE:
                conn.close()
                if fresh:
                    raise
        try:
            body, whole = self._read(response, method)
        finally:
            if not whole or response.will_close or not response.isclosed():
                conn.close()  # the rest is not wanted, or cannot be told from the next answer
        return Page(url, response.status, _Headers.of(response.msg), body)

    def _read(self, response: http.client.HTTPResponse, method: str) -> tuple[bytes, bool]:
        """At most `max_bytes` of the body, gzip decoded; and whether that was all of it."""
        if method == "HEAD":
            return b"", True
        if (response.getheader("Content-Encoding") or "").strip().lower() not in ("gzip",
                                                                                  "x-gzip"):
            body = response.read(self.max_bytes)
            return body, len(body) < self.max_bytes
        decoder, body = zlib.decompressobj(16 + zlib.MAX_WBITS), bytearray()
        while len(body) < self.max_bytes:
            chunk = decoder.unconsumed_tail or response.read(65536)
            if not chunk:
                return bytes(body), True
            body += decoder.decompress(chunk, self.max_bytes - len(body))
        return bytes(body), False

    def _connection(self, scheme: str, host: str, port: int | None) -> http.client.HTTPConnection:
        kept = self._local.__dict__.setdefault("connections", {})
        key = (scheme, host, port)
        conn = kept.get(key)
        if conn is None:
            conn = kept[key] = (_CrawlHTTPS if scheme == "https" else _CrawlHTTP)(host, port)
            with self._lock:
                self._opened.append(conn)
        return conn

    def close(self) -> None:
        with self._lock:
            for conn in self._opened:
                conn.close()
            self._opened.clear()
        self._watchdog.stop()

    def __enter__(self) -> Crawler:
        return self

    def __exit__(self, *exc) -> None:
        self.close()
