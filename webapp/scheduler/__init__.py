"""The scheduler process: its clock decides what is due and hands it to the workers (`clock`).
The schedule rules it reads are `webapp.schedules`'; nothing in the domain imports this
package, which drives the work.

Others use the names below, each loaded from its module on first use (PEP 562), so that
`flask --help` does not load the work the clock drives.
"""

from __future__ import annotations

from webapp import front_door

_HOMES = {
    "SiteStatus": "clock", "add_jobs": "clock", "deliver_due": "clock",
    "enqueue_due_sites": "clock", "run_due_sites": "clock", "status": "clock",
}

__all__ = [*_HOMES]


__getattr__ = front_door(__name__, _HOMES)
