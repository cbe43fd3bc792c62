"""Telling search engines that sitemaps changed.

One module per engine (`indexnow`, `gsc`, `ping`), each with its settings' rules and its
`deliver`; the ledger of every announcement (`ledger`); the loop that plans and sends
(`deliver`); and the pre-flight check of what engines will fetch (`preflight`). Others use the
names below.
"""

from webapp.notify import gsc, indexnow, ping, preflight
from webapp.notify.deliver import ENGINES, announce, deliver, delivery_lease, notify_site
from webapp.notify.indexnow import check_key_location
from webapp.notify.ledger import retry, start_from_now

# The rules of the site settings that belong to an engine, by setting name.
SETTINGS = {**indexnow.SETTINGS, **gsc.SETTINGS, **ping.SETTINGS}

__all__ = ["ENGINES", "SETTINGS", "announce", "check_key_location", "deliver", "delivery_lease",
           "notify_site", "preflight", "retry", "start_from_now"]
