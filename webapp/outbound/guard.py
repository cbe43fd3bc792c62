"""Where a request may go and for how long: the policy (a total deadline, the non-public
networks the operator allows), the check of every address a name resolves to, and the watch
that shuts a request's sockets when its deadline is up.

The connection is made to the address that was checked, so a name that resolves differently a
moment later (DNS rebinding) changes nothing.
"""

from __future__ import annotations

import contextvars
import ipaddress
import socket
import threading
import time
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Self

from webapp.config import parse_networks
from webapp.outbound import reasons
from webapp.said import Line

Network = ipaddress.IPv4Network | ipaddress.IPv6Network
Address = ipaddress.IPv4Address | ipaddress.IPv6Address


@dataclass(frozen=True)
class Policy:
    """What one request may do: its total deadline, and the non-public networks it may reach."""

    timeout: float
    allow: tuple[Network, ...] = ()

    @classmethod
    def of(cls, config: Mapping) -> Policy:
        """The policy of the app's settings: NOTIFY_TIMEOUT and OUTBOUND_ALLOW."""
        return cls(config["NOTIFY_TIMEOUT"], parse_networks(config.get("OUTBOUND_ALLOW", ())))


# RFC 6052's well-known NAT64 prefix: a translator connects to the IPv4 address in the last 32 bits.
NAT64 = ipaddress.IPv6Network("64:ff9b::/96")


def refusal(ip: Address, allow: tuple[Network, ...]) -> str | None:
    """Why the server does not send to `ip`, or None: it is public, or the operator allows it.
    An IPv6 address that carries an IPv4 one is judged by that IPv4 address too: the host an
    IPv4-mapped or NAT64 address reaches is that address; the packets to a 6to4 or Teredo
    address go through the IPv4 hosts it names (a 6to4 router; a Teredo server and client)."""
    if isinstance(ip, ipaddress.IPv6Address):
        if ip.ipv4_mapped:
            return _refusal(ip.ipv4_mapped, allow)
        if ip in NAT64:
            return _refusal(ipaddress.IPv4Address(int(ip) & 0xFFFFFFFF), allow)
        for carried in (ip.sixtofour, *(ip.teredo or ())):
            reason = carried and _refusal(carried, allow)
            if reason:
                return reason
    return _refusal(ip, allow)


def _refusal(ip: Address, allow: tuple[Network, ...]) -> str | None:
    if any(ip in network for network in allow if network.version == ip.version):
        return None
    for kind, test in (("loopback", ip.is_loopback), ("link-local", ip.is_link_local),
                       ("multicast", ip.is_multicast), ("private", ip.is_private),
                       ("reserved", ip.is_reserved or ip.is_unspecified)):
        if test:
            return f"a {kind} address"
    return None if ip.is_global else "not a public address"


def refused(host: str, infos: list, allow: tuple[Network, ...]) -> tuple[str, Line] | None:
    """Why the server does not send to `host` (in English, and said), if an address the name
    resolves to (getaddrinfo's `infos`) is not allowed; else None. Every address must be
    allowed, else one that is not could be the one connected to."""
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


_current: contextvars.ContextVar[Watch] = contextvars.ContextVar("outbound_request")


class Watch:
    """One blocking request in flight: its policy, the sockets it opened, and the watch on its
    deadline that shuts them when the time is up (a blocked read then returns at once): a
    timer thread. Within `with`, every connection `open_checked` makes is under it."""

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

    def __enter__(self) -> Self:
        self._token = _current.set(self)
        self._timer.start()
        return self

    def __exit__(self, *exc) -> None:
        with self._lock:
            self.finished = True
        self._timer.cancel()
        _current.reset(self._token)


def current() -> Watch | None:
    """The request in flight in this context, if any."""
    return _current.get(None)


def _shut(sock: socket.socket) -> None:
    try:
        sock.shutdown(socket.SHUT_RDWR)
    except OSError:
        pass  # closed already


def open_checked(host: str, port: int, timeout: float | None) -> socket.socket:
    """A TCP connection to `host` for the request in flight: made to the address checked, put
    under the request's deadline before it connects. OSError when refused or it fails."""
    watch = current()
    if watch is None:  # every request made here sets one; nothing else may connect
        raise OSError("an outbound connection outside webapp.outbound")
    infos = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)
    refusing = refused(host, infos, watch.policy.allow)
    if refusing:
        watch.refused, watch.refused_said = refusing
        raise OSError(watch.refused)
    family, kind, protocol, _, sockaddr = infos[0]
    sock = socket.socket(family, kind, protocol)
    watch.opened(sock)
    try:
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        sock.settimeout(min(timeout or watch.policy.timeout, watch.remaining()))
        sock.connect(sockaddr)
    except OSError:
        sock.close()
        raise
    return sock
