"""robots.txt of the site being verified, read for the verifier's User-Agent: what it
disallows is not fetched.

The answer is read as Google documents ("How Google interprets the robots.txt
specification"; webapp.outbound.robots): redirects followed for five hops; 2xx, the
rules; 4xx other than 429 (or a chain of redirects given up on), no file, so everything is
allowed; 5xx and 429, a server error, so everything is disallowed for now (Google starts so
too, and only after 30 days of errors falls back to a cached copy or to allowing all: a run
is one moment, so it keeps the first rule). A host that does not answer at all (connection
refused, no answer in time, a name that does not resolve, at any hop) is not "disallowed":
its URLs are unreachable, and are recorded so without a request each. An address this server's
own rule refuses (OUTBOUND_ALLOW) says nothing of the site: the run stops there, before it
records anything.
"""

from __future__ import annotations

from urllib.parse import urlsplit
from urllib.robotparser import RobotFileParser

from webapp.outbound import Crawler, StoppedByOwnRules, plain_reason, robots_txt_via
from webapp.said import Line, said


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
    found = await robots_txt_via(crawler, f"{parts.scheme}://{parts.netloc}")
    if found.kind == "no answer" and found.error.by_own_rules:
        raise StoppedByOwnRules(said(
            "verification stopped before checking any URL: %(reason)s; the earlier results "
            "are kept", reason=plain_reason(found.error)), found.error.by_own_rules)
    if found.kind == "no answer":
        return Robots(_rules(["User-agent: *", "Disallow: /"]), agent,
                      said("%(url)s did not answer (%(reason)s): every URL counts as unreachable",
                           url=found.at, reason=plain_reason(found.error)),
                      unreachable=f"{found.at} did not answer ({found.error.meaning})")
    if found.kind == "server error":
        return Robots(_rules(["User-agent: *", "Disallow: /"]), agent,
                      said("%(url)s answered %(status)s: nothing was fetched (a server error "
                           "disallows everything until robots.txt answers again)",
                           url=found.at, status=found.status))
    return Robots(_rules(list(found.lines)), agent)
