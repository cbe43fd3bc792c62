"""The scheduler process: its clock decides what is due and hands it to the workers (`clock`).
The schedule rules it reads are `webapp.schedules`'; nothing in the domain imports this
package, which drives the work.

Others use the names below, each loaded from its module on first use (PEP 562), so that
`flask --help` does not load the work the clock drives.
"""

from __future__ import annotations

from importlib import import_module

_HOMES = {
    "SiteStatus": "clock", "add_jobs": "clock", "deliver_due": "clock",
    "enqueue_due_sites": "clock", "run_due_sites": "clock", "status": "clock",
}

__all__ = [*_HOMES]


def __getattr__(name: str) -> object:
    if name not in _HOMES:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(import_module(f"{__name__}.{_HOMES[name]}"), name)
    globals()[name] = value
    return value
