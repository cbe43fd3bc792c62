"""IndexNow: POST the URLs that changed, with the site's key, to one shared endpoint."""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from urllib.parse import urlsplit

from flask_babel import gettext as _
from sqlalchemy.orm import Session

from webapp.errors import InvalidValue, ShownUrl, rule_text
from webapp.models import Delivery, Site, new_indexnow_key
from webapp.notify.ledger import start_from_now
from webapp.outbound import Answer, OutboundError, Policy, endpoint_check, send
from webapp.protocol import directory
from webapp.said import render, said

NAME = "IndexNow"  # as people read it
ANNOUNCES = "urls"  # the URLs that changed, planned from the change log
MAX_URLS = 10_000  # per request, by the protocol
_KEY = re.compile(r"[a-zA-Z0-9-]{8,128}")

# What each answer means, said in the reader's language (webapp.said); English in the ledger.
MEANINGS = {
    200: said("200 OK: the URLs were received"),
    202: said("202 Accepted: the URLs were received and the key is still being checked; keep "
              "the key file online"),
    400: said("400 Bad Request: the engine could not read the submission (a bug in this app)"),
    403: said("403 Forbidden: the key is not valid; the engine could not fetch the key file at "
              "%(key_location)s, or it does not contain exactly the key"),
    422: said("422 Unprocessable Entity: URLs do not belong to %(host)s, or the key does not "
              "match the protocol's format"),
    429: said("429 Too Many Requests: the engine asks to slow down; will try again later"),
}


def check_key(value: str) -> str:
    """A key of the protocol's form; `new` makes a fresh one (rotation)."""
    value = value.strip()
    if value == "new":
        return new_indexnow_key()
    if not _KEY.fullmatch(value):
        raise InvalidValue("indexnow_key", value, rule_text(
            "must be 8 to 128 characters: letters, digits or '-' (or `new` for a fresh random "
            "key)"))
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
            raise InvalidValue("indexnow_key_location", "sitemap", rule_text(
                "needs the site's pages (%(base_url)s) under the sitemap's folder (%(folder)s): "
                "IndexNow accepts only URLs under the key file's folder",
                base_url=ShownUrl(base_url), folder=ShownUrl(folder)))


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
    meanings = {status: {**item, "values": {"key_location": key_location(site),
                                            "host": host(site)}}
                for status, item in MEANINGS.items()}
    return send("POST", delivery.target, Policy.of(config), json=payload(site, urls),
                meanings=meanings,
                headers={"Content-Type": "application/json; charset=utf-8"})


@dataclass(frozen=True)
class KeyFileCheck:
    """What an engine would find at the key file's address: `outcome` is `ok`, `not_found`,
    `redirected`, `refused`, `unreachable`, `wrong_content` or `content_type` (the key is
    right, served as another type than text/plain)."""

    outcome: str
    url: str
    message: str

    @property
    def ok(self) -> bool:
        return self.outcome in ("ok", "content_type")


def verify_key_file(site: Site, config: dict) -> KeyFileCheck:
    """Fetch the key file as an engine would (GET, no redirects followed) and say what is wrong."""
    url = key_location(site)
    try:
        answer = send("GET", url, Policy.of(config))
    except OutboundError as exc:
        reason = render(exc.said) if exc.said is not None else \
            exc.meaning.removesuffix("; will try again")
        if exc.status is None:
            return KeyFileCheck("unreachable", url, _(
                "%(url)s cannot be reached: %(reason)s.", url=url, reason=reason))
        if exc.status == 404:
            return KeyFileCheck("not_found", url, _(
                "%(url)s is not found (404): the site's server does not serve the key file yet. "
                "Pass this address to this app (see How to publish).", url=url))
        if 300 <= exc.status < 400:
            return KeyFileCheck("redirected", url, _(
                "%(url)s answers with a redirect (%(reason)s): engines read the key at this "
                "address itself, so serve the file there.", url=url, reason=reason))
        return KeyFileCheck("refused", url, _("%(url)s answers %(reason)s.", url=url,
                                              reason=reason))
    # What the address holds instead is not shown: it may be a page inside the operator's
    # network, and no one here needs to read it.
    if answer.body.strip() != site.indexnow_key:
        return KeyFileCheck("wrong_content", url, _(
            "%(url)s answers, but does not contain exactly the key %(key)s: engines refuse the "
            "key until it does.", url=url, key=site.indexnow_key))
    kind = answer.content_type.split(";")[0].strip().lower()
    if kind != "text/plain":
        return KeyFileCheck("content_type", url, _(
            "%(url)s holds the right key, but is served as %(type)s: serve it as text/plain, "
            "as the IndexNow protocol describes a plain UTF-8 text file.", url=url,
            type=kind or _("no content type")))
    return KeyFileCheck("ok", url, _("%(url)s holds the right key: engines can verify it.",
                                     url=url))
