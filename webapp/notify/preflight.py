"""Pre-flight: say which engines are set up but cannot send, fetch what engines will fetch (the
key file, robots.txt) and say what is missing before anything is sent that would fail."""

from __future__ import annotations

from dataclasses import dataclass

from webapp.models import Site
from webapp.notify import indexnow
from webapp.notify.delivery import ENGINES, blocked
from webapp.notify.ledger import not_sent
from webapp.outbound import OutboundError, Policy, send
from webapp.protocol import origin


@dataclass(frozen=True)
class Finding:
    engine: str  # the engine whose deliveries wait while this is a problem, or "" for advice
    ok: bool
    message: str


def check(site: Site, config: dict) -> list[Finding]:
    findings = [Finding(name, False, f"{ENGINES[name].NAME}: {not_sent(reason)}")
                for name, reason in blocked(site, config).items()]
    policy = Policy.of(config)
    if site.indexnow_enabled:
        url = indexnow.key_location(site)
        try:
            body = send("GET", url, policy).body
        except OutboundError as exc:
            findings.append(Finding("indexnow", False, f"the IndexNow key file {url} is not "
                                    f"served ({_plain(exc)}); engines answer 403 until it is"))
        else:
            if body.strip() == site.indexnow_key:
                findings.append(Finding("indexnow", True, f"the IndexNow key file {url} is served"))
            else:
                # What it holds instead is not shown: the answer of an address is no one's
                # to read here (the address may be inside the operator's network).
                findings.append(Finding("indexnow", False, f"{url} does not contain exactly "
                                        f"the key {site.indexnow_key}"))
    url = f"{origin(site.base_url)}/robots.txt"
    try:
        body = send("GET", url, policy).body
    except OutboundError as exc:
        return [*findings, Finding("", False, f"{url} cannot be fetched ({_plain(exc)}); "
                                   f"it should carry `Sitemap: {site.sitemap_url}`")]
    lines = {line.strip().lower() for line in body.splitlines()}
    if f"sitemap: {site.sitemap_url}".lower() in lines:
        findings.append(Finding("", True, f"{url} names the sitemap"))
    else:
        findings.append(Finding("", False, f"{url} has no line `Sitemap: {site.sitemap_url}`; "
                                "add it so every crawler finds the sitemap"))
    return findings


def _plain(error: OutboundError) -> str:
    return error.meaning.removesuffix("; will try again")
