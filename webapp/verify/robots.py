"""robots.txt of the site being verified, read for the verifier's User-Agent: what it
disallows is not fetched."""

from __future__ import annotations

from urllib.parse import urlsplit
from urllib.robotparser import RobotFileParser

from webapp.outbound import Crawler, OutboundError, plain_reason
from webapp.said import Line, said


class Robots:
    """Whether the verifier may fetch a URL of the site."""

    def __init__(self, parser: RobotFileParser, agent: str, note: Line | None = None):
        self.parser, self.agent, self.note = parser, agent, note

    def allowed(self, url: str) -> bool:
        return self.parser.can_fetch(self.agent, url)


def robots_for(crawler: Crawler, base_url: str, agent: str) -> Robots:
    """The rules of the base URL's host, fetched now. As search engines read them: a file
    that is not there (4xx) allows everything; a server error or no answer disallows
    everything, since the site may be down."""
    parts = urlsplit(base_url)
    address = f"{parts.scheme}://{parts.netloc}/robots.txt"
    parser = RobotFileParser(address)
    try:
        page = crawler.request("GET", address)
    except OutboundError as exc:
        parser.parse(["User-agent: *", "Disallow: /"])
        return Robots(parser, agent, said("%(url)s did not answer (%(reason)s): nothing was "
                                          "fetched", url=address, reason=plain_reason(exc)))
    if page.status >= 500:
        parser.parse(["User-agent: *", "Disallow: /"])
        return Robots(parser, agent, said("%(url)s answered %(status)s: nothing was fetched",
                                          url=address, status=page.status))
    if page.status >= 400 or page.status < 200 or page.status >= 300:
        parser.parse([])
        return Robots(parser, agent)
    parser.parse(page.body.decode("utf-8", "replace").splitlines())
    return Robots(parser, agent)
