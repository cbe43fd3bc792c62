"""Incremental regeneration: a run rewrites only the files that hold changed URLs, names the
stored bodies of the others, and moves the index's lastmod only for the rewritten ones."""

from __future__ import annotations

import random
import shutil
from datetime import UTC, datetime, timedelta

from sqlalchemy import delete, func, select, update

from tests.builders import make_site, make_urls
from tests.sitemap_schema import NS, locs, parse
from tests.test_generate import published
from webapp import jobs
from webapp.models import FileBody, Generation, Site, StoredFile, Url
from webapp.sitemaps import get_store
from webapp.urls import delete_url, save_url

T = [datetime(2026, 1, day, 12, tzinfo=UTC) for day in range(1, 29)]


def index_lastmods(app, site) -> dict[str, str]:
    index = parse(published(app, site)["sitemap.xml"])
    names = [loc.rsplit("/", 1)[-1] for loc in locs(index)]
    return dict(zip(names, index.xpath("//sm:lastmod/text()", namespaces=NS)))


def bodies(app, site) -> dict[str, str]:
    """The digest of each file served, `.gz` twins included: a file written again with other
    content has another one."""
    files = get_store(app).published(site.storage_key).files.values()
    return {**{f.name: f.sha256 for f in files},
            **{f"{f.name}.gz": f.sha256 for f in files if f.gzip_size}}


def stored_bodies(session) -> int:
    session.rollback()
    return session.scalar(select(func.count()).select_from(FileBody))


def live_locs_in_files(app, site) -> list[str]:
    files = published(app, site)
    names = [loc.rsplit("/", 1)[-1] for loc in locs(parse(files["sitemap.xml"]))]
    return [loc for name in names for loc in locs(parse(files[name]))]


def live_locs_in_db(session, site) -> list[str]:
    session.expire_all()
    return session.scalars(select(Url.loc).where(Url.site_id == site.id,
                                                 Url.deleted_at.is_(None)).order_by(Url.id)).all()


def test_one_changed_url_rewrites_only_its_file(app, session):
    site = make_site(session, max_urls_per_file=10)
    page = make_urls(session, site, 30)
    jobs.regenerate(site.id, app, now=T[0])
    before, dated = bodies(app, site), index_lastmods(app, site)
    count = stored_bodies(session)
    save_url(session, site, page[15], {"lastmod": "2026-01-02"})
    session.commit()
    shutil.rmtree(get_store(app).bodies)  # the worker's cache is empty: reuse needs no bytes

    jobs.regenerate(site.id, app, now=T[1])

    after = bodies(app, site)
    rewritten = {name for name in after if after[name] != before.get(name)}
    assert rewritten == {"sitemap-2.xml", "sitemap-2.xml.gz", "sitemap.xml", "sitemap.xml.gz"}
    assert stored_bodies(session) == count + 2  # the rewritten file and the index, no other
    assert index_lastmods(app, site) == {**dated, "sitemap-2.xml": "2026-01-02T12:00:00+00:00"}
    assert "<lastmod>2026-01-02</lastmod>" in published(app, site)["sitemap-2.xml"].read_text()


def test_new_urls_join_the_last_file_and_then_new_files(app, session):
    site = make_site(session, max_urls_per_file=10)
    make_urls(session, site, 25)
    jobs.regenerate(site.id, app, now=T[0])
    before = bodies(app, site)
    for n in range(8):
        save_url(session, site, f"{site.base_url}new/{n}")
    session.commit()

    jobs.regenerate(site.id, app, now=T[1])

    after = bodies(app, site)
    assert after["sitemap-1.xml"] == before["sitemap-1.xml"]
    assert after["sitemap-2.xml"] == before["sitemap-2.xml"]
    assert sorted(index_lastmods(app, site)) == ["sitemap-1.xml", "sitemap-2.xml",
                                                 "sitemap-3.xml", "sitemap-4.xml"]
    assert live_locs_in_files(app, site) == live_locs_in_db(session, site)


def test_emptying_a_middle_file_falls_back_to_a_full_run(app, session):
    site = make_site(session, max_urls_per_file=10)
    page = make_urls(session, site, 30)
    jobs.regenerate(site.id, app, now=T[0])
    before = bodies(app, site)
    for loc in page[10:20]:
        delete_url(session, site, loc)
    session.commit()

    jobs.regenerate(site.id, app, now=T[1])

    after = bodies(app, site)
    assert sorted(index_lastmods(app, site)) == ["sitemap-1.xml", "sitemap-2.xml"]
    assert after["sitemap-1.xml"] == before["sitemap-1.xml"]  # written again, the same bytes
    # The files after the emptied one moved up: a run that kept them in place could not.
    assert locs(parse(published(app, site)["sitemap-2.xml"])) == page[20:30]
    assert live_locs_in_files(app, site) == live_locs_in_db(session, site)


def test_a_setting_that_shapes_every_file_rewrites_them_all(app, session):
    site = make_site(session, max_urls_per_file=10)
    make_urls(session, site, 30)
    jobs.regenerate(site.id, app, now=T[0])
    before = bodies(app, site)
    session.execute(update(Site).values(default_priority=0.3))
    session.commit()

    jobs.regenerate(site.id, app, now=T[1])

    after = bodies(app, site)
    assert all(after[name] != before[name] for name in before if name != "sitemap.xsl")
    assert all("<priority>0.3</priority>" in published(app, site)[f"sitemap-{n}.xml"].read_text()
               for n in (1, 2, 3))


def test_after_a_rollback_the_next_run_writes_everything(app, session):
    site = make_site(session, max_urls_per_file=10)
    page = make_urls(session, site, 30)
    first = jobs.regenerate(site.id, app, now=T[0])
    save_url(session, site, page[0], {"lastmod": "2026-01-02"})
    session.commit()
    jobs.regenerate(site.id, app, now=T[1])
    jobs.rollback(site.id, first.id, app, now=T[2])
    save_url(session, site, page[29], {"lastmod": "2026-01-03"})
    session.commit()

    jobs.regenerate(site.id, app, now=T[3])

    text = "".join(published(app, site)[f"sitemap-{n}.xml"].read_text() for n in (1, 2, 3))
    assert "<lastmod>2026-01-02</lastmod>" in text and "<lastmod>2026-01-03</lastmod>" in text


def test_random_edits_keep_the_files_equal_to_the_database(app, session):
    """Whatever sequence of adds, edits, deletions and undeletions, the published files list
    exactly the live URLs in id order, within the limits, each file once in the index."""
    rng = random.Random(8)
    site = make_site(session, max_urls_per_file=7)
    pages = make_urls(session, site, 40)
    jobs.regenerate(site.id, app, now=T[0])
    linked = 0
    for step in range(1, 25):
        before = bodies(app, site)
        for _ in range(rng.randint(1, 4)):
            action, loc = rng.random(), rng.choice(pages)
            live = session.scalar(select(Url.deleted_at).where(Url.loc == loc)) is None
            if action < 0.3:
                pages.append(f"{site.base_url}added/{step}/{len(pages)}")
                save_url(session, site, pages[-1])
            elif action < 0.6 and live:
                delete_url(session, site, loc)
            else:  # edit, or bring back a deleted one
                save_url(session, site, loc, {"lastmod": f"2026-01-{1 + step:02d}"})
        session.commit()
        jobs.regenerate(site.id, app, now=T[step])
        assert live_locs_in_files(app, site) == live_locs_in_db(session, site), step
        counts = [len(locs(parse(path))) for name, path in published(app, site).items()
                  if name.startswith("sitemap-") and name.endswith(".xml")]
        assert max(counts) <= 7, step
        after = bodies(app, site)
        linked += sum(after[name] == before.get(name) for name in after if ".xml" in name)
    assert linked > 0  # the runs did reuse files: this exercised the incremental path
    assert session.scalar(select(Generation.status).order_by(Generation.id.desc()).limit(1)) \
        == "succeeded"


def test_files_of_a_pruned_generation_are_never_reused(app, session):
    site = make_site(session, max_urls_per_file=10)
    page = make_urls(session, site, 30)
    run = jobs.regenerate(site.id, app, now=T[0])
    session.execute(delete(StoredFile))  # as if pruned, bodies and all
    session.execute(delete(FileBody))
    session.commit()
    save_url(session, site, page[0], {"lastmod": "2026-01-02"})
    session.commit()

    jobs.regenerate(site.id, app, now=T[0] + timedelta(days=1))

    assert live_locs_in_files(app, site) == live_locs_in_db(session, site)
    assert run.id != get_store(app).current_generation(site.storage_key)


def test_two_runs_in_one_second_never_publish_the_same_index_over_changed_files(app, session):
    """Lastmods have whole seconds: the second run's changed file is dated a second later,
    so the index (and its ETag) changes and a crawler revalidating it hears of the change."""
    site = make_site(session, max_urls_per_file=10)
    page = make_urls(session, site, 20)
    jobs.regenerate(site.id, app, now=T[0])
    first = published(app, site)["sitemap.xml"].read_bytes()
    save_url(session, site, page[3], {"lastmod": "2026-01-01"})
    session.commit()

    jobs.regenerate(site.id, app, now=T[0])  # the same second

    assert published(app, site)["sitemap.xml"].read_bytes() != first
    assert index_lastmods(app, site) == {"sitemap-1.xml": "2026-01-01T12:00:01+00:00",
                                         "sitemap-2.xml": "2026-01-01T12:00:00+00:00"}
