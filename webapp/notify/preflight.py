"""Pre-flight: say which engines are set up but cannot send, fetch what engines will fetch (the
key file, robots.txt) and say what is missing before anything is sent that would fail.

Each finding is said as webapp.said items (`said`), heard in the reader's language; `message`
is its English (the CLI's)."""

from __future__ import annotations

from dataclasses import dataclass

from webapp.errors import said_of
from webapp.models import Site
from webapp.notify import indexnow
from webapp.notify.delivery import ENGINES, blocked
from webapp.outbound import OutboundError, Policy, plain_reason, send
from webapp.protocol import origin
from webapp.said import Line, english, said


@dataclass(frozen=True)
class Finding:
    engine: str  # the engine whose deliveries wait while this is a problem, or "" for advice
    ok: bool
    said: Line

    @property
    def message(self) -> str:
        return english([self.said])


def check(site: Site, config: dict) -> list[Finding]:
    findings = [Finding(name, False, said("%(engine)s: not sent: %(reason)s",
                                          engine=ENGINES[name].NAME, reason=said_of(reason)))
                for name, reason in blocked(site, config).items()]
    policy = Policy.of(config)
    if site.indexnow_enabled:
        url = indexnow.key_location(site)
        try:
            body = send("GET", url, policy).body
        except OutboundError as exc:
            findings.append(Finding("indexnow", False, said(
                "the IndexNow key file %(url)s is not served (%(reason)s); engines answer 403 "
                "until it is", url=url, reason=plain_reason(exc))))
        else:
            if body.strip() == site.indexnow_key:
                findings.append(Finding("indexnow", True, said(
                    "the IndexNow key file %(url)s is served", url=url)))
            else:
                # What it holds instead is not shown: the answer of an address is no one's
                # to read here (the address may be inside the operator's network).
                findings.append(Finding("indexnow", False, said(
                    "%(url)s does not contain exactly the key %(key)s", url=url,
                    key=site.indexnow_key)))
    url = f"{origin(site.base_url)}/robots.txt"
    try:
        body = send("GET", url, policy).body
    except OutboundError as exc:
        return [*findings, Finding("", False, said(
            "%(url)s cannot be fetched (%(reason)s); it should carry `Sitemap: %(sitemap)s`",
            url=url, reason=plain_reason(exc), sitemap=site.sitemap_url))]
    lines = {line.strip().lower() for line in body.splitlines()}
    if f"sitemap: {site.sitemap_url}".lower() in lines:
        findings.append(Finding("", True, said("%(url)s names the sitemap", url=url)))
    else:
        findings.append(Finding("", False, said(
            "%(url)s has no line `Sitemap: %(sitemap)s`; add it so every crawler finds the "
            "sitemap", url=url, sitemap=site.sitemap_url)))
    return findings


