"""The settings page's schedule picker: every N minutes, every N hours, daily at, weekly on,
a custom schedule or off, written as the schedule text the rules read (`every 30m`,
`cron:0 3 * * *`, `off`; see `rules`), and the next runs it makes."""

from __future__ import annotations

import re
from collections.abc import Mapping
from datetime import datetime

from flask_babel import gettext as _
from flask_babel import lazy_gettext as _l
from flask_babel import ngettext

from webapp.errors import InvalidValue, rule_text
from webapp.schedules.rules import check_schedule, check_timezone, next_run

MODES = (("minutes", _l("Every N minutes")), ("hours", _l("Every N hours")),
         ("daily", _l("Daily at")), ("weekly", _l("Weekly on")),
         ("custom", _l("Custom (cron or interval)")), ("off", _l("Off")))
# Cron's weekday numbers, Monday first as calendars in both languages show them.
WEEKDAYS = (("1", _l("Monday")), ("2", _l("Tuesday")), ("3", _l("Wednesday")),
            ("4", _l("Thursday")), ("5", _l("Friday")), ("6", _l("Saturday")),
            ("0", _l("Sunday")))
_CRON_AT = re.compile(r"cron:(\d{1,2}) (\d{1,2}) \* \* (\*|[0-7])")
_TIME = re.compile(r"(\d{1,2}):(\d{2})")


def state(schedule: str) -> dict[str, str]:
    """The picker's fields for a stored schedule: the simplest mode that writes it back."""
    fields = {"mode": "custom", "every": "", "time": "03:00", "weekday": "1",
              "custom": schedule}
    if schedule == "off":
        return {**fields, "mode": "off", "custom": ""}
    every = re.fullmatch(r"every (\d+)([mh])", schedule)
    if every:
        mode = "minutes" if every.group(2) == "m" else "hours"
        return {**fields, "mode": mode, "every": every.group(1), "custom": ""}
    at = _CRON_AT.fullmatch(schedule)
    if at and int(at.group(1)) < 60 and int(at.group(2)) < 24:
        time = f"{int(at.group(2)):02d}:{int(at.group(1)):02d}"
        weekday = at.group(3)
        if weekday == "*":
            return {**fields, "mode": "daily", "time": time, "custom": ""}
        return {**fields, "mode": "weekly", "time": time, "weekday": str(int(weekday) % 7),
                "custom": ""}
    return fields


def describe(schedule: str) -> str:
    """The schedule in the reader's words ("Every 6 hours", "毎日 03:00"); a custom one as
    written."""
    fields = state(schedule)
    mode = fields["mode"]
    if mode == "off":
        return _("Off")
    if mode in ("minutes", "hours"):
        every = int(fields["every"])
        if mode == "minutes":
            return ngettext("Every %(num)d minute", "Every %(num)d minutes", every)
        return ngettext("Every %(num)d hour", "Every %(num)d hours", every)
    if mode == "daily":
        return _("Daily at %(time)s", time=fields["time"])
    if mode == "weekly":
        day = dict(WEEKDAYS).get(fields["weekday"], fields["weekday"])
        return _("%(weekday)s at %(time)s", weekday=day, time=fields["time"])
    return schedule


def from_form(form: Mapping[str, str]) -> dict[str, str]:
    """The picker's fields as posted (to show them again)."""
    return {key: str(form.get(f"schedule_{key}", "")).strip()
            for key in ("mode", "every", "time", "weekday", "custom")}


def compose(form: Mapping[str, str]) -> str:
    """The schedule text the picker's posted fields make, checked; InvalidValue on
    `schedule` says which part is wrong."""
    fields = from_form(form)
    mode = fields["mode"]
    if mode == "off":
        return "off"
    if mode in ("minutes", "hours"):
        unit = "m" if mode == "minutes" else "h"
        if not (fields["every"].isascii() and fields["every"].isdigit()
                and int(fields["every"]) >= 1):
            raise InvalidValue("schedule", fields["every"], rule_text(
                "the number of minutes or hours must be a whole number of at least 1"))
        return check_schedule(f"every {int(fields['every'])}{unit}")
    if mode in ("daily", "weekly"):
        time = _TIME.fullmatch(fields["time"])
        if not time or int(time.group(1)) > 23 or int(time.group(2)) > 59:
            raise InvalidValue("schedule", fields["time"], rule_text(
                "the time must be written HH:MM, from 00:00 to 23:59"))
        weekday = "*"
        if mode == "weekly":
            if fields["weekday"] not in {value for value, _ in WEEKDAYS}:
                raise InvalidValue("schedule", fields["weekday"],
                                   rule_text("choose a day of the week"))
            weekday = fields["weekday"]
        return f"cron:{int(time.group(2))} {int(time.group(1))} * * {weekday}"
    if mode == "custom":
        text = fields["custom"]
        if len(text.split()) == 5 and not text.startswith(("cron:", "every")):
            text = f"cron:{text}"  # five bare cron fields, as crontab writes them
        return check_schedule(text)
    raise InvalidValue("schedule", mode, rule_text("choose how often to regenerate"))


def upcoming(schedule: str, timezone: str, now: datetime, count: int = 3) -> list[datetime]:
    """The next `count` runs after `now` (fewer when the schedule is off)."""
    check_timezone(timezone)
    runs: list[datetime] = []
    moment = now
    while len(runs) < count and (moment := next_run(schedule, timezone, moment)) is not None:
        runs.append(moment)
    return runs
