"""Why an outbound request failed, as one of a few plain reasons a site owner can act on (the
name was not found, the connection was refused, no answer in time, a TLS or certificate
error, ...), said as webapp.said items so that each reader hears it in their language; the
technical detail (the exception as Python names it) is kept apart for operators.
"""

from __future__ import annotations

import socket
import ssl
from collections.abc import Iterator

from webapp.said import Line, said

KINDS = ("name_not_found", "refused", "timed_out", "tls", "closed", "unreachable", "other")


def _chain(exc: BaseException) -> Iterator[BaseException]:
    """The exception and every one it wraps: requests and urllib3 nest the socket's error in
    `reason`, in `args` and in `__cause__`."""
    seen: set[int] = set()
    todo: list[BaseException] = [exc]
    while todo:
        error = todo.pop()
        if id(error) in seen:
            continue
        seen.add(id(error))
        yield error
        todo += [e for e in (error.__cause__, error.__context__, getattr(error, "reason", None),
                             *getattr(error, "args", ())) if isinstance(e, BaseException)]


def kind_of(exc: BaseException) -> str:
    """Which plain reason a failure to connect is (one of KINDS)."""
    chain = list(_chain(exc))
    for error_type, kind in ((socket.gaierror, "name_not_found"),
                             (ssl.SSLError, "tls"), (ssl.CertificateError, "tls"),
                             (ConnectionRefusedError, "refused"), (TimeoutError, "timed_out"),
                             (ConnectionResetError, "closed"),  # http.client's RemoteDisconnected too
                             (BrokenPipeError, "closed")):
        if any(isinstance(error, error_type) for error in chain):
            return kind
    if any(isinstance(error, OSError) and error.errno in (101, 113) for error in chain):
        return "unreachable"  # ENETUNREACH, EHOSTUNREACH
    return "other"


def technical(exc: BaseException) -> str:
    """The innermost error as Python names it, for an operator (never a person's only words)."""
    inner = list(_chain(exc))[-1]
    return f"{type(inner).__name__}: {inner}"[:300]


def connect_failure(kind: str, host: str) -> Line:
    """The plain reason of a failure to connect to `host`."""
    return {
        "name_not_found": said("the name %(host)s was not found (DNS): check the address",
                               host=host),
        "refused": said("%(host)s refused the connection: nothing answers on that port",
                        host=host),
        "timed_out": said("%(host)s did not answer in time", host=host),
        "tls": said("the secure connection (TLS) to %(host)s failed: its certificate or "
                    "protocol was not accepted", host=host),
        "closed": said("%(host)s closed the connection without answering", host=host),
        "unreachable": said("%(host)s cannot be reached from this server (no route)", host=host),
    }.get(kind) or said("could not connect to %(host)s", host=host)


def no_answer(seconds: float) -> Line:
    return said("no answer within %(seconds)s s", seconds=f"{seconds:g}")


def not_allowed(host: str, kind: str) -> Line:
    """A destination the operator has not allowed (`kind`: loopback, private, ...)."""
    kinds = {"loopback": said("a loopback address"), "link-local": said("a link-local address"),
             "multicast": said("a multicast address"), "private": said("a private address"),
             "reserved": said("a reserved address")}
    return said("%(host)s resolves to %(kind)s; the server sends nothing there unless the "
                "operator allows it (OUTBOUND_ALLOW)", host=host,
                kind=kinds.get(kind) or said("an address that is not public"))


def too_large(url: str, limit: int) -> Line:
    return said("%(url)s is larger than %(limit)s bytes", url=url, limit=limit)


def redirected(status: int, location: str) -> Line:
    return said("answered %(status)s: redirected to %(location)s; redirects are not followed",
                status=status, location=location)


def answered(status: int) -> Line:
    return said("answered HTTP %(status)s", status=status)


def not_a_url(url: str) -> Line:
    return said("%(url)s is not an http:// or https:// URL without a user name or password",
                url=url)
