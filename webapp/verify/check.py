"""Checking one URL on the live site: a conditional request with what the last check saw
(HEAD for a file that is not HTML and has validators), redirects followed only inside the
site's scope and where robots.txt allows, and what the answer says about the page."""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, replace
from urllib.parse import urldefrag, urljoin

from webapp.outbound import Crawler, OutboundError
from webapp.verify import page
from webapp.verify.robots import Robots

MAX_REDIRECTS = 10
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
    ignore: Sequence[re.Pattern] = ()

    def inside(self, url: str) -> bool:
        return url.startswith(self.base_url)


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


def check(crawler: Crawler, scope: Scope, loc: str, before: Seen | None) -> Seen:
    """What the live site answers for `loc` now."""
    if not scope.robots.allowed(loc):
        return Seen("blocked", error="robots.txt disallows it for the verifier's User-Agent")
    url, method = loc, _method(before)
    for _ in range(MAX_REDIRECTS + 1):
        try:
            answer = crawler.request(method, url, _conditional(before, url))
        except OutboundError as exc:
            return Seen("unreachable", final_url=url if url != loc else None, error=exc.meaning)
        location = answer.headers.get("Location")
        if answer.status not in REDIRECTS or not location:
            break
        target = urldefrag(urljoin(url, location.strip()))[0][:2048]
        if not scope.inside(target) or not scope.robots.allowed(target):
            # Recorded, never followed: the verifier stays inside the site.
            reason = ("leaves the site" if not scope.inside(target)
                      else "robots.txt disallows the target")
            seen = Seen("", status=answer.status, final_url=target,
                        error=f"redirect not followed: it {reason}")
            return replace(seen, outcome=outcome(loc, seen))
        url = target
    else:
        return Seen("broken", status=answer.status, final_url=url,
                    error=f"more than {MAX_REDIRECTS} redirects")
    if answer.status == 304 and before is not None:
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
                canonical=page.canonical(url, answer.headers, tree),
                content_type=content_type, etag=(answer.headers.get("ETag") or "")[:300] or None,
                last_modified=(answer.headers.get("Last-Modified") or "")[:64] or None,
                fingerprint=digest)
    return replace(seen, outcome=outcome(loc, seen))
