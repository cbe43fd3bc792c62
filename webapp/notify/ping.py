"""Ping URL templates: GET each configured address with the sitemap URL in place of {sitemap}.

None is configured by default. Google's and Bing's anonymous ping endpoints are retired
(404 since 2023, 410 since 2022); a template pointing at them is refused.
"""

from __future__ import annotations

import re
from urllib.parse import quote, urlsplit

from webapp.errors import InvalidValue, rule_text
from webapp.models import Delivery, Site
from webapp.outbound import Answer, Policy, is_http_url, send

NAME = "Ping"  # as people read it
ANNOUNCES = "sitemap"  # the sitemap URL, once per generation that changed it
RETIRED = re.compile(r"(^|\.)(google|bing)\.com$")


def expand(template: str, sitemap_url: str) -> str:
    return template.replace("{sitemap}", quote(sitemap_url, safe=""))


def templates(site: Site) -> list[str]:
    return [line for line in (site.ping_urls or "").split("\n") if line]


def targets(site: Site) -> list[str]:
    """The addresses to GET for the site's sitemap, one per template."""
    return [expand(template, site.sitemap_url) for template in templates(site)]


def check_templates(value: str | list[str]) -> str | None:
    """Templates, each an http(s) URL with {sitemap}: comma-separated text as typed, or a list
    (the API's, whose items may hold commas); stored one per line."""
    parts = value if isinstance(value, list) else value.split(",")
    found = [part.strip() for part in parts if part.strip()]
    for template in found:
        if not is_http_url(template.replace("{sitemap}", "x")):
            raise InvalidValue("ping_urls", template, rule_text(
                "must be an http:// or https:// URL without a user name or password"))
        if len(template) > 1000:
            raise InvalidValue("ping_urls", template[:40], rule_text(
                "must be at most %(limit)s characters", limit=1000))
        if "{sitemap}" not in template:
            raise InvalidValue("ping_urls", template, rule_text(
                "must contain {sitemap}, which is replaced by the URL-encoded sitemap URL"))
        parts = urlsplit(template.replace("{sitemap}", "x"))
        if RETIRED.search(parts.hostname) and "/ping" in parts.path.lower():
            raise InvalidValue("ping_urls", template, rule_text(
                "is a retired endpoint (Google's answers 404 since 2023, Bing's 410 since "
                "2022); use Search Console and IndexNow instead"))
    return "\n".join(found) or None


SETTINGS = {"ping_urls": check_templates}


def blocked(site: Site, config: dict) -> str | None:
    """Pings need nothing but their templates: a site with templates can always send."""
    return None


def destination(site: Site, delivery: Delivery, config: dict) -> str:
    return delivery.target


def deliver(site: Site, delivery: Delivery, config: dict) -> Answer:
    return send("GET", delivery.target, Policy.of(config))
