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
import select
import socket
import ssl
import threading
import time
import zlib
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import UTC, datetime
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
    hundreds of requests a second would otherwise start as many timer threads."""

    GRAIN = 0.05  # seconds

    def __init__(self):
        self._heap: list[tuple[float, int, _Request]] = []
        self._order = itertools.count()
        self._wake = threading.Condition()
        self._thread: threading.Thread | None = None
        self._stopped = False

    def watch(self, request: _Request) -> None:
        with self._wake:
            heapq.heappush(self._heap, (request.ends, next(self._order), request))
            if self._thread is None:
                self._thread = threading.Thread(target=self._run, daemon=True,
                                                name="outbound-watchdog")
                self._thread.start()
            elif len(self._heap) == 1:
                self._wake.notify()

    def _run(self) -> None:
        with self._wake:
            while not self._stopped:
                now = time.monotonic()
                while self._heap and self._heap[0][0] <= now:
                    heapq.heappop(self._heap)[2]._expire()  # a finished one ignores it
                # At most a wake-up per GRAIN: at hundreds of requests a second, one per
                # request would cost the crawl more than a deadline kept GRAIN late.
                self._wake.wait(max(self._heap[0][0] - now, self.GRAIN) if self._heap else None)

    def stop(self) -> None:
        with self._wake:
            self._stopped = True
            self._wake.notify()


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


def _connect(scheme: str, host: str, port: int, timeout: float,
             tls: ssl.SSLContext) -> socket.socket:
    """A Crawler's new connection, through the guard (`_open`); for https, the TLS socket,
    which takes the descriptor over: it is the one the deadline must shut, during the
    handshake too."""
    sock = _open(host, port, timeout)
    if scheme == "http":
        return sock
    secure = tls.wrap_socket(sock, server_hostname=host, do_handshake_on_connect=False)
    try:
        _current.get().opened(secure)
        secure.do_handshake()
    except BaseException:
        secure.close()
        raise
    return secure


# A request target is sent percent-encoded as urllib3 sent it: only these as they are.
_TARGET_SAFE = "/%:@!$&'()*+,;=-._~?"
_UNSAFE_TARGET = re.compile(r"[^A-Za-z0-9/%:@!$&'()*+,;=\-._~?]")
_UNSAFE_VALUE = re.compile(r"[\x00\r\n]")  # what would end a header line early
# The usual URL, read without urlsplit (a twentieth of a 304's cost): a scheme and host in
# lower case, a port, no white space. Anything else goes through urlsplit.
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


class _Answer(http.client.HTTPResponse):
    """http.client's answer (its framing: chunks, Content-Length, HEAD, 1xx, 204, 304, when
    the connection closes) with the headers read into a `_Headers` rather than the email
    package's message, which was a third of what a 304 cost."""

    def begin(self) -> None:
        while True:
            version, status, reason = self._read_status()
            if not 100 <= status < 200 or status == 101:
                break
            _read_head(self.fp)  # 100 Continue, 103 Early Hints: the answer comes after
        self.code = self.status = status
        self.reason = reason.strip()
        if version in ("HTTP/1.0", "HTTP/0.9"):
            self.version = 10
        elif version.startswith("HTTP/1."):
            self.version = 11
        else:
            raise http.client.UnknownProtocol(version)
        self.headers = self.msg = _read_head(self.fp)
        self.chunked = (self.headers.get("transfer-encoding") or "").lower() == "chunked"
        self.chunk_left = None
        self.will_close = self._check_close()
        self.length = None
        length = self.headers.get("content-length")
        if length and not self.chunked:
            try:
                self.length = int(length.split(",")[0])  # the first, as http.client reads it
            except ValueError:
                self.length = None
            if self.length is not None and self.length < 0:
                self.length = None
        if status in (204, 304) or 100 <= status < 200 or self._method == "HEAD":
            self.length = 0
        if not self.will_close and not self.chunked and self.length is None:
            self.will_close = True  # the body ends when the connection does

    def complete(self) -> bool:
        """Whether the whole body was read (the connection can take the next request)."""
        return self.isclosed() or (not self.chunked and self.length == 0)


def _read_head(fp) -> _Headers:
    """The header lines up to the blank one, as http.client reads them (lines and their
    number limited), into a `_Headers`; a folded line continues the one before."""
    headers, name = _Headers(), None
    for _ in range(101):
        line = fp.readline(65537)
        if len(line) > 65536:
            raise http.client.LineTooLong("header line")
        if line in (b"\r\n", b"\n", b""):
            return headers
        text = line.decode("iso-8859-1")
        if text[0] in " \t":
            if name is not None:
                dict.__setitem__(headers, name, f"{dict.get(headers, name)} {text.strip()}")
            continue
        name, colon, value = text.partition(":")
        if not colon:
            name = None
            continue
        name, value = name.strip().lower(), value.strip()
        old = dict.get(headers, name)
        dict.__setitem__(headers, name, value if old is None else f"{old}, {value}")
    raise http.client.HTTPException("got more than 100 headers")


def _body(response: _Answer, limit: int) -> bytes:
    """At most `limit` bytes of the answer's body, gzip or deflate decoded as it is read (a
    small answer that decodes to gigabytes stops at `limit`); IncompleteRead when the peer
    closed before the length it announced."""
    coding = (response.headers.get("content-encoding") or "").strip().lower()
    if coding not in ("gzip", "x-gzip", "deflate"):
        body = response.read(limit)
        ended = len(body) < limit  # a read returns less only at the end
    else:
        decoder = zlib.decompressobj(16 + zlib.MAX_WBITS if coding != "deflate"
                                     else zlib.MAX_WBITS)
        out, first, ended = bytearray(), True, False
        while len(out) < limit and not decoder.eof:
            chunk = decoder.unconsumed_tail or response.read(65536)
            if not chunk:
                ended = True
                break
            try:
                out += decoder.decompress(chunk, limit - len(out))
            except zlib.error:
                if not (first and coding == "deflate"):
                    raise
                decoder = zlib.decompressobj(-zlib.MAX_WBITS)  # deflate without its header
                out += decoder.decompress(chunk, limit - len(out))
            first = False
        body = bytes(out)
    if ended and not response.chunked and response.length:
        raise http.client.IncompleteRead(body, response.length)
    return body


class Crawler:
    """Many requests to a site over kept-alive connections, each under the same rules as
    `send` (allowed addresses checked on every connection, a redirect's too; the policy's
    total deadline; no redirects followed; answers capped at `max_bytes`); safe to share
    between threads. Close it when done.

    Sockets kept per host and http.client's framing of answers, without urllib3's or
    requests' pools and request objects on top: a verification run makes a thousand requests
    a second, most answered 304, and their work per request cost more than the answer."""

    HOSTS = 8  # hosts whose idle connections are kept

    def __init__(self, policy: Policy, user_agent: str, max_bytes: int = 4 << 20,
                 connections: int = 10):
        self.policy, self.max_bytes, self.connections = policy, max_bytes, connections
        self.headers = {"User-Agent": user_agent, "Accept-Encoding": "gzip, deflate",
                        "Accept": "*/*"}
        self._idle: dict[tuple[str, str, int], list[socket.socket]] = {}
        self._lock = threading.Lock()
        self._closed = False
        self._tls = ssl.create_default_context()
        self._watchdog = _Watchdog()

    def request(self, method: str, url: str,
                headers: Mapping[str, str] | None = None) -> Page:
        """One request; OutboundError (no status) when no answer came within the deadline."""
        parts = _parts(url)
        if parts is None:
            raise OutboundError(f"{url!r} is not an http:// or https:// URL without a user "
                                "name or password", permanent=True)
        key, target = parts
        lines = [f"{method} {target} HTTP/1.1", f"Host: {_host_header(*key)}"]
        for name, value in {**self.headers, **(headers or {})}.items():
            lines.append(f"{name}: {value}")
        seconds = self.policy.timeout
        with _Request(self.policy, seconds, self._watchdog) as request:
            try:
                if _UNSAFE_VALUE.search("".join(lines)):
                    raise ValueError("a header value that would end its line early")
                head = ("\r\n".join(lines) + "\r\n\r\n").encode("latin-1")
                status, found, body = self._exchange(request, method, key, head)
            except (http.client.HTTPException, OSError, ValueError, zlib.error) as exc:
                raise _failure(exc, request, url, seconds) from None
        return Page(url, status, found, body)

    def _exchange(self, request: _Request, method: str, key: tuple[str, str, int],
                  head: bytes) -> tuple[int, _Headers, bytes]:
        sock, reused = self._take(key, request)
        while True:
            response = None
            try:
                sock.sendall(head)
                response = _Answer(sock, method=method)
                response.begin()
                break
            except BaseException as exc:
                if response is not None:
                    response.close()
                sock.close()
                # RemoteDisconnected is a ConnectionResetError too.
                if not reused or request.expired or \
                        not isinstance(exc, ConnectionResetError | BrokenPipeError):
                    raise
            # The host closed it while it was idle: once more, on a new connection.
            sock, reused = _connect(*key, self.policy.timeout, self._tls), False
        try:
            body = b"" if method == "HEAD" else _body(response, self.max_bytes)
        except BaseException:
            sock.close()
            raise
        finally:
            response.close()  # its file: the socket stays open, unless closed above
        if request.expired:  # cut off at the deadline: what was read may look complete
            sock.close()
            raise TimeoutError
        if response.complete() and not response.will_close:
            self._give(key, sock)
        else:
            sock.close()  # the rest is not wanted, or the host closes it
        return response.status, response.headers, body

    def _take(self, key: tuple[str, str, int],
              request: _Request) -> tuple[socket.socket, bool]:
        """An idle connection to the host (put under the request's deadline), or a new one."""
        while True:
            with self._lock:
                idle = self._idle.get(key)
                sock = idle.pop() if idle else None
            if sock is None:
                return _connect(*key, self.policy.timeout, self._tls), False
            if not _dropped(sock):
                request.opened(sock)
                sock.settimeout(min(self.policy.timeout, request.remaining()))
                return sock, True
            sock.close()

    def _give(self, key: tuple[str, str, int], sock: socket.socket) -> None:
        with self._lock:
            idle = None if self._closed else self._idle.get(key)
            if idle is None and not self._closed:
                if len(self._idle) >= self.HOSTS:  # the host kept first makes room
                    for old in self._idle.pop(next(iter(self._idle))):
                        old.close()
                idle = self._idle[key] = []
            if idle is not None and len(idle) < self.connections:
                idle.append(sock)
                return
        sock.close()

    def close(self) -> None:
        with self._lock:
            self._closed = True
            idle, self._idle = self._idle, {}
        for socks in idle.values():
            for sock in socks:
                sock.close()
        self._watchdog.stop()

    def __enter__(self) -> Crawler:
        return self

    def __exit__(self, *exc) -> None:
        self.close()


def _dropped(sock: socket.socket) -> bool:
    """Whether an idle kept-alive connection was closed by its host (or has something nobody
    asked for): it is readable. Checked before it is used again."""
    try:
        poller = select.poll()  # not select(): it cannot watch a descriptor past 1023
        poller.register(sock, select.POLLIN)
        return bool(poller.poll(0))
    except (OSError, ValueError):
        return True
