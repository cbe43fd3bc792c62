"""Every request this server sends out (announcements, pre-flight checks, imports from a URL):
one module with the rules they all follow, and the error that says whether a retry can help.

Requests are sent to configured addresses only: redirects are never followed, a user name or
password in a URL is refused, and each request has a deadline and a cap on what it reads."""

from __future__ import annotations

import email.utils
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from urllib.parse import urlsplit

import google.auth.transport.requests
import requests
import urllib3

from webapp.errors import InvalidValue

USER_AGENT = "sitemap-dashboard/0.1 (self-hosted; announces sitemap changes)"
MAX_BODY = 1 << 20  # read at most this much of an answer: enough for robots.txt or an error
EXCERPT = 300
# Answers that say "not now": the same request may well succeed later.
RETRYABLE = {408, 425, 429, 500, 502, 503, 504}


@dataclass(frozen=True)
class Answer:
    status: int
    meaning: str
    body: str

    @property
    def excerpt(self) -> str:
        return excerpt(self.body)


class OutboundError(Exception):
    """A request that did not succeed; `permanent` when sending it again cannot help."""

    def __init__(self, meaning: str, *, status: int | None = None, body: str = "",
                 permanent: bool = False, retry_after: float | None = None):
        super().__init__(meaning)
        self.meaning = meaning
        self.status = status
        self.excerpt = excerpt(body)
        self.permanent = permanent
        self.retry_after = retry_after


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


def send(method: str, url: str, *, timeout: float, meanings: Mapping[int, str] | None = None,
         json: object = None, headers: Mapping[str, str] | None = None) -> Answer:
    """Send one request and return the answer when it is a success (2xx).

    Anything else raises OutboundError with what the status means for this engine (`meanings`),
    retryable for timeouts, connection failures, 408, 429 and 5xx. Redirects are not followed:
    the app only talks to addresses that someone configured.
    """
    meanings = meanings or {}
    deadline = time.monotonic() + timeout  # for the body, which a server could drip forever
    try:
        with requests.request(method, url, json=json, timeout=timeout, allow_redirects=False,
                              stream=True, headers={"User-Agent": USER_AGENT, **(headers or {})}
                              ) as response:
            body = _read(response, deadline)
    except requests.RequestException as exc:
        if _timed_out(exc):
            raise OutboundError(f"no answer within {timeout:g} s; will try again") from None
        raise OutboundError(f"could not connect to {address(url)}: {_reason(exc)}; "
                            "will try again") from None
    except TimeoutError:
        raise OutboundError(f"the answer took longer than {timeout:g} s; will try again") from None
    status = response.status_code
    meaning = meanings.get(status) or _generic_meaning(response)
    if 200 <= status < 300:
        return Answer(status, meaning, body)
    raise OutboundError(meaning, status=status, body=body, permanent=status not in RETRYABLE
                        and status < 500,
                        retry_after=retry_after_seconds(response.headers.get("Retry-After")))


def fetch(url: str, *, timeout: float, max_bytes: int) -> bytes:
    """GET a file (a sitemap to import) through the same rules: no redirects, bounded size."""
    deadline = time.monotonic() + 10 * timeout
    try:
        with requests.get(url, timeout=timeout, allow_redirects=False, stream=True,
                          headers={"User-Agent": USER_AGENT}) as response:
            if response.status_code != 200:
                raise OutboundError(_generic_meaning(response), status=response.status_code,
                                    permanent=True)
            data = bytearray()
            for chunk in response.raw.stream(65536, decode_content=False):
                data += chunk
                if len(data) > max_bytes:
                    raise OutboundError(f"{url} is larger than {max_bytes} bytes", permanent=True)
                if time.monotonic() > deadline:
                    raise OutboundError(f"{url} took too long to download")
            return bytes(data)
    except (requests.RequestException, urllib3.exceptions.HTTPError, ValueError) as exc:
        raise OutboundError(f"could not fetch {address(url)}: {_reason(exc)}") from None


class _TokenRequest(google.auth.transport.requests.Request):
    """google-auth's transport with a deadline on every request it makes."""

    def __init__(self, session: requests.Session, timeout: float):
        super().__init__(session)
        self.timeout = timeout

    def __call__(self, url, method="GET", body=None, headers=None, timeout=None, **kwargs):
        return super().__call__(url, method, body, headers, timeout=self.timeout, **kwargs)


def token_transport(timeout: float) -> google.auth.transport.requests.Request:
    """The transport google-auth gets an access token over: the deadline, our User-Agent, and
    no redirects (the signed grant goes to the token address and nowhere else). Close its
    `session` when done."""
    session = requests.Session()
    session.max_redirects = 0
    session.headers["User-Agent"] = USER_AGENT
    return _TokenRequest(session, timeout)


def _timed_out(exc: requests.RequestException) -> bool:
    # A timeout while reading the body arrives as a ConnectionError wrapping urllib3's error.
    return isinstance(exc, requests.Timeout) or any(
        isinstance(arg, urllib3.exceptions.TimeoutError) for arg in exc.args)


def _reason(exc: Exception) -> str:
    """The words that matter in urllib3's nested message: "Connection refused" and the like."""
    inner = exc.args[0] if exc.args else exc
    text = str(getattr(inner, "reason", inner))
    return text.rpartition("): ")[2][:200] or text[:200]


def is_http_url(url: str) -> bool:
    """An address requests can be sent to: http(s), a host, a port in range, no user name or
    password, no white space."""
    try:
        parts = urlsplit(url)
        parts.port  # noqa: B018 - raises on a port out of range
    except ValueError:  # an unclosed [IPv6] host, a port that is not a number or out of range
        return False
    return (parts.scheme in ("http", "https") and bool(parts.hostname)
            and "@" not in parts.netloc and not any(character.isspace() for character in url))


def endpoint_check(name: str) -> Callable[[str], str | None]:
    """The rule of a setting that names an address to send to (empty: the default one)."""

    def check(value: str) -> str | None:
        value = value.strip()
        if value and not is_http_url(value):
            raise InvalidValue(name, value, "must be an http:// or https:// URL without a user "
                               "name or password, or empty for the default")
        return value or None

    return check


def address(url: str) -> str:
    """host[:port] of a URL, without any user name or password in it."""
    try:
        parts = urlsplit(url)
        return f"{parts.hostname}:{parts.port}" if parts.port else str(parts.hostname)
    except ValueError:
        return "an address that cannot be read"


def _read(response: requests.Response, deadline: float) -> str:
    data = b""
    for chunk in response.iter_content(65536):
        data += chunk
        if len(data) >= MAX_BODY:
            break
        if time.monotonic() > deadline:
            raise TimeoutError
    try:
        return data[:MAX_BODY].decode(response.encoding or "utf-8", "replace")
    except LookupError:  # a charset Python does not know: the status is what matters
        return data[:MAX_BODY].decode("utf-8", "replace")


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
