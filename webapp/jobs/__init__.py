"""The work a worker runs for a site: generate and publish when due, roll back, "regenerate
now".

Job functions are importable and module-level, each owning its own transactions, and safe to
run twice or by two processes at once: a run holds the site's lease (leases.py) and is
recorded as a generation whatever happens (`run`). When a site is due is `due`'s; runs of
many sites at once, the small ones written together, are `batch`'s; a generation's number
within its site, `numbers`'. Every run logs to the
`webapp.jobs` logger."""

from __future__ import annotations

from webapp.jobs.batch import generate_many_if_due, regenerate_many_if_due
from webapp.jobs.due import changes_ready_at, due, due_site_ids, max_wait
from webapp.jobs.numbers import by_number, site_numbers
from webapp.jobs.run import (
    RETRY_AFTER_FAILURE,
    log_run,
    regenerate,
    regenerate_if_due,
    regenerate_now,
    rollback,
)

__all__ = ["RETRY_AFTER_FAILURE", "by_number", "changes_ready_at", "due", "due_site_ids",
           "generate_many_if_due", "log_run", "max_wait", "regenerate", "regenerate_if_due",
           "regenerate_many_if_due", "regenerate_now", "rollback", "site_numbers"]
