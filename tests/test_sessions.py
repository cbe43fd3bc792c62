"""Steps that wait for a commit (webapp.db.after_commit), and what uses them: a deleted site's
files go only once its deletion is committed."""

from __future__ import annotations

from tests.builders import make_site, make_urls
from webapp import jobs
from webapp.db import after_commit
from webapp.models import utcnow
from webapp.sitemaps import get_store
from webapp.sites import delete_site, find_site


def test_a_step_runs_once_when_the_transaction_commits(session):
    ran = []
    make_site(session)  # some work in the transaction
    after_commit(session, lambda: ran.append("step"))
    session.flush()
    assert ran == []
    session.commit()
    assert ran == ["step"]
    session.commit()
    assert ran == ["step"]


def test_a_step_is_dropped_when_the_transaction_rolls_back(session):
    ran = []
    make_site(session)
    find_site(session, "shop").name = "Changed"
    after_commit(session, lambda: ran.append("step"))
    session.rollback()
    find_site(session, "shop").name = "Changed again"
    session.commit()
    assert ran == []


def test_a_savepoint_rolled_back_keeps_the_steps_of_its_transaction(session):
    ran = []
    make_site(session)
    find_site(session, "shop").name = "Changed"
    after_commit(session, lambda: ran.append("step"))
    savepoint = session.begin_nested()
    savepoint.rollback()
    session.commit()
    assert ran == ["step"]


def test_a_step_waits_for_the_outer_commit_when_its_savepoint_is_released(session):
    ran = []
    make_site(session)
    with session.begin_nested():
        find_site(session, "shop").name = "Changed"
        after_commit(session, lambda: ran.append("step"))
    assert ran == []  # released, but the outer transaction can still roll back
    session.rollback()
    session.commit()
    assert ran == []


def test_a_step_of_a_savepoint_rolled_back_is_dropped(session):
    ran = []
    make_site(session)
    savepoint = session.begin_nested()
    after_commit(session, lambda: ran.append("inner"))
    savepoint.rollback()
    after_commit(session, lambda: ran.append("outer"))
    session.commit()
    assert ran == ["outer"]


def test_a_session_closed_without_a_commit_forgets_its_steps(session):
    ran = []
    make_site(session)
    find_site(session, "shop").name = "Changed"
    after_commit(session, lambda: ran.append("step"))
    session.close()
    find_site(session, "shop").name = "Changed again"  # the same session, used again
    session.commit()
    assert ran == []


def test_a_deleted_sites_files_go_only_once_the_deletion_is_committed(app, session):
    site = make_site(session)
    make_urls(session, site, 2)
    jobs.regenerate(site.id, app)
    store, key = get_store(app), site.storage_key
    assert store.current_generation(key) is not None

    delete_site(session, find_site(session, "shop"), utcnow(), store)
    session.rollback()  # thought better of it
    assert store.current_generation(key) is not None and find_site(session, "shop")

    delete_site(session, find_site(session, "shop"), utcnow(), store)
    assert store.current_generation(key) is not None  # not yet: the deletion may still fail
    session.commit()
    assert store.current_generation(key) is None and not store.site_folder(key).exists()
