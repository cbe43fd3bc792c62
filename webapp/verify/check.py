"""Checking one URL on the live site: a conditional request with what the last check saw
(HEAD for a file that is not HTML and has validators), redirects followed only inside the
site's scope and where robots.txt allows, and what the answer says about the page."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace
from urllib.parse import urldefrag, urljoin

from webapp import protocol
from webapp.errors import InvalidValue
from webapp.outbound import Crawler, OutboundError, StoppedByOwnRules, plain_reason
from webapp.said import said
from webapp.verify import page
from webapp.verify.robots import Robots

MAX_REDIRECTS = 10
MAX_URL_TEXT = 2048  # a URL the live site names, kept as the check's final_url or canonical
REDIRECTS = {301, 302, 303, 307, 308}
# What a check found, from the worst: the first that applies names the URL's outcome.
OUTCOMES = ("unreachable", "broken", "redirected", "noindex", "canonical", "ok")


@dataclass(frozen=True)
class Seen:
    """What a check found; `outcome` sums it up (OUTCOMES, or `blocked` by robots.txt)."""

    outcome: str
    status: int | None = None
    final_url: str | None = None
    noindex: bool = False
    canonical: str | None = None
    content_type: str | None = None
    etag: str | None = None
    last_modified: str | None = None
    fingerprint: str | None = None
    error: str | None = None


@dataclass(frozen=True)
class Scope:
    """Where the verifier may go: URLs under the site's base URL that robots.txt allows."""

    base_url: str
    robots: Robots
    ignore: Sequence = ()  # RE2 patterns (verify.settings.ignore_patterns)
    encoding: str = "utf-8"

    def place(self, url: str) -> str | None:
        """The URL normalised as discovery and every input path normalise a loc (dot segments
        resolved, encoded), when that is inside the site; None when it is outside or no URL.
        The normalised URL is what is asked for: a raw `/site/../outside` starts with the
        base URL, but the client would fetch `/outside`."""
        try:
            return protocol.Scope(self.base_url, self.encoding).normalize(url)
        except InvalidValue:
            return None

    def shown(self, url: str) -> str:
        """A URL outside the site as it is recorded: normalised when it is a URL at all."""
        try:
            return protocol.normalize_url(url, self.encoding)
        except InvalidValue:
            return url


def as_text(url: str | None) -> str | None:
    """A URL the live site gave, as text the database keeps: no NUL (PostgreSQL refuses it in
    text), at most MAX_URL_TEXT characters."""
    return url.replace("\x00", "")[:MAX_URL_TEXT] if url else url


def outcome(loc: str, seen: Seen) -> str:
    if seen.status is None:
        return "unreachable"
    if not 200 <= seen.status < 300:
        return "redirected" if seen.status in REDIRECTS and seen.final_url else "broken"
    if seen.final_url and seen.final_url != loc:
        return "redirected"
    if seen.noindex:
        return "noindex"
    if seen.canonical and seen.canonical != (seen.final_url or loc):
        return "canonical"
    return "ok"


def _conditional(before: Seen | None, url: str) -> dict[str, str]:
    """If-None-Match / If-Modified-Since for the URL whose answer the last check kept."""
    if before is None or (before.final_url or "") != url:
        return {}
    headers = {}
    if before.etag:
        headers["If-None-Match"] = before.etag
    if before.last_modified:
        headers["If-Modified-Since"] = before.last_modified
    return headers


def _method(before: Seen | None) -> str:
    """HEAD suffices for a file that is not HTML and has validators: they say whether it
    changed, and there is no markup to read."""
    if before is not None and before.content_type and not page.is_html(before.content_type) \
            and (before.etag or before.last_modified) and before.outcome == "ok":
        return "HEAD"
    return "GET"


async def check(crawler: Crawler, scope: Scope, loc: str, before: Seen | None) -> Seen:
    """What the live site answers for `loc` now."""
    if scope.robots.unreachable:  # the host did not answer for robots.txt: none asked again
        return Seen("unreachable", error=scope.robots.unreachable)
    if not scope.robots.allowed(loc):
        return Seen("blocked", error="robots.txt disallows it for the verifier's User-Agent")
    url, method = loc, _method(before)
    for _ in range(MAX_REDIRECTS + 1):
        try:
            answer = await crawler.request(method, url, _conditional(before, url))
        except OutboundError as exc:
            if exc.by_own_rules:  # refused here: what the site answers is not known
                raise StoppedByOwnRules(said(
                    "verification stopped at %(url)s: %(reason)s; the URLs not checked yet "
                    "keep their earlier results, and the next run continues with them",
                    url=url, reason=plain_reason(exc)), exc.by_own_rules) from None
            return Seen("unreachable", final_url=url if url != loc else None, error=exc.meaning)
        location = answer.headers.get("Location")
        if answer.status not in REDIRECTS or not location:
            break
        given = urldefrag(urljoin(url, location.strip()))[0]
        target = scope.place(given)
        if target is None or not scope.robots.allowed(target):
            # Recorded, never followed: the verifier stays inside the site.
            reason = ("leaves the site" if target is None
                      else "robots.txt disallows the target")
            seen = Seen("", status=answer.status, final_url=as_text(target or scope.shown(given)),
                        error=f"redirect not followed: it {reason}")
            return replace(seen, outcome=outcome(loc, seen))
        url = target
    else:
        return Seen("broken", status=answer.status, final_url=url,
                    error=f"more than {MAX_REDIRECTS} redirects")
    if answer.status == 304 and before is not None:
        if before.final_url == url and before.error is None:
            return before  # as it was
        return replace(before, status=before.status, final_url=url, error=None)
    return _read(loc, url, answer, method, scope)


def _read(loc: str, url: str, answer, method: str, scope: Scope) -> Seen:
    content_type = page.media_type(answer.headers)
    tree = page.parse(answer.headers, answer.body) if page.is_html(content_type) else None
    if method == "HEAD":
        digest = page.validators_fingerprint(answer.headers)
    else:
        digest = page.fingerprint(tree, answer.body, scope.ignore) \
            if 200 <= answer.status < 300 else None
    seen = Seen("", status=answer.status, final_url=url,
                noindex=page.noindex(answer.headers, tree),
                canonical=as_text(page.canonical(url, answer.headers, tree)),
                content_type=content_type, etag=(answer.headers.get("ETag") or "")[:300] or None,
                last_modified=(answer.headers.get("Last-Modified") or "")[:64] or None,
                fingerprint=digest)
    return replace(seen, outcome=outcome(loc, seen))
