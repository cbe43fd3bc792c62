"""A requests session whose every connection goes through the guard (the address checked,
the connection made to it, under the request's deadline), with nothing taken from the
environment; and what a failed blocking request was, in plain words."""

from __future__ import annotations

import socket
from collections.abc import Iterator
from contextlib import contextmanager

import requests
import urllib3
from requests.adapters import HTTPAdapter
from urllib3.connection import HTTPConnection, HTTPSConnection
from urllib3.connectionpool import HTTPConnectionPool, HTTPSConnectionPool

from webapp.outbound.answers import USER_AGENT, OutboundError, failure, not_a_url
from webapp.outbound.guard import Policy, Watch, current, open_checked
from webapp.outbound.urls import is_http_url


class _Guarded:
    """urllib3's connection, connecting only to a checked address, within the deadline."""

    def _new_conn(self) -> socket.socket:
        try:
            return open_checked(self._dns_host, self.port, self.timeout)
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
        watch = current()
        if watch is not None and conn.sock is not None:
            watch.opened(conn.sock)
        return conn


class _GuardedHTTPPool(_Registering, HTTPConnectionPool):
    ConnectionCls = _GuardedHTTP


class _GuardedHTTPSPool(_Registering, HTTPSConnectionPool):
    ConnectionCls = _GuardedHTTPS


def session(pool_size: int = 10) -> requests.Session:
    """A session whose every connection goes through the guard, with nothing from the
    environment (proxies, .netrc). Callers pass allow_redirects=False."""
    made = requests.Session()
    made.trust_env = False
    made.headers["User-Agent"] = USER_AGENT
    adapter = HTTPAdapter(max_retries=0, pool_connections=pool_size, pool_maxsize=pool_size)
    adapter.poolmanager.pool_classes_by_scheme = {"http": _GuardedHTTPPool,
                                                  "https": _GuardedHTTPSPool}
    for scheme in ("http://", "https://"):
        made.mount(scheme, adapter)
    return made


@contextmanager
def guarded(policy: Policy, url: str, seconds: float) -> Iterator[tuple[requests.Session, Watch]]:
    """A session and the request's watch, for one request to `url` within `seconds`."""
    if not is_http_url(url):
        raise not_a_url(url)
    with Watch(policy, seconds) as watch, session() as made:
        yield made, watch


# What a blocking request raises when it gets no answer.
FAILURES = (requests.RequestException, urllib3.exceptions.HTTPError, OSError)


def failed(exc: Exception, watch: Watch, url: str, seconds: float) -> OutboundError:
    """What went wrong, in words a site owner can act on: the guard's refusal, the deadline,
    or one of a few plain reasons (webapp.outbound.reasons)."""
    if watch.refused:
        return OutboundError(watch.refused, permanent=True, said=watch.refused_said,
                             by_own_rules="OUTBOUND_ALLOW")
    return failure(exc, url, seconds, watch.expired or _timed_out(exc))


def _timed_out(exc: Exception) -> bool:
    # A timeout while reading the body arrives as a ConnectionError wrapping urllib3's error.
    timeouts = (requests.Timeout, urllib3.exceptions.TimeoutError, TimeoutError)
    return isinstance(exc, timeouts) or any(
        isinstance(arg, urllib3.exceptions.TimeoutError) for arg in exc.args)
