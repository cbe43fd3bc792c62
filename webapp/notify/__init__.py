"""Telling search engines that sitemaps changed.

One module per engine (`indexnow`, `gsc`, `ping`), each with its settings' rules and its
`deliver`; the ledger of every announcement (`ledger`); the loop that plans and sends
(`delivery`), for a batch of sites at once (`plan_many`); what each engine has heard of a site
(`summary`); every engine and its settings (`engines`); and the pre-flight check of what
engines will fetch (`preflight`). Others use the names below, each loaded on first use
(PEP 562): naming an engine's settings loads neither the delivery loop nor google-auth.
"""

from __future__ import annotations

from webapp import front_door

# Each name others may use, and the module that defines it.
_HOMES = {
    "ENGINES": "engines", "SETTINGS": "engines", "apply_settings": "engines",
    "announce": "delivery", "announce_locs": "delivery", "blocked": "delivery",
    "deliver": "delivery", "delivery_lease": "delivery", "notify_site": "delivery",
    "due": "ledger", "is_held": "ledger", "retry": "ledger", "announce_many": "plan_many",
}
_MODULES = ("gsc", "gsc_account", "indexnow", "ping", "preflight", "summary")  # used whole

__getattr__ = front_door(__name__, _HOMES, _MODULES)

__all__ = [*_HOMES, *_MODULES]
