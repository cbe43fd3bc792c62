"""Schedules on the nights the clocks change: a cron time the clocks show twice runs once, at
its first showing, a cron time they skip runs once, as they jump past it, and `every N` keeps
counting real time."""

from __future__ import annotations

from collections import Counter
from datetime import UTC, date, datetime, time, timedelta
from zoneinfo import ZoneInfo

import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st
from sqlalchemy import select

from tests.builders import make_site
from webapp import scheduler
from webapp.models import Generation
from webapp.schedules import next_run

# The nights of 2025: New York goes back at 02:00 EDT (01:00-02:00 is shown twice) and forward
# at 02:00 EST (02:00-03:00 is skipped); Berlin goes back at 03:00 and forward at 02:00.
NIGHTS = {
    ("America/New_York", "back"): date(2025, 11, 2),
    ("America/New_York", "forward"): date(2025, 3, 9),
    ("Europe/Berlin", "back"): date(2025, 10, 26), ("Europe/Berlin", "forward"): date(2025, 3, 30),
}
# Zones whose clocks change by an hour, by half an hour (Lord Howe), at midnight (Santiago),
# at a quarter to three (Chatham), in the southern summer, and not at all.
ZONES = ["America/New_York", "Europe/Berlin", "Europe/London", "Australia/Sydney",
         "Australia/Lord_Howe", "America/Santiago", "Pacific/Chatham", "Asia/Tokyo", "UTC"]


def ticks(zone: str, day: date, every: timedelta):
    """The clock's ticks through the day before `day`, `day` and the day after, on `zone`'s
    calendar (as instants)."""
    moment = datetime.combine(day - timedelta(days=1), time(0), ZoneInfo(zone)).astimezone(UTC)
    end = datetime.combine(day + timedelta(days=2), time(0), ZoneInfo(zone)).astimezone(UTC)
    while moment < end:
        yield moment
        moment += every


def runs(schedule: str, zone: str, day: date, tick: timedelta = timedelta(minutes=5)) -> list[str]:
    """The runs a clock ticking every `tick` makes around `day`, each named by the time it was
    due as the clocks of `zone` show it. A site is due when its next_run_at has come, and its
    next run is counted from the tick that ran it (jobs.due and jobs.run._generate_if_due)."""
    made, next_run_at = [], None
    for now in ticks(zone, day, tick):
        if next_run_at is None or next_run_at <= now:
            if next_run_at is not None:
                made.append(next_run_at.astimezone(ZoneInfo(zone)).strftime("%d %H:%M %Z"))
            next_run_at = next_run(schedule, zone, now)
    return made


@pytest.mark.parametrize("zone, schedule, expected", [
    # The first 01:30 of the night; the second one shown is not run again.
    ("America/New_York", "cron:30 1 * * *", ["01 01:30 EDT", "02 01:30 EDT", "03 01:30 EST"]),
    ("America/New_York", "cron:30 1 * * 0", ["02 01:30 EDT"]),  # Sundays only
    ("Europe/Berlin", "cron:30 2 * * *", ["25 02:30 CEST", "26 02:30 CEST", "27 02:30 CET"]),
    ("Europe/Berlin", "cron:0,45 2,3 * * *", [
        "25 02:00 CEST", "25 02:45 CEST", "25 03:00 CEST", "25 03:45 CEST",
        "26 02:00 CEST", "26 02:45 CEST", "26 03:00 CET", "26 03:45 CET",
        "27 02:00 CET", "27 02:45 CET", "27 03:00 CET", "27 03:45 CET"]),
])
def test_a_cron_time_the_clocks_show_twice_runs_once(zone, schedule, expected):
    assert runs(schedule, zone, NIGHTS[zone, "back"]) == expected


@pytest.mark.parametrize("zone, schedule, expected", [
    # 02:30 is not shown that night: it runs as the clocks jump from 02:00 to 03:00.
    ("America/New_York", "cron:30 2 * * *", ["08 02:30 EST", "09 03:00 EDT", "10 02:30 EDT"]),
    ("America/New_York", "cron:30 2 * * 0", ["09 03:00 EDT"]),
    ("Europe/Berlin", "cron:30 2 * * *", ["29 02:30 CET", "30 03:00 CEST", "31 02:30 CEST"]),
    # Times either side of the gap are untouched; two skipped times make one run.
    ("Europe/Berlin", "cron:30 1 * * *", ["29 01:30 CET", "30 01:30 CET", "31 01:30 CEST"]),
    ("Europe/Berlin", "cron:0,30 2 * * *", [
        "29 02:00 CET", "29 02:30 CET", "30 03:00 CEST", "31 02:00 CEST", "31 02:30 CEST"]),
])
def test_a_cron_time_the_clocks_skip_runs_once_after_the_jump(zone, schedule, expected):
    assert runs(schedule, zone, NIGHTS[zone, "forward"]) == expected


@pytest.mark.parametrize("zone", ["America/New_York", "Europe/Berlin"])
@pytest.mark.parametrize("night, hours", [("back", 24), ("forward", 23)])
def test_an_hourly_cron_runs_once_an_hour_as_the_clocks_show_it(zone, night, hours):
    made = runs("cron:0 * * * *", zone, NIGHTS[zone, night], timedelta(minutes=1))
    on_the_day = [run for run in made if run.startswith(f"{NIGHTS[zone, night].day:02} ")]
    assert len(on_the_day) == hours
    assert len(set(run[:8] for run in made)) == len(made)  # no hour shown twice runs twice


@pytest.mark.parametrize("zone", ["America/New_York", "Europe/Berlin"])
@pytest.mark.parametrize("night, runs_in_the_day", [("back", 25), ("forward", 23)])
def test_every_n_counts_real_time_through_the_night(zone, night, runs_in_the_day):
    day = NIGHTS[zone, night]
    made = runs("every 1h", zone, day, timedelta(minutes=1))
    assert sum(run.startswith(f"{day.day:02} ") for run in made) == runs_in_the_day
    midnight = datetime.combine(day, time(0), ZoneInfo(zone))
    # A day later by the watch: midnight of the day after would be 23 or 25 hours away.
    assert next_run("every 1d", zone, midnight) - midnight == timedelta(hours=24)


def clock_changes(zone: str) -> list[datetime]:
    """Noon (UTC) of each day of 2020 to 2030 whose offset differs from the day before's."""
    tz, noon = ZoneInfo(zone), datetime(2020, 1, 1, 12, tzinfo=UTC)
    days = [noon + timedelta(days=n) for n in range(11 * 365)]
    return [day for before, day in zip(days, days[1:])
            if before.astimezone(tz).utcoffset() != day.astimezone(tz).utcoffset()]


CHANGES = {zone: clock_changes(zone) or [datetime(2025, 1, 1, tzinfo=UTC)] for zone in ZONES}


@st.composite
def zones_and_moments_before_a_change(draw) -> tuple[str, datetime]:
    zone = draw(st.sampled_from(ZONES))
    change = draw(st.sampled_from(CHANGES[zone]))
    return zone, change - timedelta(seconds=draw(st.integers(0, 3 * 86400)))


@settings(max_examples=400, deadline=None, database=None)
@given(zone_and_start=zones_and_moments_before_a_change(),
       hour=st.one_of(st.integers(0, 23), st.sampled_from([0, 1, 2, 3])),
       minute=st.sampled_from([0, 1, 15, 30, 45, 59]))
@example(zone_and_start=("America/New_York", datetime(2025, 11, 2, 6, 15, tzinfo=UTC)),
         hour=1, minute=30)  # in the second 01:00-02:00: the first 01:30 has run
@example(zone_and_start=("America/Santiago", datetime(2020, 9, 6, 4, 58, 59, tzinfo=UTC)),
         hour=0, minute=59)  # just after a jump past the time: it is owed
def test_a_daily_cron_runs_once_every_day_at_its_time_or_just_after_a_jump(
        zone_and_start, hour, minute):
    """Each day of the zone's calendar, one run: at the first moment the clocks show the time,
    or, the day they skip it, the moment they jump past it."""
    zone, now = zone_and_start
    tz = ZoneInfo(zone)

    def run_on(day: date) -> datetime:
        named = datetime.combine(day, time(hour, minute))
        moment = named.replace(tzinfo=tz).astimezone(UTC)  # fold=0: the first of two showings
        if moment.astimezone(tz).replace(tzinfo=None) == named:
            return moment
        moment = named.replace(tzinfo=tz, fold=1).astimezone(UTC)  # before the jump
        while moment.astimezone(tz).replace(tzinfo=None) < named:  # every zone here jumps
            moment += timedelta(minutes=1)                          # on a whole minute
        return moment

    day = now.astimezone(tz).date() - timedelta(days=1)
    while run_on(day) <= now:
        day += timedelta(days=1)
    for _ in range(4):
        following = next_run(f"cron:{minute} {hour} * * *", zone, now)
        assert following == run_on(day)
        assert following > now
        now, day = following, day + timedelta(days=1)


@settings(max_examples=60, deadline=None, database=None)
@given(zone=st.sampled_from(ZONES), hour=st.integers(0, 23),
       minute=st.sampled_from([0, 15, 30, 45]), tick=st.integers(1, 30))
def test_a_clock_ticking_at_any_pace_runs_a_daily_cron_once_each_night_the_clocks_change(
        zone, hour, minute, tick):
    for day in (date(2025, 3, 9), date(2025, 3, 30), date(2025, 4, 6), date(2025, 9, 7),
                date(2025, 9, 28), date(2025, 10, 5), date(2025, 10, 26), date(2025, 11, 2)):
        made = runs(f"cron:{minute} {hour} * * *", zone, day, timedelta(minutes=tick))
        per_day = Counter(run[:2] for run in made)
        assert per_day[f"{day.day:02}"] == 1, (day, made)
        assert max(per_day.values()) == 1, (day, made)


def test_the_scheduler_runs_a_site_once_on_the_night_its_time_is_shown_twice(app, session):
    new_york = ZoneInfo("America/New_York")
    site = make_site(session, schedule="cron:30 1 * * *", timezone="America/New_York",
                     next_run_at=datetime(2025, 11, 2, 5, 30, tzinfo=UTC))  # 01:30 EDT
    site.generated_seq = 10 ** 6  # leave the change trigger out of this test
    session.commit()
    made = [now.astimezone(new_york).strftime("%d %H:%M %Z")
            for now in ticks("America/New_York", date(2025, 11, 2), timedelta(minutes=10))
            if now >= datetime(2025, 11, 2, 5, tzinfo=UTC)  # from 01:00 EDT
            and scheduler.run_due_sites(app, now)]
    assert made == ["02 01:30 EDT", "03 01:30 EST"]
    session.expire_all()
    assert site.next_run_at == datetime(2025, 11, 4, 6, 30, tzinfo=UTC)  # 01:30 EST
    assert len(session.scalars(select(Generation).where(Generation.site_id == site.id)).all()) == 2
