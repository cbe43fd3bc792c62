"""The blocking requests: an announcement or pre-flight (`send`), a file to import (`fetch`)
and a page as a crawler sees it (`get_page`), each through a guarded session within its total
deadline, redirects never followed and what is read of the answer capped.

The session module (requests and urllib3) is imported by the request that needs it: the
engines' modules import these functions, and most commands and pages send nothing."""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING

from webapp.outbound import reasons
from webapp.outbound.answers import (
    MAX_BODY,
    RETRYABLE,
    Answer,
    OutboundError,
    Page,
    retry_after_seconds,
)
from webapp.outbound.guard import Policy
from webapp.said import Line, english

if TYPE_CHECKING:
    import requests


def send(method: str, url: str, policy: Policy, *,
         meanings: Mapping[int, dict] | None = None,
         json: object = None, headers: Mapping[str, str] | None = None) -> Answer:
    """Send one request and return the answer when it is a success (2xx).

    Anything else raises OutboundError with what the status means for this engine (`meanings`),
    retryable for timeouts, connection failures, 408, 429 and 5xx. Redirects are not followed:
    the app only talks to addresses that someone configured.
    """
    meanings = meanings or {}
    from webapp.outbound.session import FAILURES, failed, guarded

    with guarded(policy, url, policy.timeout) as (session, watch):
        try:
            with session.request(method, url, json=json, timeout=policy.timeout,
                                 allow_redirects=False, stream=True, headers=headers) as response:
                body = _read(response)
        except FAILURES as exc:
            raise failed(exc, watch, url, policy.timeout) from None
        if watch.expired:  # cut off at the deadline: what was read may look complete
            raise failed(TimeoutError(), watch, url, policy.timeout)
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
    from webapp.outbound.session import FAILURES, failed, guarded

    with guarded(policy, url, seconds) as (session, watch):
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
        except (*FAILURES, ValueError) as exc:
            raise failed(exc, watch, url, seconds) from None
        if watch.expired:
            raise failed(TimeoutError(), watch, url, seconds)
        return bytes(data)


def get_page(url: str, policy: Policy, *, max_bytes: int = MAX_BODY,
             user_agent: str | None = None) -> Page:
    """GET a page through the same rules and return whatever it answers (a redirect, a 404:
    the caller decides), reading at most `max_bytes` of its body within the deadline.

    Raises OutboundError only when there is no answer: refused, unreachable, out of time.
    """
    from webapp.outbound.session import FAILURES, failed, guarded

    with guarded(policy, url, policy.timeout) as (session, watch):
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
        except FAILURES as exc:
            raise failed(exc, watch, url, policy.timeout) from None
        if watch.expired:
            raise failed(TimeoutError(), watch, url, policy.timeout)
    return Page(url, response.status_code,
                {name.lower(): value for name, value in response.headers.items()},
                bytes(data[:max_bytes]), truncated)


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
