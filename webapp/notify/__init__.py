"""Telling search engines that sitemaps changed.

One module per engine (`indexnow`, `gsc`, `ping`), each with its settings' rules and its
`deliver`; the ledger of every announcement (`ledger`); the loop that plans and sends
(`delivery`), for a batch of sites at once (`plan_many`); what each engine has heard of a site (`summary`); and the pre-flight check of
what engines will fetch (`preflight`). Others use the names below.
"""

from collections.abc import Mapping

from sqlalchemy.orm import Session

from webapp.models import Site
from webapp.notify import gsc, gsc_account, indexnow, ping, preflight, summary
from webapp.notify.delivery import (
    ENGINES,
    announce,
    announce_locs,
    blocked,
    deliver,
    delivery_lease,
    notify_site,
)
from webapp.notify.ledger import due, retry
from webapp.notify.plan_many import announce_many

# The rules of the site settings that belong to an engine, by setting name.
SETTINGS = {**indexnow.SETTINGS, **gsc.SETTINGS, **ping.SETTINGS}


def apply_settings(session: Session, site: Site, values: Mapping[str, object], base_url: str,
                   sitemap_url: str) -> None:
    """Each engine's rules for a site's settings taken together (InvalidValue), and what it
    does when they change; called before the validated `values` are set on `site`."""
    for engine in ENGINES.values():
        if hasattr(engine, "apply_settings"):
            engine.apply_settings(session, site, values, base_url, sitemap_url)


__all__ = ["ENGINES", "SETTINGS", "announce", "announce_locs", "announce_many", "apply_settings", "blocked",
           "deliver", "delivery_lease", "due", "gsc_account", "indexnow", "notify_site",
           "preflight", "retry", "summary"]
