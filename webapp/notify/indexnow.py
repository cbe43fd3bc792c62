"""IndexNow: POST the URLs that changed, with the site's key, to one shared endpoint."""

from __future__ import annotations

import re
from collections.abc import Mapping
from urllib.parse import urlsplit

from sqlalchemy.orm import Session

from webapp.errors import InvalidValue
from webapp.models import Delivery, Site, new_indexnow_key
from webapp.notify.ledger import start_from_now
from webapp.outbound import Answer, OutboundError, Policy, endpoint_check, send
from webapp.protocol import directory

NAME = "IndexNow"  # as people read it
ANNOUNCES = "urls"  # the URLs that changed, planned from the change log
MAX_URLS = 10_000  # per request, by the protocol
_KEY = re.compile(r"[a-zA-Z0-9-]{8,128}")

MEANINGS = {
    200: "200 OK: the URLs were received",
    202: ("202 Accepted: the URLs were received and the key is still being checked; keep the "
          "key file online"),
    400: "400 Bad Request: the engine could not read the submission (a bug in this app)",
    403: ("403 Forbidden: the key is not valid; the engine could not fetch the key file at "
          "{key_location}, or it does not contain exactly the key"),
    422: ("422 Unprocessable Entity: URLs do not belong to {host}, or the key does not match "
          "the protocol's format"),
    429: "429 Too Many Requests: the engine asks to slow down; will try again later",
}


def check_key(value: str) -> str:
    """A key of the protocol's form; `new` makes a fresh one (rotation)."""
    value = value.strip()
    if value == "new":
        return new_indexnow_key()
    if not _KEY.fullmatch(value):
        raise InvalidValue("indexnow_key", value, "must be 8 to 128 characters: letters, digits "
                           "or '-' (or `new` for a fresh random key)")
    return value


SETTINGS = {"indexnow_key": check_key, "indexnow_endpoint": endpoint_check("indexnow_endpoint")}


def apply_settings(session: Session, site: Site, values: Mapping[str, object], base_url: str,
                   sitemap_url: str) -> None:
    """The rules of the site's settings taken together, before `values` are set: a key beside
    the sitemap must cover the site's pages; turned on, IndexNow hears of changes from now on,
    not of every URL the site ever had."""
    _check_key_location(base_url, sitemap_url,
                        values.get("indexnow_key_location", site.indexnow_key_location))
    if values.get("indexnow_enabled") and not site.indexnow_enabled and site.id is not None:
        start_from_now(session, site.id, "indexnow")


def _check_key_location(base_url: str, sitemap_url: str, location: str) -> None:
    if location == "sitemap":
        folder = directory(sitemap_url)
        if not base_url.startswith(folder):
            raise InvalidValue("indexnow_key_location", "sitemap", f"needs the site's pages "
                               f"({base_url}) under the sitemap's folder ({folder}): IndexNow "
                               "accepts only URLs under the key file's folder")


def enabled(site: Site) -> bool:
    return site.indexnow_enabled


def blocked(site: Site, config: dict) -> str | None:
    """IndexNow needs only to be turned on: the key is always there (a new site gets one)."""
    return None


def host(site: Site) -> str:
    return urlsplit(site.base_url).netloc


def key_location(site: Site) -> str:
    """Where engines fetch the key: the host's root, or the sitemap's folder."""
    if site.indexnow_key_location == "sitemap":
        return f"{directory(site.sitemap_url)}{site.indexnow_key}.txt"
    scheme, netloc, *_ = urlsplit(site.base_url)
    return f"{scheme}://{netloc}/{site.indexnow_key}.txt"


def accepts(site: Site, loc: str) -> bool:
    """Whether the engine takes `loc` with this site's key: same host, under the key's folder."""
    parts = urlsplit(loc)
    key_folder = urlsplit(key_location(site)).path.rpartition("/")[0] + "/"
    return parts.netloc == host(site) and parts.path.startswith(key_folder)


def payload(site: Site, urls: list[str]) -> dict:
    return {"host": host(site), "key": site.indexnow_key, "keyLocation": key_location(site),
            "urlList": urls}


def endpoint(site: Site, config: dict) -> str:
    return site.indexnow_endpoint or config["INDEXNOW_ENDPOINT"]


def destination(site: Site, delivery: Delivery, config: dict) -> str:
    return endpoint(site, config)


def deliver(site: Site, delivery: Delivery, config: dict) -> Answer:
    """Send the delivery's URLs (at most MAX_URLS, split so when planned) in one POST."""
    if not site.indexnow_enabled:
        raise OutboundError("not sent: IndexNow was turned off for this site (indexnow_enabled)",
                            permanent=True)
    urls = (delivery.urls or "").split("\n")
    delivery.target = endpoint(site, config)
    meanings = {status: text.format(key_location=key_location(site), host=host(site))
                for status, text in MEANINGS.items()}
    return send("POST", delivery.target, Policy.of(config), json=payload(site, urls),
                meanings=meanings,
                headers={"Content-Type": "application/json; charset=utf-8"})
