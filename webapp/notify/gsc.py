"""Google Search Console: submit the sitemap with `sitemaps.submit`, as a service account.

The access token comes from the token address in the credential file (google-auth, over the
outbound module's transport); the submission itself goes through the one send function, to
GSC_ENDPOINT or the site's endpoint.
"""

from __future__ import annotations

import json
import os
import re
import threading
from urllib.parse import quote, urlsplit

import google.auth.exceptions
from google.oauth2 import service_account

from webapp.errors import InvalidValue
from webapp.models import Delivery, Site
from webapp.notify.ledger import not_sent
from webapp.outbound import Answer, OutboundError, Policy, endpoint_check, send, token_transport

NAME = "Search Console"  # as people read it
ANNOUNCES = "sitemap"  # the sitemap URL, once per generation that changed it
SCOPES = ["https://www.googleapis.com/auth/webmasters"]
GOOGLE_HOSTS = frozenset({"www.googleapis.com", "searchconsole.googleapis.com"})

MEANINGS = {
    200: "200 OK: Search Console has the sitemap and will fetch it",
    204: "204 No Content: Search Console has the sitemap and will fetch it",
    401: "401 Unauthorized: the access token was refused; check the credential file",
    403: ("403 Forbidden: the service account may not manage {property}; add "
          "{account} as an owner or full user of the property in Search Console"),
    404: "404 Not Found: Search Console knows no property {property}; check gsc_property",
    429: "429 Too Many Requests: over the Search Console quota; will try again later",
}

_credentials: dict[tuple[str, float], service_account.Credentials] = {}
_lock = threading.Lock()


def load_credentials(path: str) -> service_account.Credentials:
    """The service account in a credential file, or a clear reason why it is not one."""
    try:
        with open(path, encoding="utf-8") as handle:
            info = json.load(handle)
        return service_account.Credentials.from_service_account_info(info, scopes=SCOPES)
    except OSError as exc:
        raise InvalidValue("gsc_credentials", path, f"cannot be read ({exc.strerror})") from None
    except (ValueError, TypeError, KeyError, AttributeError) as exc:
        raise InvalidValue("gsc_credentials", path, "must be the JSON key file of a Google "
                           f"service account ({str(exc).splitlines()[0][:120]})") from None


def check_property(value: str) -> str | None:
    value = value.strip()
    if value and not re.fullmatch(r"sc-domain:[a-z0-9.-]+|https?://[^\s/?#]+/\S*", value):
        raise InvalidValue("gsc_property", value, "must be a Search Console property as it "
                           "names it: sc-domain:example.com or https://example.com/")
    return value or None


def check_credentials(value: str) -> str | None:
    """The path of a service-account key file, checked by loading it; empty turns it off."""
    value = value.strip()
    if not value:
        return None
    path = os.path.abspath(value)
    load_credentials(path)
    return path


SETTINGS = {"gsc_property": check_property, "gsc_credentials": check_credentials,
            "gsc_endpoint": endpoint_check("gsc_endpoint")}


def blocked(site: Site, config: dict) -> str | None:
    """Why Search Console, set up for the site, cannot be sent to; None when it can (or is
    not set up at all)."""
    if site.gsc_property and not site.gsc_credentials:
        return ("Search Console has a property (gsc_property) but no service-account key file "
                "(gsc_credentials); set gsc_credentials to submit the sitemap")
    if site.gsc_credentials and not site.gsc_property:
        return ("Search Console has a service-account key file (gsc_credentials) but no "
                "property (gsc_property); set gsc_property to submit the sitemap")
    allowed = token_hosts(config)
    if site.gsc_property and urlsplit(submit_url(site, config)).netloc.lower() not in allowed:
        return (f"gsc_endpoint {site.gsc_endpoint} is not a Search Console host: the access "
                f"token is sent only to {', '.join(sorted(allowed))} (set GSC_ENDPOINT to "
                "send it elsewhere)")
    return None


def targets(site: Site) -> list[None]:
    """One submission per generation, once the site has a property and a credential file."""
    return [None] if site.gsc_property and site.gsc_credentials else []


def _cached_credentials(path: str) -> service_account.Credentials:
    """One credentials object per file version, so its access token is reused until expiry."""
    key = (path, os.stat(path).st_mtime)
    with _lock:
        if key not in _credentials:
            _credentials[key] = load_credentials(path)
        return _credentials[key]


def token_hosts(config: dict) -> set[str]:
    """Where the access token may be sent: Google's documented API hosts, and the host of
    GSC_ENDPOINT when the operator set another one."""
    return GOOGLE_HOSTS | {urlsplit(config["GSC_ENDPOINT"]).netloc.lower()}


def submit_url(site: Site, config: dict) -> str:
    base = (site.gsc_endpoint or config["GSC_ENDPOINT"]).rstrip("/")
    return (f"{base}/webmasters/v3/sites/{quote(site.gsc_property, safe='')}"
            f"/sitemaps/{quote(site.sitemap_url, safe='')}")


def destination(site: Site, delivery: Delivery, config: dict) -> str:
    return submit_url(site, config) if site.gsc_property else config["GSC_ENDPOINT"]


def deliver(site: Site, delivery: Delivery, config: dict) -> Answer:
    """PUT the site's sitemap URL to the property."""
    if not (site.gsc_property or site.gsc_credentials):
        raise OutboundError(not_sent("Search Console was turned off for this site "
                                     "(gsc_property, gsc_credentials)"), permanent=True)
    reason = blocked(site, config)
    if reason is not None:
        raise OutboundError(not_sent(reason), permanent=True)
    delivery.target = submit_url(site, config)
    try:
        credentials = _cached_credentials(site.gsc_credentials)
    except (OSError, InvalidValue) as exc:
        raise OutboundError(f"gsc_credentials: {exc}", permanent=True) from None
    policy = Policy.of(config)
    if not credentials.valid:
        try:
            transport = token_transport(policy)
            with _lock, transport.session:
                credentials.refresh(transport)
        except google.auth.exceptions.RefreshError as exc:
            raise OutboundError(f"the token address refused the service account: {exc}",
                                permanent=not getattr(exc, "retryable", False)) from None
        except google.auth.exceptions.TransportError as exc:
            raise OutboundError(f"could not get an access token: {exc}; will try again") from None
    meanings = {status: text.format(property=site.gsc_property,
                                    account=credentials.service_account_email)
                for status, text in MEANINGS.items()}
    return send("PUT", delivery.target, policy, meanings=meanings,
                headers={"Authorization": f"Bearer {credentials.token}"})
