"""robots.txt of the site being verified, read for the verifier's User-Agent: what it
disallows is not fetched.

The answer is read as Google documents ("How Google interprets the robots.txt
specification"): 2xx, the rules; 4xx other than 429, no file, so everything is allowed; 5xx
and 429, a server error, so everything is disallowed for now (Google starts so too, and only
after 30 days of errors falls back to a cached copy or to allowing all: a run is one moment,
so it keeps the first rule). A host that does not answer at all (connection refused, no
answer in time, a name that does not resolve, an address the operator does not allow) is
not "disallowed": its URLs are unreachable, and are recorded so without a request each.
"""

from __future__ import annotations

from urllib.parse import urlsplit
from urllib.robotparser import RobotFileParser

from webapp.outbound import Crawler, OutboundError, plain_reason
from webapp.said import Line, said

SERVER_ERROR = 429  # "Too Many Requests" counts as a server error, as 5xx do


class Robots:
    """Whether the verifier may fetch a URL of the site; `unreachable` says why no URL of
    the host can be fetched at all (its robots.txt got no answer), else None."""

    def __init__(self, parser: RobotFileParser, agent: str, note: Line | None = None,
                 unreachable: str | None = None):
        self.parser, self.agent, self.note = parser, agent, note
        self.unreachable = unreachable
        # No rules at all (no robots.txt, most often): can_fetch allows every URL, and need
        # not read each one to say so.
        self._no_rules = not parser.entries and parser.default_entry is None \
            and not parser.disallow_all and parser.mtime() > 0

    def allowed(self, url: str) -> bool:
        return self._no_rules or self.parser.can_fetch(self.agent, url)


def _rules(lines: list[str]) -> RobotFileParser:
    parser = RobotFileParser()
    parser.parse(lines)
    return parser


async def robots_for(crawler: Crawler, base_url: str, agent: str) -> Robots:
    """The rules of the base URL's host, fetched now (see the module's docstring)."""
    parts = urlsplit(base_url)
    address = f"{parts.scheme}://{parts.netloc}/robots.txt"
    try:
        page = await crawler.request("GET", address)
    except OutboundError as exc:
        reason = plain_reason(exc)
        return Robots(_rules(["User-agent: *", "Disallow: /"]), agent,
                      said("%(url)s did not answer (%(reason)s): every URL counts as unreachable",
                           url=address, reason=reason),
                      unreachable=f"{address} did not answer ({exc.meaning})")
    if page.status >= 500 or page.status == SERVER_ERROR:
        return Robots(_rules(["User-agent: *", "Disallow: /"]), agent,
                      said("%(url)s answered %(status)s: nothing was fetched (a server error "
                           "disallows everything until robots.txt answers again)",
                           url=address, status=page.status))
    if not 200 <= page.status < 300:
        return Robots(_rules([]), agent)
    return Robots(_rules(page.body.decode("utf-8", "replace").splitlines()), agent)
