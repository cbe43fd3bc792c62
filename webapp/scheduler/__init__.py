"""When work is due: site schedules as people write them (`schedules`), and the clock of the
scheduler process that runs what is due (`clock`). Others use the names below."""

from webapp.scheduler.clock import SiteStatus, add_jobs, deliver_due, run_due_sites, status
from webapp.scheduler.schedules import (
    DEFAULT_SCHEDULE,
    check_schedule,
    check_timezone,
    next_run,
)

__all__ = ["DEFAULT_SCHEDULE", "SiteStatus", "add_jobs", "check_schedule", "check_timezone",
           "deliver_due", "next_run", "run_due_sites", "status"]
