"""Site schedules as people write them (`every 6h`, `cron:0 3 * * *`, `off`), and when each
runs next. APScheduler's cron trigger finds the wall-clock times a schedule names; which moment
each is, on the nights the clocks change, is decided here."""

from __future__ import annotations

import re
from bisect import bisect_left
from datetime import UTC, datetime, timedelta
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from apscheduler.triggers.cron import CronTrigger

from webapp.errors import InvalidValue, rule_text

DEFAULT_SCHEDULE = "every 6h"
UNITS = {"s": 1, "m": 60, "h": 3600, "d": 86400}
MAX_INTERVAL = 365 * 86400
_EVERY = re.compile(r"every\s+0*(\d+)\s*([smhd])")
_INSTANT = timedelta(microseconds=1)


def check_timezone(value: str) -> str:
    value = value.strip()
    try:
        ZoneInfo(value)
    except (ZoneInfoNotFoundError, ValueError, OSError):  # OSError: a name too long for a file
        raise InvalidValue("timezone", value, rule_text(
            "must be a time zone name such as UTC, Europe/Paris or America/New_York")) from None
    return value


_WEEKDAYS = ("sun", "mon", "tue", "wed", "thu", "fri", "sat", "sun")


def _cron_weekdays(field: str) -> str:
    """Cron's weekday numbers (0 or 7 Sunday, 1 Monday) as names: APScheduler 3 reads numbers
    with 0 as Monday, so `1-5` would otherwise mean Tuesday to Saturday."""
    def name(match: re.Match) -> str:
        number = int(match.group())
        if number > 7:
            raise ValueError(f"weekday {number} is not 0 to 7")
        return _WEEKDAYS[number]

    return re.sub(r"(?<![/\d])\d+", name, field)  # a step (*/2) stays a number


def _cron(expression: str, timezone: str) -> CronTrigger:
    fields = expression.split()
    if len(fields) != 5:
        raise InvalidValue("schedule", f"cron:{expression}", rule_text(
            "is not a cron expression: it needs five fields (minute hour day month weekday), "
            "not %(count)s", count=len(fields)))
    try:
        minute, hour, day, month, weekday = fields
        return CronTrigger(minute=minute, hour=hour, day=day, month=month,
                           day_of_week=_cron_weekdays(weekday), timezone=ZoneInfo(timezone))
    except ValueError as exc:
        reason = str(exc) or "it needs five fields"
        raise InvalidValue("schedule", f"cron:{expression}", rule_text(
            "is not a cron expression (minute hour day month weekday): %(reason)s",
            reason=str(reason))) from None


def check_schedule(value: str) -> str:
    """`off`, `every N[s|m|h|d]` (at least 1 second) or `cron:M H DOM MON DOW`, tidied."""
    text = " ".join(value.strip().lower().split())
    if text == "off":
        return text
    every = _EVERY.fullmatch(text)
    if every:
        digits = every.group(1)  # more than 9 is over a year in any unit (and slow to read)
        seconds = int(digits) * UNITS[every.group(2)] if len(digits) <= 9 else MAX_INTERVAL + 1
        if not 1 <= seconds <= MAX_INTERVAL:
            raise InvalidValue("schedule", value, rule_text(
                "must be an interval from 1 second to 365 days"))
        return f"every {int(digits)}{every.group(2)}"
    if text.startswith("cron:"):
        expression = text.removeprefix("cron:").strip()
        _cron(expression, "UTC")
        return f"cron:{expression}"
    raise InvalidValue("schedule", value, rule_text(
        "must be `off`, `every N` with a unit s, m, h or d (`every 30m`), or `cron:` and five "
        "fields (`cron:0 3 * * *`)"))


def next_run(schedule: str, timezone: str, now: datetime) -> datetime | None:
    """The first run after `now`; None when the schedule is off.

    `every N` counts real time. A cron schedule names times on the wall clock of `timezone`,
    and each time named runs once, at the first moment the clocks show it or a later time:
    the first of the two 01:30s when the clocks go back at 02:00, and the moment they jump
    (03:00) for a 02:30 they skip going forward."""
    if schedule == "off":
        return None
    every = _EVERY.fullmatch(schedule)
    if every:
        return now + timedelta(seconds=int(every.group(1)) * UNITS[every.group(2)])
    zone = ZoneInfo(timezone)
    wall_clock = _cron(schedule.removeprefix("cron:"), "UTC")  # UTC has no clock changes
    shown = _shown(now, zone)
    # Later wall times run later, except in an hour shown twice: there the runs were made at
    # the first showing, behind `now` when it is in the second.
    while (shown := wall_clock.get_next_fire_time(None, shown.replace(tzinfo=UTC) + _INSTANT)):
        moment = _first_showing(shown.replace(tzinfo=None), zone)
        if moment > now:  # exactly now: that run is the one just made
            return moment
    return None


def _shown(moment: datetime, zone: ZoneInfo) -> datetime:
    """What the clocks of `zone` show at `moment` (naive)."""
    return moment.astimezone(zone).replace(tzinfo=None, fold=0)


def _first_showing(wall: datetime, zone: ZoneInfo) -> datetime:
    """The first moment the clocks of `zone` show `wall` or a later time."""
    moment = wall.replace(tzinfo=zone, fold=0).astimezone(UTC)  # fold=0: the first of two
    if _shown(moment, zone) == wall:
        return moment
    # Skipped: read with the offset after the jump `wall` is before it, with the one before,
    # after it; the jump, on a whole second, is the first second that shows a later time.
    early = wall.replace(tzinfo=zone, fold=1).astimezone(UTC)
    seconds = range(int((moment - early).total_seconds()) + 1)
    jump = bisect_left(seconds, True,
                       key=lambda second: _shown(early + timedelta(seconds=second), zone) > wall)
    return early + timedelta(seconds=jump)
