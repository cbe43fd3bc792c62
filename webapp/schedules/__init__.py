"""Site schedules as people write them (`every 6h`, `cron:0 3 * * *`, `off`): the pure rules
(`rules`: check one, the next run in a time zone) and the settings page's picker that writes
them (`picker`). Settings, runs and verification use them; the clock process that acts on
them (`webapp.scheduler`) is never imported from here, nor is anything that does work."""

from __future__ import annotations

from webapp.schedules.rules import DEFAULT_SCHEDULE, check_schedule, check_timezone, next_run

__all__ = ["DEFAULT_SCHEDULE", "check_schedule", "check_timezone", "next_run"]
