"""A site's robots.txt, fetched through the outbound rules (its redirects followed for five
hops: webapp.outbound.robots) and read by the standard library's parser: what a discovery
crawl may fetch, and how long it should pause between requests."""

from __future__ import annotations

from urllib.robotparser import RobotFileParser

from webapp.outbound import Policy, StoppedByOwnRules, plain_reason, robots_txt
from webapp.protocol import origin
from webapp.said import Line, said

USER_AGENT = "sitemap-dashboard-discover/0.1 (self-hosted; finds a site's pages for its sitemap)"
AGENT_TOKEN = "sitemap-dashboard"  # the name robots.txt groups are matched against
MAX_CRAWL_DELAY = 10.0  # seconds: a larger Crawl-delay is honoured as this


class Robots:
    """The rules for one origin. A missing robots.txt (4xx, redirects given up on) allows
    everything; one that cannot be read (5xx, 429, no answer) forbids everything, as search
    engines do."""

    def __init__(self, parser: RobotFileParser | None, reason: Line | None = None):
        self.parser, self.reason = parser, reason

    def allows(self, url: str) -> bool:
        if self.parser is None:
            return self.reason is None
        return self.parser.can_fetch(AGENT_TOKEN, url)

    def delay(self) -> float:
        value = self.parser.crawl_delay(AGENT_TOKEN) if self.parser else None
        return min(float(value), MAX_CRAWL_DELAY) if value else 0.0


def load_robots(site_url: str, policy: Policy) -> Robots:
    """The robots.txt at the root of `site_url`'s origin. StoppedByOwnRules when this
    server's own rules refuse it (OUTBOUND_ALLOW): then no page of the site can be fetched
    either, and the crawl stops before it replaces anything."""
    found = robots_txt(origin(site_url), policy, USER_AGENT)
    if found.kind == "no answer" and found.error.by_own_rules:
        raise StoppedByOwnRules(said(
            "the crawl stopped before fetching any page: %(reason)s; the review list is as it "
            "was", reason=plain_reason(found.error)), found.error.by_own_rules)
    if found.kind == "no answer":
        return Robots(None, said("%(url)s did not answer (%(reason)s): nothing is fetched",
                                 url=found.at, reason=plain_reason(found.error)))
    if found.kind == "server error":
        return Robots(None, said("%(url)s answered %(status)s: nothing is fetched",
                                 url=found.at, status=found.status))
    if found.kind == "none":
        return Robots(None)
    parser = RobotFileParser(found.url)
    parser.parse(list(found.lines))
    return Robots(parser)
