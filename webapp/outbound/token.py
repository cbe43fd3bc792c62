"""The transport google-auth gets Search Console's access token over, on the same rules as
every other request (guarded, the policy's deadline, no redirects, the answer capped)."""

from __future__ import annotations

import google.auth.exceptions
import google.auth.transport.requests
import requests
import urllib3

from webapp.outbound.guard import Policy, Watch
from webapp.outbound.session import failed, session

MAX_TOKEN_REPLY = 64 << 10  # a token address's answer (a few hundred bytes)


class _TokenRequest(google.auth.transport.requests.Request):
    """google-auth's transport on this package's rules: each request it makes is guarded and
    has the policy's deadline."""

    def __init__(self, policy: Policy):
        made = session()
        made.max_redirects = 0  # google-auth follows redirects: make any one an error
        super().__init__(made)
        self.policy = policy

    def __call__(self, url, method="GET", body=None, headers=None, timeout=None, **kwargs):
        answer = None
        with Watch(self.policy, self.policy.timeout) as watch:
            try:
                answer = super().__call__(url, method, body, headers,
                                          timeout=self.policy.timeout, stream=True, **kwargs)
                reply = answer._response.raw.read(MAX_TOKEN_REPLY + 1, decode_content=True)
            except google.auth.exceptions.TransportError as exc:
                # In the same words as every other request: not requests' nested repr.
                # The OutboundError is its cause: whether this server's rules refused it.
                cause = exc.__cause__ if isinstance(exc.__cause__, Exception) else exc
                error = failed(cause, watch, url, self.policy.timeout)
                raise google.auth.exceptions.TransportError(error.meaning) from error
            except (requests.RequestException, urllib3.exceptions.HTTPError) as exc:
                error = failed(exc, watch, url, self.policy.timeout)
                raise google.auth.exceptions.TransportError(error.meaning) from error
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
