"""Small sites generated together (sitemaps.small_sites, jobs.generate_many_if_due): the same
files as a run of their own, a few statements for a whole batch, and every site still run
when the batch cannot take it."""

from __future__ import annotations

import gzip
import re
import threading
from datetime import timedelta

import pytest
from sqlalchemy import event, func, select, update

from tests import sitemap_schema
from tests.builders import make_site, make_urls
from tests.test_generate import published
from webapp import jobs, leases, notify
from webapp.db import new_session
from webapp.jobs.numbers import next_numbers
from webapp.models import (
    Delivery,
    FileBodyPart,
    Generation,
    GenerationFile,
    Site,
    StoredFile,
    Url,
    UrlAlternate,
    UrlImage,
    UrlVideo,
    utcnow,
)
from webapp.sitemaps import SitemapStore, build, get_store, small_sites
from webapp.urls import delete_urls, save_url


def due_now(session, *sites: Site) -> None:
    """Make the sites' schedules due now."""
    session.execute(update(Site).where(Site.id.in_([s.id for s in sites]))
                    .values(next_run_at=None, schedule="every 6h"))
    session.commit()


def runs(session, site: Site) -> list[str]:
    session.expire_all()
    return list(session.scalars(select(Generation.status).where(Generation.site_id == site.id)
                                .order_by(Generation.id)))


def served_bytes(app, site) -> dict[str, bytes]:
    return {name: path.read_bytes() for name, path in published(app, site).items()}


def rich_site(session, name: str, **settings) -> Site:
    """A small site with images, alternates, videos, defaults and non-ASCII text."""
    site = make_site(session, name, f"https://{name.lower()}.example.com/", **settings)
    locs = make_urls(session, site, 30, lastmod="2026-03-01")
    urls = session.scalars(select(Url).where(Url.site_id == site.id).order_by(Url.id)).all()
    urls[3].priority, urls[3].changefreq = 0.8, "weekly"
    session.add_all([
        UrlImage(url_id=urls[0].id, loc=f"{locs[0]}/a.jpg", title="Tôkyô & <Kyoto>",
                 caption="写真", position=0),
        UrlImage(url_id=urls[0].id, loc=f"{locs[0]}/b.jpg", position=1),
        UrlImage(url_id=urls[5].id, loc=f"{locs[5]}/c.jpg", position=0),
        UrlAlternate(url_id=urls[1].id, hreflang="en", href=locs[1]),
        UrlAlternate(url_id=urls[1].id, hreflang="ja", href=locs[2]),
        UrlVideo(url_id=urls[1].id, position=0, thumbnail_loc=f"{locs[1]}/t.jpg",
                 title="Tôkyô & <Kyoto>", description="動画", player_loc=f"{locs[1]}/player",
                 duration=60, rating=4.5, restriction_relationship="deny",
                 restriction_countries="JP US", tags=["a&b", "c"], live=False),
        UrlVideo(url_id=urls[1].id, position=1, thumbnail_loc=f"{locs[1]}/u.jpg", title="Two",
                 description="Second", content_loc="https://cdn.example.net/2.mp4", tags=[]),
        UrlVideo(url_id=urls[6].id, position=0, thumbnail_loc=f"{locs[6]}/t.jpg", title="Six",
                 description="Sixth", content_loc="https://cdn.example.net/6.mp4", tags=[],
                 uploader="Me", uploader_info=f"{locs[6]}/me", platform_relationship="allow",
                 platforms="web tv"),
    ])
    session.commit()
    return site


SETTINGS = [
    {"stylesheet": True},
    {"stylesheet": False},
    {"default_changefreq": "daily", "default_priority": 0.3},
]


@pytest.mark.parametrize("settings", SETTINGS, ids=["stylesheet", "plain", "defaults"])
def test_a_batch_publishes_the_bytes_a_run_of_its_own_publishes(app, session, settings):
    site = rich_site(session, "Rich", **settings)
    due_now(session, site)
    assert jobs.generate_many_if_due([site.id], app) == {site.id: "succeeded"}
    batch = served_bytes(app, site)
    assert gzip.decompress(batch["sitemap.xml.gz"]) == batch["sitemap.xml"]
    assert batch["sitemap.xml"].count(b"<video:video>") == 3
    sitemap_schema.parse(published(app, site)["sitemap.xml"])
    assert ("sitemap.xsl" in batch) == (settings.get("stylesheet", False))
    # A run of its own writes the very same set: nothing to publish.
    assert jobs.regenerate(site.id, app).status == "unchanged"
    assert served_bytes(app, site) == batch


def test_a_run_of_its_own_then_a_batch_changes_nothing(app, session):
    site = rich_site(session, "Rich")
    alone = jobs.regenerate(site.id, app)
    before = served_bytes(app, site)
    due_now(session, site)
    assert jobs.generate_many_if_due([site.id], app) == {site.id: "unchanged"}
    assert served_bytes(app, site) == before
    assert get_store(app).current_generation(site.storage_key) == alone.id


def test_a_batch_publishes_changes_dated_after_the_last_set(app, session):
    sites = [make_site(session, f"S{n}", f"https://s{n}.example.com/") for n in range(3)]
    for site in sites:
        make_urls(session, site, 5)
    due_now(session, *sites)
    first = jobs.generate_many_if_due([s.id for s in sites], app)
    assert set(first.values()) == {"succeeded"}
    lastmods = {s.id: get_store(app).published(s.storage_key).files["sitemap.xml"].lastmod
                for s in sites}
    # One site changes (through the app's writer, so its change is counted); all are due.
    save_url(session, sites[1], "https://s1.example.com/new")
    session.commit()
    due_now(session, *sites)
    second = jobs.generate_many_if_due([s.id for s in sites], app)
    assert second == {sites[0].id: "unchanged", sites[1].id: "succeeded",
                      sites[2].id: "unchanged"}
    changed = get_store(app).published(sites[1].storage_key).files["sitemap.xml"]
    assert changed.lastmod > lastmods[sites[1].id]
    assert b"https://s1.example.com/new" in served_bytes(app, sites[1])["sitemap.xml"]
    session.expire_all()
    site = session.get(Site, sites[1].id)
    assert site.generated_seq == site.change_seq and site.pending_since is None
    assert site.next_run_at > utcnow() and site.run_owner is None


def test_a_batch_takes_its_small_sites_in_a_few_statements_whatever_their_number(app):
    def statements(count: int) -> int:
        with new_session(app) as session:
            sites = [make_site(session, f"N{count}-{n}", f"https://n{count}-{n}.example.com/")
                     for n in range(count)]
            for site in sites:
                make_urls(session, site, 3)
            ids = [s.id for s in sites]
            due_now(session, *sites)
        seen = []
        engine = app.extensions["db_engine"]

        def count_it(*_args):
            seen.append(1)

        event.listen(engine, "before_cursor_execute", count_it)
        try:
            outcome = jobs.generate_many_if_due(ids, app)
        finally:
            event.remove(engine, "before_cursor_execute", count_it)
        assert set(outcome.values()) == {"succeeded"}
        return len(seen)

    few, many = statements(3), statements(30)
    assert many == few, (few, many)
    assert many < 40


def test_a_batch_is_generated_and_announced_in_as_many_statements_for_5_sites_as_for_50(app):
    """Generation and announcement planning together (regenerate_many_if_due), with every
    engine having something to plan for every site: a first run (the engines' cursors
    written) and one after changes (the cursors moved) issue as many statements for a batch of
    5 sites as for one of 50."""
    set_up = {"indexnow_enabled": True, "ping_urls": "https://ping.example.com/?s={sitemap}",
              "gsc_property": "sc-domain:example.com"}  # no key: a "not sent" record
    engine = app.extensions["db_engine"]

    def statements(count: int) -> list[int]:
        with new_session(app) as session:
            sites = [make_site(session, f"P{count}-{n}", f"https://p{count}-{n}.example.com/",
                               **set_up) for n in range(count)]
            for site in sites:
                make_urls(session, site, 3)
            ids = [site.id for site in sites]
        seen: list[list[str]] = []

        def count_it(_conn, _cursor, statement, *_args):
            seen[-1].append(statement)

        for step in range(2):
            with new_session(app) as session:
                for site in session.scalars(select(Site).where(Site.id.in_(ids))):
                    save_url(session, site, f"{site.base_url}step/{step}")
                session.commit()
                due_now(session, *session.scalars(select(Site).where(Site.id.in_(ids))))
            seen.append([])
            event.listen(engine, "before_cursor_execute", count_it)
            try:
                outcome = jobs.regenerate_many_if_due(ids, app)
            finally:
                event.remove(engine, "before_cursor_execute", count_it)
            assert set(outcome.values()) == {"succeeded"}
        with new_session(app) as session:
            planned = session.execute(select(Delivery.engine, func.count()).where(
                Delivery.site_id.in_(ids)).group_by(Delivery.engine)).all()
        assert sorted(planned) == [("gsc", 2 * count), ("indexnow", 2 * count),
                                   ("ping", 2 * count)]
        return [len(run) for run in seen]

    few, many = statements(5), statements(50)
    assert many == few, (few, many)
    assert max(many) < 40, many


def test_a_batch_stores_its_new_bodies_in_one_statement_without_looking_them_up(app, session):
    """Its bodies are new as a rule: inserted skipping any stored already, not looked up first
    (a statement of its own, which scans the table whole while it has no statistics)."""
    sites = [make_site(session, f"B{n}", f"https://b{n}.example.com/") for n in range(3)]
    for site in sites:
        make_urls(session, site, 3)
    due_now(session, *sites)
    seen: list[str] = []
    engine = app.extensions["db_engine"]

    def count_it(_conn, _cursor, statement, *_args):
        if re.search(r"\bfile_bodies\b", statement):
            seen.append(statement)

    event.listen(engine, "before_cursor_execute", count_it)
    try:
        outcome = jobs.generate_many_if_due([s.id for s in sites], app)
    finally:
        event.remove(engine, "before_cursor_execute", count_it)
    assert set(outcome.values()) == {"succeeded"}
    assert [statement.split()[0] for statement in seen] == ["INSERT"], seen


def test_bodies_stored_already_keep_their_row_and_size(app, session):
    store = get_store(app)
    old, new = b"stored before", b"new here"
    sizes = store.store_bodies(session, {"a" * 64: (13, old)})
    session.commit()
    assert sizes == {"a" * 64: len(old)}
    sizes = store.store_bodies(session, {"a" * 64: (13, b"another copy, longer"),
                                         "b" * 64: (8, new)})
    session.commit()
    assert sizes == {"a" * 64: len(old), "b" * 64: len(new)}
    parts = dict(session.execute(select(FileBodyPart.digest, FileBodyPart.data)).all())
    assert parts == {"a" * 64: old, "b" * 64: new}


def test_a_batch_writes_its_sites_rows_once(app, session):
    """Lease, schedule and published set together: one UPDATE of the sites' rows for the
    whole batch, not one for the sets and another for the leases (on SQLite, where the lease
    is written when the sites are taken, one more)."""
    sites = [make_site(session, f"W{n}", f"https://w{n}.example.com/") for n in range(3)]
    for site in sites:
        make_urls(session, site, 3)
    due_now(session, *sites)
    seen: list[str] = []
    engine = app.extensions["db_engine"]

    def count_it(_conn, _cursor, statement, *_args):
        if statement.lstrip().startswith("UPDATE sites "):
            seen.append(statement)

    event.listen(engine, "before_cursor_execute", count_it)
    try:
        outcome = jobs.generate_many_if_due([s.id for s in sites], app)
    finally:
        event.remove(engine, "before_cursor_execute", count_it)
    assert set(outcome.values()) == {"succeeded"}
    sqlite = app.config["DATABASE_URL"].startswith("sqlite")
    assert len(seen) == (2 if sqlite else 1), seen
    session.expire_all()
    for site in sites:
        generation = session.scalar(select(Generation.id).where(Generation.site_id == site.id))
        assert session.get(Site, site.id).published_generation_id == generation
        assert session.get(Site, site.id).run_owner is None


def test_a_batch_run_a_newer_set_overtook_is_superseded_and_its_files_forgotten(
        app, session, monkeypatch):
    site = make_site(session)
    make_urls(session, site, 2)
    due_now(session, site)
    record = jobs.batch.record_small_sets
    newer = {}

    def and_a_newer_set_meanwhile(session_, store, runs):
        record(session_, store, runs)
        # A generation after the batch's own, published already (as a run of its own that
        # overtook the batch would leave it): the batch must not move the site back.
        later = Generation(site_id=site.id, number=next_numbers(session_, [site.id])[site.id],
                           status="succeeded", started_at=utcnow())
        session_.add(later)
        session_.flush()
        session_.execute(update(Site).where(Site.id == site.id)
                         .values(published_generation_id=later.id))
        newer["id"] = later.id

    monkeypatch.setattr(jobs.batch, "record_small_sets", and_a_newer_set_meanwhile)
    assert jobs.generate_many_if_due([site.id], app) == {site.id: "superseded"}
    session.expire_all()
    assert session.get(Site, site.id).published_generation_id == newer["id"]
    assert session.get(Site, site.id).run_owner is None
    superseded = session.scalar(select(Generation.id).where(
        Generation.site_id == site.id, Generation.status == "superseded"))
    assert superseded is not None and superseded < newer["id"]
    assert session.scalar(select(func.count()).select_from(StoredFile).where(
        StoredFile.generation_id == superseded)) == 0


def test_sites_the_batch_cannot_take_are_run_on_their_own(app, session):
    small = make_site(session, "Small", "https://small.example.com/")
    make_urls(session, small, 4)
    big = make_site(session, "Big", "https://big.example.com/", max_urls_per_file=3)
    make_urls(session, big, 7)  # three files and an index
    empty = make_site(session, "Empty", "https://empty.example.com/")
    busy = make_site(session, "Busy", "https://busy.example.com/")
    make_urls(session, busy, 2)
    quiet = make_site(session, "Quiet", "https://quiet.example.com/", schedule="off")
    make_urls(session, quiet, 2)
    due_now(session, small, big, empty, busy)
    leases.claim(session, busy.id, utcnow(), "elsewhere:1:live")  # a live run elsewhere
    gone = 10 ** 9
    outcome = jobs.generate_many_if_due([small.id, big.id, empty.id, busy.id, quiet.id, gone],
                                        app)
    assert outcome == {small.id: "succeeded", big.id: "succeeded", empty.id: "succeeded",
                       busy.id: None, quiet.id: None, gone: None}
    assert sorted(published(app, big)) == [
        "sitemap-1.xml", "sitemap-1.xml.gz", "sitemap-2.xml", "sitemap-2.xml.gz",
        "sitemap-3.xml", "sitemap-3.xml.gz", "sitemap.xml", "sitemap.xml.gz"]
    session.expire_all()
    assert session.get(Site, busy.id).run_owner == "elsewhere:1:live"  # left alone
    assert session.get(Site, quiet.id).run_owner is None  # its lease was given back
    assert runs(session, quiet) == [] and runs(session, busy) == []


def test_a_batch_that_fails_leaves_nothing_and_each_site_is_run_on_its_own(
        app, session, monkeypatch):
    sites = [make_site(session, f"F{n}", f"https://f{n}.example.com/") for n in range(3)]
    for site in sites:
        make_urls(session, site, 2)
    due_now(session, *sites)
    calls = []

    def broken(*args, **kwargs):
        calls.append(1)
        raise RuntimeError("the disk is on fire")

    monkeypatch.setattr(jobs.batch, "record_small_sets", broken)
    outcome = jobs.generate_many_if_due([s.id for s in sites], app)
    assert calls and outcome == {s.id: "succeeded" for s in sites}
    for site in sites:  # one run each, of their own: the batch's records were rolled back
        assert runs(session, site) == ["succeeded"]
        assert "sitemap.xml" in published(app, site)


def test_a_run_left_unfinished_is_recorded_as_interrupted_by_the_batch(app, session):
    site = make_site(session)
    make_urls(session, site, 2)
    session.add(Generation(site_id=site.id, number=1, status="running", started_at=utcnow()))
    session.commit()
    due_now(session, site)
    jobs.generate_many_if_due([site.id], app)
    assert runs(session, site) == ["failed", "succeeded"]


def test_old_generations_of_batched_sites_are_pruned(app, session):
    app.config["SITEMAP_KEEP_GENERATIONS"] = 2
    site = make_site(session)
    make_urls(session, site, 1)
    made = []
    for day in range(1, 5):
        session.execute(update(Url).values(lastmod=f"2026-01-0{day}"))
        session.commit()
        due_now(session, site)
        jobs.generate_many_if_due([site.id], app)
        made.append(session.scalar(select(func.max(Generation.id))))
    assert get_store(app).kept_generations(site.storage_key) == set(made[2:])


def test_two_batches_of_the_same_sites_at_once_generate_each_site_once(app, session):
    sites = [make_site(session, f"T{n}", f"https://t{n}.example.com/") for n in range(20)]
    for site in sites:
        make_urls(session, site, 3)
    due_now(session, *sites)
    ids = [s.id for s in sites]
    start = threading.Barrier(2)
    outcomes = []

    def batch():
        start.wait()
        outcomes.append(jobs.generate_many_if_due(ids, app))

    threads = [threading.Thread(target=batch) for _ in range(2)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    for site in sites:
        assert runs(session, site) == ["succeeded"]
        assert [o[site.id] for o in outcomes].count("succeeded") == 1


def test_only_sites_that_fit_one_file_are_small(app, session):
    site = make_site(session, max_urls_per_file=10)
    for count, small in ((0, False), (1, True), (10, True), (11, False)):
        site.url_count = count
        assert small_sites.is_small(site) is small
    site.max_urls_per_file, site.url_count = 50_000, small_sites.SMALL_SITE + 1
    assert not small_sites.is_small(site)


def test_a_site_grown_past_one_file_since_it_was_counted_is_run_on_its_own(app, session):
    site = make_site(session, max_urls_per_file=3)
    make_urls(session, site, 5)
    site.url_count = 2  # counted as small a moment ago
    session.commit()
    due_now(session, site)
    assert jobs.generate_many_if_due([site.id], app) == {site.id: "succeeded"}
    assert "sitemap-2.xml" in published(app, site)
    assert runs(session, site) == ["succeeded"]
    session.expire_all()
    assert session.get(Site, site.id).next_run_at > utcnow() - timedelta(seconds=1)


def test_a_batch_compresses_its_files_as_a_run_of_its_own_does(app, session, tmp_path):
    """A body is stored once per digest, by whichever path comes first: both must write the
    same gzip bytes (mtime 0, no file name, the same header)."""
    site = rich_site(session, "Rich")
    [run], _ = small_sites.write_small_sites(session, [site], utcnow())
    path = tmp_path / "sitemap.xml"
    path.write_bytes(run.body)
    build._compress_and_hash(path, run.file)
    assert run.bodies[run.file.sha256][1] == (tmp_path / "sitemap.xml.gz").read_bytes()


def test_a_site_that_shrank_to_one_file_keeps_the_layout_a_run_of_its_own_gives_it(
        app, session):
    """Which path made a set never shows: a site whose last set had several files and an
    index is handed back to `generate_site`, which decides what of that layout to keep."""
    twins = [make_site(session, f"W{n}", f"https://w{n}.example.com/", max_urls_per_file=3)
             for n in range(2)]
    for site in twins:
        make_urls(session, site, 5)
        assert jobs.regenerate(site.id, app).status == "succeeded"
        ids = session.scalars(select(Url.id).where(Url.site_id == site.id).order_by(Url.id))
        delete_urls(session, site, list(ids)[:2])
        session.commit()
    due_now(session, *twins)
    assert jobs.generate_many_if_due([twins[0].id], app) == {twins[0].id: "succeeded"}
    assert jobs.regenerate(twins[1].id, app).status == "succeeded"
    assert sorted(published(app, twins[0])) == sorted(published(app, twins[1]))


def test_a_batch_whose_pruning_fails_after_its_commit_still_reports_its_runs(
        app, session, monkeypatch):
    """The runs are committed: their outcome (which decides the announcements) stands even
    when dropping old generations fails afterwards."""
    app.config["SITEMAP_KEEP_GENERATIONS"] = 1
    site = make_site(session)
    make_urls(session, site, 2)
    due_now(session, site)
    assert jobs.generate_many_if_due([site.id], app) == {site.id: "succeeded"}
    session.execute(update(Url).values(lastmod="2026-01-02"))
    session.commit()
    due_now(session, site)

    def blip(self, removed):
        raise RuntimeError("the database went away for a moment")

    monkeypatch.setattr(SitemapStore, "drop_generations", blip)
    assert jobs.generate_many_if_due([site.id], app) == {site.id: "succeeded"}
    assert runs(session, site) == ["succeeded", "succeeded"]


def _records(app, session, site, twin) -> dict:
    """What the site's runs recorded and published, with `twin`'s host where the site's stands
    and its URL ids by their rank among the site's: equal for two sites with the same URLs
    generated the same way, whichever path generated them."""
    session.expire_all()
    host, other = site.base_url.encode(), twin.base_url.encode()
    rank = {url_id: n for n, url_id in enumerate(session.scalars(
        select(Url.id).where(Url.site_id == site.id).order_by(Url.id)))}
    generations = session.scalars(select(Generation).where(Generation.site_id == site.id)
                                  .order_by(Generation.id)).all()
    run = {g.id: n for n, g in enumerate(generations)}  # the n-th run of the site
    stored = session.execute(select(StoredFile).join(Generation).where(
        Generation.site_id == site.id).order_by(StoredFile.generation_id, StoredFile.name))
    return {
        "generations": [(g.status, g.url_count, g.file_count, g.bytes, g.layout, g.change_seq,
                         g.error, g.rollback_of) for g in generations],
        "files": [(run[f.generation_id], f.name, f.kind, f.url_count, f.bytes, f.lastmod,
                   rank[f.first_url_id], rank[f.last_url_id])
                  for f in session.scalars(select(GenerationFile).join(Generation).where(
                      Generation.site_id == site.id).order_by(GenerationFile.id))],
        "stored": [(run[f.generation_id], f.name, f.kind, f.size, f.lastmod)
                   for f in stored.scalars()],
        "served": {name: (gzip.decompress(data) if name.endswith(".gz") else data)
                   .replace(host, other) for name, data in served_bytes(app, site).items()},
        "ledger": [(run.get(d.generation_id), d.engine, d.target, d.url_count,
                    d.urls and d.urls.replace(site.base_url, twin.base_url), d.status,
                    d.attempts, d.attempt_limit, d.outcome)
                   for d in session.scalars(select(Delivery).where(Delivery.site_id == site.id)
                                            .order_by(Delivery.id))],
    }


def test_a_batch_records_and_announces_what_runs_of_their_own_do(app, session):
    """Twin sites (the same URLs on two hosts): one generated in batches with other sites,
    the other by runs of its own, at the same moments, then their announcements planned
    (together for the batch, notify.announce_many; on its own for the other). Every record,
    file and planned announcement matches, over a first run and one after changes: IndexNow's
    URLs, a ping per address, and Search Console's "not sent" (a property but no key)."""
    settings = {"indexnow_enabled": True, "indexnow_key": "twinkey-0123456789",
                "ping_urls": "https://ping.example.com/a?s={sitemap}\n"
                             "https://ping.example.net/b?s={sitemap}",
                "gsc_property": "sc-domain:twin.example.com"}
    batched = rich_site(session, "TwinA", **settings)
    alone = rich_site(session, "TwinB", **settings)
    # The same sitemap address too, as it shapes the files (their layout's digest); set
    # directly, past the rule that keeps two sites from publishing into one folder.
    session.execute(update(Site).where(Site.id == alone.id)
                    .values(sitemap_url=batched.sitemap_url))
    session.commit()
    others = [rich_site(session, f"Other{n}", stylesheet=bool(n)) for n in range(2)]
    moment = utcnow().replace(microsecond=0)
    # A first run, one after changes, and one after none (whose planning plans nothing).
    for step, status in enumerate(("succeeded", "succeeded", "unchanged")):
        if step == 1:  # a URL added, one changed, one deleted, on both twins
            for site in (batched, alone):
                save_url(session, site, f"{site.base_url}added")
                save_url(session, site, f"{site.base_url}page/4", {"lastmod": "2026-04-02"})
                first = session.scalar(select(func.min(Url.id)).where(Url.site_id == site.id))
                delete_urls(session, site, [first])
            session.commit()
        moment += timedelta(minutes=5)
        due_now(session, batched, alone, *others)
        outcome = jobs.regenerate_many_if_due([batched.id, *(s.id for s in others)], app,
                                              moment)
        assert outcome[batched.id] == status
        assert jobs.regenerate(alone.id, app, now=moment).status == status
        notify.announce(alone.id, app)
    mine, theirs = _records(app, session, batched, alone), _records(app, session, alone, alone)
    assert [status for status, *_ in mine["generations"]] == ["succeeded", "succeeded",
                                                              "unchanged"]
    # (The first run's URLs, written directly, are in no change: IndexNow hears of the second.)
    assert {(run, engine, status) for run, engine, _, _, _, status, *_ in mine["ledger"]} == {
        (0, "ping", "pending"), (0, "gsc", "failed"), (1, "indexnow", "pending"),
        (1, "ping", "pending"), (1, "gsc", "failed")}
    assert mine == theirs
