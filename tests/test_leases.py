"""A run's lease renewed beside it (leases.Keeper) never holds the run up."""

from __future__ import annotations

import threading
from contextlib import contextmanager

from sqlalchemy import select, text

from tests.builders import make_site, make_urls
from tests.probes import wait_for
from webapp import jobs, leases
from webapp.models import Site
from webapp.sitemaps import SitemapStore


def _renewal_waits_for_a_lock(app) -> bool:
    """Whether a renewal is waiting for a row lock (PostgreSQL)."""
    with app.extensions["db_engine"].connect() as connection:
        return bool(connection.scalar(text(
            "SELECT count(*) FROM pg_stat_activity WHERE wait_event_type = 'Lock' "
            "AND query LIKE 'UPDATE sites SET run_lease_until%'")))


def test_a_run_ends_while_a_renewal_waits_for_the_row_it_publishes(app, session, monkeypatch,
                                                                   caplog):
    """Once a run publishes, its transaction holds the site's row until the lease's release
    commits, so a renewal falling due then waits for the row. The run must not wait for that
    renewal in turn: a deadlock no database can see, holding the site for ever."""
    monkeypatch.setattr(leases, "RENEW", 0.05)
    monkeypatch.setattr(leases, "SQLITE_RENEW", 0.05)
    site = make_site(session)
    make_urls(session, site, 3)
    renewals: list[int] = []  # sessions the keeper opened
    open_now: list[int] = []  # of those, the ones not yet closed

    keeper_init = leases.Keeper.__init__

    def counted(self, open_session, site_id, owner):
        @contextmanager
        def opened():
            renewals.append(1)
            open_now.append(1)
            try:
                with open_session() as session:
                    yield session
            finally:
                open_now.pop()
        keeper_init(self, opened, site_id, owner)

    monkeypatch.setattr(leases.Keeper, "__init__", counted)
    postgresql = app.config["DATABASE_URL"].startswith("postgresql")
    publish = SitemapStore.publish_stored

    def publish_then_let_a_renewal_come(self, *args, **kwargs):
        moved = publish(self, *args, **kwargs)  # the site's row is the run's until it commits
        seen = len(renewals)
        # One under way already may wait for the run's write lock (SQLite, from the bodies
        # on): then no other starts until it gives up, and it is the one to wait for.
        wait_for(lambda: (open_now or len(renewals) > seen) and (
            not postgresql or _renewal_waits_for_a_lock(app)), 30, "a renewal to wait")
        return moved

    monkeypatch.setattr(SitemapStore, "publish_stored", publish_then_let_a_renewal_come)
    finished = {}
    run = threading.Thread(target=lambda: finished.update(
        generation=jobs.regenerate(site.id, app)), daemon=True)
    run.start()
    # Had the run waited for the renewal, that wait would end only once the renewal gave up
    # on the row: never on PostgreSQL (the ceiling below, for a stuck test), and on SQLite
    # after its busy timeout, with a warning that the lease was not renewed. Not a duration:
    # a run of three URLs may take long on a busy machine.
    wait_for(lambda: not run.is_alive(), 120, "the run to end")
    assert finished["generation"].status == "succeeded"
    assert not [r.getMessage() for r in caplog.records if "was not renewed" in r.getMessage()]
    # The renewal that waited changed nothing: the lease is given back for good.

    def given_back() -> bool:
        session.rollback()  # a new look each time
        return session.scalar(select(Site.run_owner).where(Site.id == site.id)) is None

    wait_for(given_back, 30, "the lease to be given back")
