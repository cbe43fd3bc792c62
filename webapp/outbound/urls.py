"""Which addresses a request can be sent to (http or https, a host, no user name or password,
no white space), and how one is read into where to connect and what to ask for."""

from __future__ import annotations

import re
from collections.abc import Callable
from urllib.parse import quote, urlsplit

from webapp.errors import InvalidValue, rule_text

_SPACE = re.compile(r"\s")
# A request target is sent percent-encoded as urllib3 sent it: only these as they are.
_TARGET_SAFE = "/%:@!$&'()*+,;=-._~?"
_UNSAFE_TARGET = re.compile(r"[^A-Za-z0-9/%:@!$&'()*+,;=\-._~?]")
# The usual URL, read by a pattern rather than urlsplit (which costs several times as much):
# a scheme and host in lower case, a port, no white space. Anything else goes to urlsplit.
_PLAIN_URL = re.compile(
    r"(https?)://([a-z0-9.-]+)(?::(\d{1,5}))?(/[^?#\s]*)?(?:\?([^#\s]*))?(?:#\S*)?")


def is_http_url(url: str) -> bool:
    """An address requests can be sent to: http(s), a host, a port in range, no user name or
    password, no white space."""
    return parts(url) is not None


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
        split = urlsplit(url)
        return f"{split.hostname}:{split.port}" if split.port else str(split.hostname)
    except ValueError:
        return "an address that cannot be read"


def parts(url: str) -> tuple[tuple[str, str, int], str] | None:
    """(scheme, host, port) and the request target of a URL `is_http_url` accepts, or None."""
    plain = _PLAIN_URL.fullmatch(url)
    if plain and (plain[3] is None or int(plain[3]) <= 65535):
        scheme, host, port, path, query = plain.groups()
        return _place(scheme, host, int(port) if port else None, path, query)
    try:
        split = urlsplit(url)
        port = split.port
    except ValueError:
        return None
    if split.scheme not in ("http", "https") or not split.hostname or "@" in split.netloc \
            or _SPACE.search(url):
        return None
    return _place(split.scheme, split.hostname, port, split.path, split.query)


def _place(scheme: str, host: str, port: int | None, path: str | None,
           query: str | None) -> tuple[tuple[str, str, int], str]:
    target = (path or "/") + (f"?{query}" if query else "")
    if _UNSAFE_TARGET.search(target):
        target = quote(target, safe=_TARGET_SAFE)
    return (scheme, host, port if port is not None else 443 if scheme == "https" else 80), target


def host_header(scheme: str, host: str, port: int) -> str:
    """The Host header of a request to (scheme, host, port): the port only when not the
    scheme's own."""
    name = host if host.isascii() else host.encode("idna").decode("ascii")
    name = f"[{name}]" if ":" in name else name
    return name if port == (443 if scheme == "https" else 80) else f"{name}:{port}"
