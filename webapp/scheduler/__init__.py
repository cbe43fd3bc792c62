"""When work is due: site schedules as people write them (`schedules`), and the clock of the
scheduler process that decides what is due and hands it to the workers (`clock`).

Others use the names below, each loaded from its module on first use (PEP 562): the work
itself (`jobs`) needs the schedule rules, and the clock needs the work.
"""

from __future__ import annotations

from importlib import import_module

_HOMES = {
    "SiteStatus": "clock", "add_jobs": "clock", "deliver_due": "clock",
    "enqueue_due_sites": "clock", "run_due_sites": "clock", "status": "clock",
    "DEFAULT_SCHEDULE": "schedules", "check_schedule": "schedules",
    "check_timezone": "schedules", "next_run": "schedules",
}

__all__ = [*_HOMES]


def __getattr__(name: str) -> object:
    if name not in _HOMES:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(import_module(f"{__name__}.{_HOMES[name]}"), name)
    globals()[name] = value
    return value
