""""Test my setup" on the How to publish page: fetch what crawlers fetch, where they fetch it
(the site's own host: robots.txt, the entry sitemap, each published file, the IndexNow key
file), and say for each what it answered and whether that is what this app publishes.

Every request goes through webapp.outbound (its allowed addresses, its deadline per request);
the whole check stops after `SECONDS` and fetches at most `MAX_FILES` sitemap files, saying
how many it left. Each outcome is said as webapp.said items, heard in the reader's language."""

from __future__ import annotations

import hashlib
import time
from collections.abc import Callable
from dataclasses import dataclass

from webapp.models import Site
from webapp.notify import indexnow
from webapp.outbound import OutboundError, Page, Policy, get_page, plain_reason
from webapp.protocol import origin
from webapp.said import Line, said, said_plural
from webapp.sitemaps import PublishedFile, PublishedSet

MAX_FILES = 20  # sitemap files fetched, the entry included; the others are counted
SECONDS = 60.0  # no request starts after this; each has outbound's own deadline besides


@dataclass(frozen=True)
class Outcome:
    """What one address answered: `ok` True (as it should), False (a problem), None (not
    fetched: this server's rules kept it, or no answer)."""

    url: str
    ok: bool | None
    said: Line


def check_setup(site: Site, published: PublishedSet | None, policy: Policy, *,
                max_files: int = MAX_FILES, seconds: float = SECONDS,
                clock: Callable[[], float] = time.monotonic) -> tuple[list[Outcome], list[Line]]:
    """Fetch each address crawlers fetch of the site; (an outcome per address fetched, notes
    on what was left: the files beyond `max_files`, those after `seconds` ran out)."""
    folder = site.sitemap_url.rsplit("/", 1)[0]
    entry = site.sitemap_url.rsplit("/", 1)[1]
    files = sorted(published.files.values(), key=lambda f: (f.name != entry, f.name)) \
        if published else []
    checks: list[tuple[str, Callable[[str], Outcome]]] = [
        (f"{origin(site.base_url)}/robots.txt", lambda url: _robots(url, site, policy))]
    if not files:
        checks.append((site.sitemap_url, lambda url: _unpublished(url, policy)))
    for file in files[:max_files]:
        url = site.sitemap_url if file.name == entry else f"{folder}/{file.name}"
        checks.append((url, lambda url, file=file: _file(url, file, policy)))
    if site.indexnow_enabled:
        checks.append((indexnow.key_location(site), lambda url: _key(url, site, policy)))
    notes: list[Line] = []
    if len(files) > max_files:
        notes.append(said_plural("%(num)s more sitemap file not checked (at most %(max)s are)",
                                 "%(num)s more sitemap files not checked (at most %(max)s are)",
                                 len(files) - max_files, max=max_files))
    outcomes, started = [], clock()
    for done, (url, fetch) in enumerate(checks):
        if clock() - started > seconds:
            notes.append(said_plural(
                "stopped after %(seconds)s s: %(num)s address not checked",
                "stopped after %(seconds)s s: %(num)s addresses not checked",
                len(checks) - done, seconds=f"{seconds:g}"))
            break
        outcomes.append(fetch(url))
    return outcomes, notes


def said_lines(outcomes: list[Outcome], notes: list[Line]) -> list[Line]:
    """The task's closing message: a line per address, then the notes."""
    heads = {True: "OK: %(finding)s", False: "Problem: %(finding)s",
             None: "Not checked: %(finding)s"}
    return [said(heads[outcome.ok], finding=outcome.said) for outcome in outcomes] + notes


def _get(url: str, policy: Policy, max_bytes: int | None = None) -> Page | Outcome:
    """The page, or the outcome of a request that got no answer."""
    try:
        return get_page(url, policy, **({"max_bytes": max_bytes} if max_bytes else {}))
    except OutboundError as exc:
        if exc.by_own_rules:
            return Outcome(url, None, said(
                "%(url)s was not fetched: this server's setting %(setting)s keeps it from "
                "sending there (%(reason)s)", url=_shown(url), setting=exc.by_own_rules,
                reason=plain_reason(exc)))
        return Outcome(url, False, said("%(url)s did not answer: %(reason)s", url=_shown(url),
                                        reason=plain_reason(exc)))


def _answered(url: str, policy: Policy, max_bytes: int | None = None) -> Page | Outcome:
    """The page when it answered 200; otherwise the outcome that says what happened."""
    page = _get(url, policy, max_bytes)
    return page if isinstance(page, Outcome) or page.status == 200 else _not_passed(page)


def _not_passed(page: Page) -> Outcome:
    """A status other than 200, in plain words."""
    if 300 <= page.status < 400:
        return Outcome(page.url, False, said(
            "%(url)s answered %(status)s, a redirect to %(location)s: crawlers need the file "
            "at this address itself", url=_shown(page.url), status=page.status,
            location=page.location or "?"))
    return Outcome(page.url, False, said(
        "%(url)s answered %(status)s: the site's server does not pass it to this app",
        url=_shown(page.url), status=page.status))


def _shown(url: str) -> dict:
    """A URL as its reader reads it (an IDN host as 例え.jp; webapp.said)."""
    return {"url": url}


def _type(page: Page) -> str:
    return page.content_type or "?"


def _robots(url: str, site: Site, policy: Policy) -> Outcome:
    page = _answered(url, policy)
    if isinstance(page, Outcome):
        return page
    lines = {line.strip().lower() for line in page.body.decode("utf-8", "replace").splitlines()}
    if f"sitemap: {site.sitemap_url}".lower() in lines:
        return Outcome(url, True, said("%(url)s answered %(status)s (%(type)s) and names the "
                                       "sitemap", url=_shown(url), status=200, type=_type(page)))
    return Outcome(url, False, said(
        "%(url)s answered %(status)s (%(type)s) but has no line `Sitemap: %(sitemap)s`",
        url=_shown(url), status=200, type=_type(page), sitemap=site.sitemap_url))


def _unpublished(url: str, policy: Policy) -> Outcome:
    """The entry sitemap of a site that publishes nothing yet: what answers there."""
    page = _get(url, policy)
    if isinstance(page, Outcome):
        return page
    return Outcome(url, False, said(
        "%(url)s answered %(status)s; this app publishes nothing for the site yet",
        url=_shown(url), status=page.status))


def _file(url: str, file: PublishedFile, policy: Policy) -> Outcome:
    page = _answered(url, policy, max_bytes=file.size + 1)
    if isinstance(page, Outcome):
        return page
    kind = _type(page)
    if len(page.body) != file.size or hashlib.sha256(page.body).hexdigest() != file.sha256:
        return Outcome(url, False, said(
            "%(url)s answered %(status)s (%(type)s), but not with the file this app "
            "publishes: the site's server answers it itself, or keeps an old copy",
            url=_shown(url), status=200, type=kind))
    if "xml" not in kind and "xsl" not in kind:
        return Outcome(url, False, said(
            "%(url)s answered %(status)s with the published file, but as %(type)s: crawlers "
            "expect XML (application/xml)", url=_shown(url), status=200, type=kind))
    return Outcome(url, True, said("%(url)s answered %(status)s with the published file "
                                   "(%(type)s)", url=_shown(url), status=200, type=kind))


def _key(url: str, site: Site, policy: Policy) -> Outcome:
    page = _answered(url, policy)
    if isinstance(page, Outcome):
        return page
    if page.body.decode("utf-8", "replace").strip() == site.indexnow_key:
        return Outcome(url, True, said("%(url)s answered %(status)s (%(type)s) with the "
                                       "IndexNow key", url=_shown(url), status=200, type=_type(page)))
    return Outcome(url, False, said(
        "%(url)s answered %(status)s (%(type)s), but does not contain exactly the IndexNow "
        "key %(key)s", url=_shown(url), status=200, type=_type(page), key=site.indexnow_key))
