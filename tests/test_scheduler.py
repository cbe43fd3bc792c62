"""Scheduling: schedules as written, runs when due (by an injected clock), debounced changes,
failures, deletion, a running scheduler that follows changed settings, and two schedulers on
one database."""

from __future__ import annotations

import io
import os
import subprocess
import sys
from datetime import UTC, datetime, timedelta

import pytest
from apscheduler.events import EVENT_JOB_ERROR, EVENT_JOB_EXECUTED
from apscheduler.schedulers.background import BackgroundScheduler
from sqlalchemy import select

from tests.builders import make_site
from tests.probes import AppProcesses, wait_for
from tests.test_cli import assert_fails_cleanly
from tests.test_notify import KEY, posted
from webapp import create_app, jobs, scheduler
from webapp.errors import InvalidValue
from webapp.leases import SiteBusy, claim, new_owner, release
from webapp.models import Delivery, Generation, utcnow
from webapp.schedules import check_schedule, next_run
from webapp.sitemaps import get_store
from webapp.sites import update_site
from webapp.urls import import_urls, save_url


@pytest.mark.parametrize("written, stored", [
    ("off", "off"), ("every 30s", "every 30s"), ("Every  6h", "every 6h"), ("every 90 m", "every 90m"),
    ("cron:0 3 * * *", "cron:0 3 * * *"), ("cron:  */15 * * * 1-5", "cron:*/15 * * * 1-5"),
])
def test_schedules_are_read_as_people_write_them(written, stored):
    assert check_schedule(written) == stored


@pytest.mark.parametrize("written", ["sometimes", "every", "every 0s", "every 5w", "cron:61 * * * *",
                                     "cron:0 3 * *", "0 3 * * *", "every 999999999999d",
                                     "every 366d", "cron:0 3 * * 8"])
def test_nonsense_schedules_are_refused(written):
    with pytest.raises(InvalidValue, match="schedule"):
        check_schedule(written)


def test_next_run_follows_the_schedule_and_its_time_zone():
    now = datetime(2026, 3, 28, 12, 0, tzinfo=UTC)
    assert next_run("every 6h", "UTC", now) == now + timedelta(hours=6)
    assert next_run("off", "UTC", now) is None
    # 03:00 in Paris is 02:00 UTC before the clocks change on 29 March, 01:00 UTC after.
    assert next_run("cron:0 3 * * *", "Europe/Paris", now) == datetime(2026, 3, 29, 1, 0, tzinfo=UTC)
    at_three = datetime(2026, 3, 28, 2, 0, tzinfo=UTC)
    assert next_run("cron:0 3 * * *", "Europe/Paris", at_three) == datetime(
        2026, 3, 29, 1, 0, tzinfo=UTC)  # the run at exactly now is the one being made


@pytest.mark.parametrize("weekdays, expected", [
    ("0", ["Sun"]), ("7", ["Sun"]), ("1-5", ["Mon", "Tue", "Wed", "Thu", "Fri"]),
    ("6,0", ["Sat", "Sun"]), ("mon", ["Mon"]),
])
def test_cron_weekdays_count_from_sunday_as_cron_does(weekdays, expected):
    at = datetime(2026, 11, 21, 12, 0, tzinfo=UTC)  # a Saturday
    days = []
    for _ in range(len(expected)):
        at = next_run(check_schedule(f"cron:0 3 * * {weekdays}"), "UTC", at)
        days.append(at.strftime("%a"))
    assert sorted(days) == sorted(expected)


def statuses(session, site) -> list[str]:
    session.expire_all()
    return list(session.scalars(select(Generation.status).where(Generation.site_id == site.id)
                                .order_by(Generation.id)))


def test_a_site_runs_when_its_schedule_is_due_and_missed_runs_coalesce(app, session):
    site = make_site(session)
    update_site(session, site, {"schedule": "every 1h"})
    save_url(session, site, f"{site.base_url}a")
    site.generated_seq = 10 ** 6  # leave the change trigger out of this test
    session.commit()
    start = site.next_run_at - timedelta(hours=1)
    assert scheduler.run_due_sites(app, start + timedelta(minutes=59)) == []
    assert [g.status for g in scheduler.run_due_sites(app, start + timedelta(hours=1))] == [
        "succeeded"]
    session.expire_all()
    assert site.next_run_at == start + timedelta(hours=2)
    # Ten hours of downtime: one run, and the next one an hour from then.
    later = start + timedelta(hours=12)
    assert len(scheduler.run_due_sites(app, later)) == 1
    assert scheduler.run_due_sites(app, later) == []
    session.expire_all()
    assert site.next_run_at == later + timedelta(hours=1)
    assert statuses(session, site) == ["succeeded", "unchanged"]


def test_a_burst_of_changes_gives_one_generation_after_the_delay(app, session):
    site = make_site(session, schedule="off", next_run_at=None, change_delay=60)
    for n in range(5):
        save_url(session, site, f"{site.base_url}page/{n}")
        session.commit()
    session.expire_all()
    last_change = site.changed_at
    assert scheduler.run_due_sites(app, last_change + timedelta(seconds=59)) == []
    assert len(scheduler.run_due_sites(app, last_change + timedelta(seconds=61))) == 1
    assert scheduler.run_due_sites(app, last_change + timedelta(seconds=120)) == []
    session.expire_all()
    generation = session.scalars(select(Generation)).one()
    assert generation.url_count == 5
    save_url(session, site, f"{site.base_url}page/9")
    session.commit()
    session.expire_all()
    assert len(scheduler.run_due_sites(app, site.changed_at + timedelta(seconds=61))) == 1


def test_a_changed_generation_is_followed_by_its_announcements(app, session, engine):
    site = make_site(session, base_url=engine.url_for("/"), schedule="off", next_run_at=None,
                     change_delay=0, indexnow_enabled=True, indexnow_key=KEY,
                     indexnow_endpoint=engine.url_for("/indexnow"))
    engine.expect_request("/indexnow").respond_with_data("", status=200)
    save_url(session, site, f"{site.base_url}a")
    session.commit()
    scheduler.run_due_sites(app, utcnow() + timedelta(seconds=1))
    scheduler.deliver_due(app)
    assert posted(engine)[0]["urlList"] == [f"{site.base_url}a"]


def test_edits_without_pause_still_run_after_the_maximum_wait(app, session):
    site = make_site(session, schedule="off", next_run_at=None, change_delay=60)
    save_url(session, site, f"{site.base_url}first")
    session.commit()
    session.expire_all()
    first = site.pending_since
    # Edits keep coming every 30 s: never quiet for 60 s, yet ten delays after the first...
    site.changed_at = first + timedelta(seconds=599)
    session.commit()
    assert scheduler.run_due_sites(app, first + timedelta(seconds=599)) == []
    assert len(scheduler.run_due_sites(app, first + timedelta(seconds=601))) == 1
    session.expire_all()
    assert site.pending_since is None


def test_a_failing_run_keeps_the_last_good_set_and_runs_again_next_time(app, session):
    """More URLs than an index can list at one URL per file: the run fails and says why."""
    site = make_site(session, schedule="every 1h", change_delay=0)
    save_url(session, site, f"{site.base_url}a")
    session.commit()
    assert jobs.regenerate(site.id, app).status == "succeeded"
    store = get_store(app)
    good = store.current_generation(site.storage_key)
    site.max_urls_per_file = 1
    import_urls(session, site, io.StringIO("\n".join(
        f"{site.base_url}p/{n}" for n in range(50_001))))
    session.commit()
    session.expire_all()
    [failed] = scheduler.run_due_sites(app, site.changed_at + timedelta(seconds=1))
    assert failed.status == "failed" and "at most 50000" in failed.error
    assert store.current_generation(site.storage_key) == good
    session.expire_all()
    assert site.change_seq > site.generated_seq  # the changes are still to be published
    assert scheduler.run_due_sites(app, site.changed_at + timedelta(seconds=2)) == []
    [again] = scheduler.run_due_sites(app, site.retry_at + timedelta(seconds=1))
    assert again.status == "failed"
    site.max_urls_per_file = 50_000
    session.commit()
    session.expire_all()
    [fixed] = scheduler.run_due_sites(app, site.next_run_at)  # the next scheduled run
    assert fixed.status == "succeeded" and fixed.url_count == 50_002
    session.expire_all()
    assert site.change_seq == site.generated_seq and site.retry_at is None


def test_a_site_being_generated_is_not_generated_again_at_the_same_time(app, session):
    site = make_site(session)
    owner = new_owner()
    claim(session, site.id, utcnow(), owner)
    with pytest.raises(SiteBusy, match="being generated"):
        jobs.regenerate(site.id, app)
    assert scheduler.run_due_sites(app, utcnow() + timedelta(days=1)) == []
    release(session, site.id, owner)
    assert jobs.regenerate(site.id, app).status == "succeeded"


def test_a_lease_whose_process_is_gone_is_taken_over_at_once(app, session):
    site = make_site(session)
    dead = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"],
                          capture_output=True, text=True).stdout.strip()
    site.run_owner = new_owner().rsplit(":", 2)[0] + f":{dead}:deadbeef"
    site.run_lease_until = utcnow() + timedelta(hours=1)
    session.commit()
    assert jobs.regenerate(site.id, app).status == "succeeded"


def test_deleting_a_site_removes_its_runs_files_and_ledger(app, session, runner):
    site = make_site(session, schedule="every 1s")
    other = make_site(session, name="Blog", base_url="https://blog.example.com/",
                      schedule="every 1s")
    save_url(session, site, f"{site.base_url}a")
    session.commit()
    jobs.regenerate(site.id, app)
    claim(session, site.id, utcnow(), owner := new_owner())
    assert_fails_cleanly(runner.invoke(args=["sites", "delete", "shop", "--yes"]),
                         "being generated")
    release(session, site.id, owner)
    folder = get_store(app).site_folder(site.storage_key)
    assert folder.exists()
    result = runner.invoke(args=["sites", "delete", "shop", "--yes"])
    assert result.exit_code == 0 and result.stdout == "deleted shop\n"
    assert not folder.exists()
    session.expire_all()
    assert session.scalars(select(Generation)).all() == []
    assert [g.site_id for g in scheduler.run_due_sites(app, utcnow() + timedelta(days=1))] == [
        other.id]
    assert_fails_cleanly(runner.invoke(args=["sites", "delete", "shop", "--yes"]), "no site")


def test_scheduler_settings_and_status_on_the_command_line(runner, session, app):
    site = make_site(session)
    for bad, words in (("schedule=often", ("schedule",)), ("change_delay=-1", ("change_delay",)),
                       ("timezone=Mars/Base", ("timezone", "Europe/Paris"))):
        assert_fails_cleanly(runner.invoke(args=["sites", "set", "shop", bad]), *words)
    result = runner.invoke(args=["sites", "set", "shop", "schedule=cron:30 2 * * *",
                                 "timezone=America/New_York", "change_delay=120"])
    assert result.exit_code == 0, result.output
    output = runner.invoke(args=["scheduler", "status"]).stdout
    assert output.startswith("shop\tcron:30 2 * * * (America/New_York)\tnext ")
    assert output.rstrip().endswith("never run")
    jobs.regenerate(site.id, app)
    output = runner.invoke(args=["scheduler", "status"]).stdout
    assert "\tlast " in output and ", succeeded, took " in output


def test_a_running_scheduler_follows_changed_schedules_without_a_restart(app, session):
    app = create_app({**{name: app.config[name] for name in (
        "DATABASE_URL", "SECRET_KEY", "INSTANCE_PATH", "SITEMAPS_DIR", "INDEXNOW_ENDPOINT",
        "GSC_ENDPOINT", "OUTBOUND_ALLOW", "CELERY_BROKER_URL", "CELERY_TASK_ALWAYS_EAGER")},
        "SCHEDULER_TICK_SECONDS": 0.1})  # eager: the clock's queued work runs in its thread
    site = make_site(session, schedule="off", next_run_at=None)
    save_url(session, site, f"{site.base_url}a")
    site.generated_seq = 10 ** 6
    session.commit()
    background = BackgroundScheduler(timezone="UTC")
    scheduler.add_jobs(background, app)
    ticks = []  # the clock's ticks that have ended, counted rather than waited for
    background.add_listener(lambda event: ticks.append(event) if event.job_id == "queue-due-sites"
                            else None, EVENT_JOB_EXECUTED | EVENT_JOB_ERROR)

    def ticks_after(count: int, more: int) -> None:
        wait_for(lambda: len(ticks) >= count + more, 60, f"{more} ticks of the clock")

    background.start()
    try:
        ticks_after(0, 3)
        assert statuses(session, site) == []  # off: nothing runs
        update_site(session, site, {"schedule": "every 1s"})
        site.next_run_at = utcnow()
        session.commit()
        wait_for(lambda: len(statuses(session, site)) >= 2, 60, "two scheduled runs")
        update_site(session, site, {"schedule": "off"})
        session.commit()
        ticks_after(len(ticks), 2)  # a tick in hand may make a run; the next one saw "off"
        count = len(statuses(session, site))
        ticks_after(len(ticks), 3)
        assert len(statuses(session, site)) == count
        assert not [tick for tick in ticks if tick.exception]
    finally:
        background.shutdown(wait=True)
        app.extensions["db_engine"].dispose()


def processes_env(app, database_url: str) -> dict[str, str]:
    """What the app's own processes need to share with the test: its database and instance
    folder (the embedded broker is a folder there)."""
    return {**os.environ, "DATABASE_URL": database_url, "SECRET_KEY": "test",
            "INSTANCE_PATH": app.config["INSTANCE_PATH"],
            "SITEMAPS_DIR": app.config["SITEMAPS_DIR"], "SCHEDULER_TICK_SECONDS": "1",
            "OUTBOUND_ALLOW": "127.0.0.1", "CELERY_BROKER_URL": ""}


def test_a_stopped_worker_finishes_the_run_in_hand(app, session, database_url, tmp_path):
    """The clock queues a due site on the embedded broker; the worker that took it is told to
    stop in the middle of the run and finishes it first."""
    site = make_site(session, schedule="off", next_run_at=None, change_delay=0)
    import_urls(session, site, io.StringIO("\n".join(
        f"{site.base_url}p/{n}" for n in range(300_000))))
    session.commit()
    with AppProcesses(tmp_path, processes_env(app, database_url)) as processes:
        clock, worker = processes.scheduler(), processes.worker()
        # A ceiling, not a duration: a scheduler's and a worker's start take many seconds
        # under load.
        wait_for(lambda: statuses(session, site) == ["running"], 180, "a run to start")
        log = processes.stop(worker)
        processes.stop(clock)
    assert worker.returncode == 0, log
    assert statuses(session, site) == ["succeeded"], log
    assert get_store(app).current_generation(site.storage_key) is not None


def test_two_schedulers_and_two_workers_never_do_the_same_work_twice(app, session, engine,
                                                                   database_url, tmp_path):
    """Two `scheduler run` and two `worker` processes on one database and the embedded broker,
    sites due every second and changes to announce: no site is ever generated by both at
    once, and every record is sent once."""
    engine.expect_request("/indexnow").respond_with_data("", status=200)
    sites = []
    for n in range(3):
        site = make_site(session, name=f"Site {n}", base_url=engine.url_for(f"/s{n}/"),
                         change_delay=0, indexnow_enabled=True, indexnow_key=KEY,
                         indexnow_endpoint=engine.url_for("/indexnow"))
        update_site(session, site, {"schedule": "every 1s"})
        import_urls(session, site, io.StringIO("\n".join(
            f"{site.base_url}p/{i}" for i in range(3000))))
        sites.append(site)
    session.commit()
    with AppProcesses(tmp_path, processes_env(app, database_url)) as processes:
        started = [processes.scheduler(), processes.scheduler(), processes.worker(),
                   processes.worker()]
        wait_for(lambda: all(len(statuses(session, site)) >= 2 for site in sites), 180,
                 "two runs of every site")
        for n, site in enumerate(sites):  # changes while both run
            save_url(session, site, f"{site.base_url}new/{n}")
            session.commit()
        wait_for(lambda: len({url for body in posted(engine) for url in body["urlList"]})
                 == 3 * 3001, 180, "every URL announced")
        errors = [processes.stop(process) for process in started]
    assert all("Traceback" not in error for error in errors), errors
    session.expire_all()
    runs = session.execute(select(Generation.site_id, Generation.started_at,
                                  Generation.finished_at, Generation.status)
                           .order_by(Generation.site_id, Generation.started_at)).all()
    assert {status for *_, status in runs} <= {"succeeded", "unchanged"}
    for site in sites:
        mine = [(start, end) for site_id, start, end, _ in runs if site_id == site.id]
        assert len(mine) >= 3
        for (_, end), (next_start, _) in zip(mine, mine[1:]):
            assert end <= next_start  # one at a time
    deliveries = session.scalars(select(Delivery)).all()
    assert deliveries and all(d.status == "delivered" and d.attempts == 1 for d in deliveries)
    sent = [url for body in posted(engine) for url in body["urlList"]]
    assert len(sent) == len(set(sent)) == 3 * 3001


def test_changes_that_became_ready_while_a_run_looked_get_a_run_queued(app, session, tmp_path):
    # The run of a burst's message found the changes not quiet yet, and by the time it asked
    # again they were: that message was theirs, so without another the run waited for the
    # clock (and never came with workers alone).
    from tests.test_workers import node
    from webapp.tasks import queue

    embedded = node(app, tmp_path / "node")
    try:
        site = make_site(session, change_delay=2, schedule="off")
        save_url(session, site, f"{site.base_url}a")
        site.changed_at = utcnow() - timedelta(seconds=3)  # quiet now
        site.run_queued_until = None  # the message has been taken (tasks.work.regenerate_due)
        session.commit()
        queue.again_when_ready(embedded, [site.id])
        messages = list((tmp_path / "node" / "broker" / "queue").iterdir())
        session.expire_all()
        assert len(messages) == 1 and site.run_queued_until is not None
        queue.again_when_ready(embedded, [site.id])  # queued already: not twice
        assert len(list((tmp_path / "node" / "broker" / "queue").iterdir())) == 1
    finally:
        embedded.extensions["db_engine"].dispose()


def test_a_ready_site_another_process_is_generating_is_left_to_it(app, session, tmp_path):
    # Queued now, its run would find the site busy and come back here at once, again and
    # again for as long as the other run lasts; that run asks the same when it is done.
    from tests.test_workers import node
    from webapp.tasks import queue

    embedded = node(app, tmp_path / "node")
    try:
        site = make_site(session, change_delay=0, schedule="off")
        save_url(session, site, f"{site.base_url}a")
        site.run_queued_until = None
        site.run_owner, site.run_lease_until = "elsewhere:1:run", utcnow() + timedelta(hours=1)
        session.commit()
        queue.again_when_ready(embedded, [site.id])
        assert not (tmp_path / "node" / "broker" / "queue").exists() or not list(
            (tmp_path / "node" / "broker" / "queue").iterdir())
        site.run_owner = site.run_lease_until = None  # that run ended without generating
        session.commit()
        queue.again_when_ready(embedded, [site.id])
        assert len(list((tmp_path / "node" / "broker" / "queue").iterdir())) == 1
    finally:
        embedded.extensions["db_engine"].dispose()
