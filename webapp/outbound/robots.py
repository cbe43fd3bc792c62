"""A site's robots.txt, fetched as RFC 9309 (section 2.3.1) and Google read it: redirects are
followed for up to five hops (to another host too: its answer is the one used), each hop a
request under the outbound rules (an address the operator does not allow is refused, not
asked), all of them within one deadline; the answer that ends the chain sorted by what it
means for a crawler.

- 2xx: rules, the file's first MAX_BYTES (Google ignores what follows, and so is a rule's
  cost per URL bounded);
- 4xx but 429, more than five redirects, a loop, a redirect without a Location: no rules,
  everything allowed (RFC 9309's "unavailable"; Google reads a chain it gave up on as 404);
- 5xx and 429: a server error, nothing allowed;
- no answer at some hop (refused, unreachable, out of time): the error, for the caller.
"""

from __future__ import annotations

import asyncio
import time
from dataclasses import dataclass, replace
from urllib.parse import urldefrag, urljoin

from webapp.outbound.answers import OutboundError, Page
from webapp.outbound.crawler import Crawler
from webapp.outbound.guard import Policy
from webapp.outbound.blocking import get_page

MAX_REDIRECTS = 5
MAX_BYTES = 500 << 10
REDIRECTS = {301, 302, 303, 307, 308}
SERVER_ERROR = 429  # "Too Many Requests" counts as a server error, as 5xx do


@dataclass(frozen=True)
class RobotsTxt:
    """What a host's robots.txt says: `kind` is "rules" (`lines`), "none" (everything
    allowed), "server error" (nothing allowed; `status`) or "no answer" (`error`). `at` is the
    URL that gave the answer: `url`, the robots.txt asked for, unless it redirected."""

    url: str
    kind: str
    at: str
    status: int | None = None
    lines: tuple[str, ...] = ()
    error: OutboundError | None = None


class _Chain:
    """The hops of one robots.txt: `url` is the one to ask next."""

    def __init__(self, origin: str):
        self.first = self.url = f"{origin}/robots.txt"
        self.seen = {self.url}

    def answered(self, page: Page) -> RobotsTxt | None:
        """What the chain gave, once `page` ends it; None when `url` is the next hop."""
        if page.status in REDIRECTS:
            location = (page.location or "").strip()
            target = urldefrag(urljoin(self.url, location))[0] if location else None
            if target is None or target in self.seen or len(self.seen) > MAX_REDIRECTS:
                return RobotsTxt(self.first, "none", self.url, page.status)
            self.seen.add(target)
            self.url = target
            return None
        if 200 <= page.status < 300:
            body = page.body[:MAX_BYTES]
            if page.truncated or len(page.body) > MAX_BYTES:
                body = body.rpartition(b"\n")[0]  # a rule cut short is no rule
            return RobotsTxt(self.first, "rules", self.url, page.status,
                             tuple(body.decode("utf-8", "replace").splitlines()))
        if page.status >= 500 or page.status == SERVER_ERROR:
            return RobotsTxt(self.first, "server error", self.url, page.status)
        return RobotsTxt(self.first, "none", self.url, page.status)

    def failed(self, error: OutboundError) -> RobotsTxt:
        return RobotsTxt(self.first, "no answer", self.url, error=error)


async def robots_txt_via(crawler: Crawler, origin: str) -> RobotsTxt:
    """The robots.txt of `origin` (scheme://host[:port]), asked through `crawler`, whose
    policy's deadline is the whole chain's."""
    chain, loop = _Chain(origin), asyncio.get_running_loop()
    ends = loop.time() + crawler.policy.timeout
    while True:
        try:
            page = await crawler.request("GET", chain.url,
                                         seconds=max(ends - loop.time(), 0.01))
        except OutboundError as exc:
            return chain.failed(exc)
        if (found := chain.answered(page)) is not None:
            return found


def robots_txt(origin: str, policy: Policy, user_agent: str) -> RobotsTxt:
    """The robots.txt of `origin`, asked by blocking requests within the policy's deadline."""
    chain, ends = _Chain(origin), time.monotonic() + policy.timeout
    while True:
        try:
            page = get_page(chain.url, replace(policy, timeout=max(ends - time.monotonic(),
                                                                   0.01)),
                            max_bytes=MAX_BYTES, user_agent=user_agent)
        except OutboundError as exc:
            return chain.failed(exc)
        if (found := chain.answered(page)) is not None:
            return found
