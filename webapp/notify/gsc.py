"""Google Search Console: submit the sitemap with `sitemaps.submit`, as a service account.

The access token comes from the token address of the site's service account (`gsc_account`:
the uploaded key, else the key file on the server); the submission itself goes through the
one send function, to GSC_ENDPOINT or the site's endpoint.
"""

from __future__ import annotations

import re
from urllib.parse import quote

from webapp.errors import InvalidValue, RuleText, in_english, rule_text, said_of
from webapp.models import Delivery, Site
from webapp.notify import gsc_account
from webapp.notify.ledger import not_sent
from webapp.outbound import Answer, OutboundError, Policy, endpoint_check, send
from webapp.said import said

NAME = "Search Console"  # as people read it
ANNOUNCES = "sitemap"  # the sitemap URL, once per generation that changed it

# What each answer means, said in the reader's language (webapp.said); English in the ledger.
MEANINGS = {
    200: said("200 OK: Search Console has the sitemap and will fetch it"),
    204: said("204 No Content: Search Console has the sitemap and will fetch it"),
    401: said("401 Unauthorized: the access token was refused; check the credential file"),
    403: said("403 Forbidden: the service account may not manage %(property)s; add "
              "%(account)s as an owner or full user of the property in Search Console"),
    404: said("404 Not Found: Search Console knows no property %(property)s; check "
              "gsc_property"),
    429: said("429 Too Many Requests: over the Search Console quota; will try again later"),
}


def check_property(value: str) -> str | None:
    value = value.strip()
    if value and not re.fullmatch(r"sc-domain:[a-z0-9.-]+|https?://[^\s/?#]+/\S*", value):
        raise InvalidValue("gsc_property", value, rule_text(
            "must be a Search Console property as it names it: sc-domain:example.com or "
            "https://example.com/"))
    return value or None


SETTINGS = {"gsc_property": check_property, "gsc_credentials": gsc_account.check_credentials,
            "gsc_endpoint": endpoint_check("gsc_endpoint")}


def blocked(site: Site, config: dict) -> RuleText | None:
    """Why Search Console, set up for the site, cannot be sent to; None when it can (or is
    not set up at all). `str()` of it is in the reader's language, `in_english` the ledger's."""
    found = _blocked(site, config)
    return found[1] if found else None


def _blocked(site: Site, config: dict) -> tuple[str, RuleText] | None:
    """The setting that keeps Search Console from being sent to, and why (blocked)."""
    account = gsc_account.configured(site)
    if site.gsc_property and not account:
        return "gsc_credentials", rule_text(
            "Search Console has a property (gsc_property) but no service-account key file "
            "(gsc_credentials); upload the key in the site's settings or set gsc_credentials "
            "to submit the sitemap")
    if account and not site.gsc_property:
        return "gsc_property", rule_text(
            "Search Console has a service-account key (uploaded, or gsc_credentials) but no "
            "property (gsc_property); set gsc_property to submit the sitemap")
    allowed = gsc_account.token_hosts(config)
    if site.gsc_property and not gsc_account.token_may_go_to(submit_url(site, config), config):
        return "GSC_ENDPOINT", rule_text(
            "gsc_endpoint %(endpoint)s is not a Search Console host: the access token is sent "
            "only over https:// to %(hosts)s (set GSC_ENDPOINT to send it elsewhere)",
            endpoint=site.gsc_endpoint, hosts=", ".join(sorted(allowed)))
    return None


def targets(site: Site) -> list[None]:
    """One submission per generation, once the site has a property and a credential file."""
    return [None] if site.gsc_property and gsc_account.configured(site) else []


def submit_url(site: Site, config: dict) -> str:
    base = gsc_account.api_base(site, config)
    return (f"{base}/webmasters/v3/sites/{quote(site.gsc_property, safe='')}"
            f"/sitemaps/{quote(site.sitemap_url, safe='')}")


def destination(site: Site, delivery: Delivery, config: dict) -> str:
    return submit_url(site, config) if site.gsc_property else config["GSC_ENDPOINT"]


def deliver(site: Site, delivery: Delivery, config: dict) -> Answer:
    """PUT the site's sitemap URL to the property."""
    if not (site.gsc_property or gsc_account.configured(site)):
        raise OutboundError(not_sent("Search Console was turned off for this site "
                                     "(gsc_property, gsc_credentials)"), permanent=True)
    # A setting of the site or of this server keeps it from being sent: the record waits
    # (ledger.held), as the ledger's "not sent" says for an engine that cannot send.
    found = _blocked(site, config)
    if found is not None:
        setting, reason = found
        raise OutboundError(in_english(reason), said=said_of(reason), by_own_rules=setting)
    delivery.target = submit_url(site, config)
    try:
        credentials = gsc_account.credentials(site, config)
    except gsc_account.AccountProblem as exc:
        raise OutboundError(str(exc), permanent=exc.setting is None, said=exc.said,
                            by_own_rules=exc.setting) from None
    if not credentials.valid:
        gsc_account.refresh(credentials, config)
    policy = Policy.of(config)
    meanings = {status: {**item, "values": {"property": site.gsc_property,
                                            "account": credentials.service_account_email}}
                for status, item in MEANINGS.items()}
    return send("PUT", delivery.target, policy, meanings=meanings,
                headers={"Authorization": f"Bearer {credentials.token}"})
