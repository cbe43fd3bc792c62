"""Several web nodes, each with a cache folder of its own, serve one database's published sets:
a node with an empty cache serves correctly from its first request, learns of a new generation
within its TTL, and answers a 304 without a query."""

from __future__ import annotations

import gzip
import re
import shutil
from pathlib import Path

import pytest
from sqlalchemy import event, func, select

from tests.builders import make_site, make_urls
from tests.probes import wait_for
from webapp import create_app, jobs
from webapp.models import FileBody, FileBodyPart, StoredFile
from webapp.sitemaps import get_store
from webapp.urls import delete_url, save_url
from webapp.accounts.users import create_user

SHOP = "https://shop.example.com"
# What every node of a deployment shares; each has its own INSTANCE_PATH (and so its cache).
SHARED = ("TESTING", "DATABASE_URL", "SECRET_KEY", "INDEXNOW_ENDPOINT", "GSC_ENDPOINT",
          "OUTBOUND_ALLOW")


@pytest.fixture
def node(app, tmp_path):
    """Another node on the test's database: its own instance folder, an empty cache."""
    made = []

    def make(name="b", **settings):
        other = create_app({**{key: app.config[key] for key in SHARED},
                            "INSTANCE_PATH": str(tmp_path / f"node-{name}"), **settings})
        made.append(other)
        return other

    yield make
    for other in made:
        other.extensions["db_engine"].dispose()


def fetch(app, path, **headers):
    response = app.test_client().get(path, headers=headers)
    data = response.get_data()
    response.close()
    return response.status_code, response.headers.get("ETag"), data


def every_variant(app, site) -> list[tuple[str, dict]]:
    """Each file of the published set as a crawler may ask for it: plain, gzip-encoded, and
    the `.gz` twin."""
    files = get_store(app).published(site.storage_key).files.values()
    asked = []
    for file in files:
        asked += [(file.name, {}), (file.name, {"Accept-Encoding": "gzip"})]
        if file.gzip_size is not None:
            asked.append((f"{file.name}.gz", {}))
    return asked


def served(app, site, asked) -> dict:
    return {(name, tuple(headers.items())): fetch(app, f"/sitemaps/{site.slug}/{name}", **headers)
            for name, headers in asked}


def bodies(session) -> tuple[int, int]:
    session.rollback()  # a fresh snapshot
    return (session.scalar(select(func.count()).select_from(FileBody)),
            session.scalar(select(func.count()).select_from(FileBodyPart)))


def test_a_node_with_an_empty_cache_serves_the_set_byte_for_byte(app, session, node):
    site = make_site(session, max_urls_per_file=2, stylesheet=True)
    make_urls(session, site, 5)
    assert jobs.regenerate(site.id, app).status == "succeeded"
    other = node()
    cache = Path(other.config["SITEMAPS_DIR"])
    assert cache != Path(app.config["SITEMAPS_DIR"]) and not cache.exists()

    asked = every_variant(app, site)
    first, second = served(app, site, asked), served(other, site, asked)

    assert len(asked) == 4 * 3 + 2  # three urlsets and the index, the stylesheet
    assert {answer[0] for answer in second.values()} == {200}
    assert second == first
    index = second[("sitemap.xml", ())][2]
    assert gzip.decompress(second[("sitemap.xml", (("Accept-Encoding", "gzip"),))][2]) == index
    assert b"<sitemapindex" in index and (cache / "bodies").is_dir()


def test_a_regeneration_stores_no_body_again_for_files_that_did_not_change(app, session):
    site = make_site(session, max_urls_per_file=10, stylesheet=True)
    page = make_urls(session, site, 30)
    jobs.regenerate(site.id, app)
    before = bodies(session)
    assert before == (5, 5)  # three urlsets, the index, the stylesheet; one part each
    for loc in page[10:20]:  # the middle file empties: a full run writes every file again
        delete_url(session, site, loc)
    session.commit()

    again = jobs.regenerate(site.id, app)

    assert (again.status, again.file_count) == ("succeeded", 3)
    # sitemap-1.xml is what it was, and the new sitemap-2.xml is the old sitemap-3.xml byte
    # for byte: only the index is a new body.
    assert bodies(session) == (before[0] + 1, before[1] + 1)


def test_a_node_serves_a_generation_published_elsewhere_once_its_ttl_has_passed(
        app, session, node):
    site = make_site(session)
    page = make_urls(session, site, 3)
    jobs.regenerate(site.id, app)
    other = node(PUBLISHED_TTL_SECONDS=1, SITE_CACHE_SECONDS=0)
    _, _, old = fetch(other, "/sitemaps/shop/sitemap.xml")
    assert page[0].encode() in old
    save_url(session, site, page[0], {"lastmod": "2026-02-03"})
    session.commit()

    assert jobs.regenerate(site.id, app).status == "succeeded"

    _, _, new = fetch(app, "/sitemaps/shop/sitemap.xml")  # the publishing node: at once
    assert new != old and b"<lastmod>2026-02-03</lastmod>" in new
    wait_for(lambda: fetch(other, "/sitemaps/shop/sitemap.xml")[2] == new, within=30,
             what="the other node serving the new generation")


def test_a_304_within_the_ttl_runs_no_sql(app, session, node):
    site = make_site(session)
    make_urls(session, site, 3)
    jobs.regenerate(site.id, app)
    other = node(PUBLISHED_TTL_SECONDS=3600, SITE_CACHE_SECONDS=3600)
    status, etag, _ = fetch(other, "/sitemaps/shop/sitemap.xml", **{"Accept-Encoding": "gzip"})
    assert status == 200
    statements = []
    event.listen(other.extensions["db_engine"], "before_cursor_execute",
                 lambda *args: statements.append(args[2]))

    not_modified = fetch(other, "/sitemaps/shop/sitemap.xml",
                         **{"Accept-Encoding": "gzip", "If-None-Match": etag})
    warm = fetch(other, "/sitemaps/shop/sitemap.xml", **{"Accept-Encoding": "gzip"})

    assert not_modified[0] == 304 and warm[0] == 200
    assert statements == []


def test_rollback_diff_incremental_runs_and_export_work_from_an_empty_cache(
        app, session, node, tmp_path):
    site = make_site(session, max_urls_per_file=10)
    page = make_urls(session, site, 30)
    first = jobs.regenerate(site.id, app)
    save_url(session, site, page[15], {"lastmod": "2026-02-03"})
    session.commit()

    # An incremental run on a worker whose cache is empty: the unchanged files are named by
    # digest, their bodies neither fetched nor stored again.
    worker = node("worker")
    count = bodies(session)
    second = jobs.regenerate(site.id, worker)
    assert second.status == "succeeded" and bodies(session)[0] == count[0] + 2
    asked = every_variant(worker, site)
    assert served(node("fresh"), site, asked) == served(worker, site, asked)

    # History: the diff reads both generations' files, fetched from the database.
    runner = node("cli").test_cli_runner()
    result = runner.invoke(args=["sitemaps", "diff", "shop"])
    assert result.exit_code == 0, result.output
    assert f"~ {page[15]}  (lastmod - -> 2026-02-03)" in result.output
    assert "0 added, 0 removed, 1 changed" in result.output
    viewer = node("dashboard")
    with viewer.app_context():
        create_user(session, "ann@example.com", "correct horse battery", "viewer")
        session.commit()
    client = viewer.test_client()
    form = client.get("/sign-in").text
    csrf = re.search(r'name="csrf_token" value="([^"]+)"', form).group(1)
    assert client.post("/sign-in", data={"email": "ann@example.com", "password":
                                         "correct horse battery", "csrf_token": csrf}
                       ).status_code == 302
    assert "0 added, 0 removed, 1 changed" in client.get(
        f"/sites/shop/generations/{second.id}").text

    # Export from another empty cache: the published files, as served.
    out = tmp_path / "public"
    result = node("export").test_cli_runner().invoke(args=["sitemaps", "export", "shop", str(out)])
    assert result.exit_code == 0, result.output
    for name, headers in asked:
        if not headers:
            assert (out / name).read_bytes() == fetch(worker, f"/sitemaps/shop/{name}")[2], name

    # A rollback run by a node that has never seen either generation's bytes.
    shutil.rmtree(Path(app.config["SITEMAPS_DIR"]) / "bodies")
    back = jobs.rollback(site.id, first.id, node("rollback"))
    assert back.status == "succeeded"
    part = fetch(node("after"), "/sitemaps/shop/sitemap-2.xml")[2]
    assert b"2026-02-03" not in part and page[15].encode() in part


def test_a_file_of_a_set_published_elsewhere_is_looked_for_again_not_refused(
        app, session, node):
    """Within its TTL a node may still hold the older set while a crawler, given the new index
    by another node, asks for a file only the new set has: the node looks again."""
    site = make_site(session, max_urls_per_file=2)
    make_urls(session, site, 2)
    jobs.regenerate(site.id, app)
    other = node(PUBLISHED_TTL_SECONDS=3600, SITE_CACHE_SECONDS=3600)
    assert fetch(other, "/sitemaps/shop/sitemap.xml")[0] == 200
    save_url(session, site, f"{SHOP}/new", {"lastmod": "2026-02-03"})  # a second file
    session.commit()
    jobs.regenerate(site.id, app)

    # Its TTL is an hour: only looking again can find the file (at most every 0.1 s).
    status, _, body = wait_for(lambda: (answer := fetch(other, "/sitemaps/shop/sitemap-2.xml"))[0]
                               != 404 and answer, within=60, what="the new file served")

    assert status == 200 and b"<lastmod>2026-02-03</lastmod>" in body
    assert fetch(other, "/sitemaps/shop/sitemap-9.xml")[0] == 404


def test_a_node_drops_cached_bodies_no_kept_generation_names(app, session):
    app.config["SITEMAP_KEEP_GENERATIONS"] = 2
    site = make_site(session, stylesheet=True)
    page = make_urls(session, site, 2)
    for day in range(1, 5):
        save_url(session, site, page[0], {"lastmod": f"2026-01-0{day}"})
        session.commit()
        jobs.regenerate(site.id, app)
    store = get_store(app)
    named = {f.sha256 for generation in store.kept_generations(site.storage_key)
             for f in store.generation_set(site.storage_key, generation).files.values()}
    assert len(named) == 3  # two sitemap.xml bodies and the stylesheet

    store.trim_cache(grace=0)

    cached = {path.name[:64] for path in store.bodies.iterdir()}
    assert cached == named


def test_a_prunes_drop_removes_only_the_bodies_no_kept_generation_names(app, session):
    site = make_site(session)
    page = make_urls(session, site, 2)
    store = get_store(app)
    for day in range(1, 4):
        save_url(session, site, page[0], {"lastmod": f"2026-01-0{day}"})
        session.commit()
        jobs.regenerate(site.id, app)
    named = {f.sha256 for generation in store.kept_generations(site.storage_key)
             for f in store.generation_set(site.storage_key, generation).files.values()}
    stale = "0" * 64  # a body no list names, cached both ways
    (store.bodies / stale).write_bytes(b"old")
    (store.bodies / f"{stale}.gz").write_bytes(b"old")

    assert store.cache.drop(named | {stale}, grace=0) == 2
    assert store.cache.drop({stale}) == 0  # gone already

    assert {path.name[:64] for path in store.bodies.iterdir()} == named


def test_a_body_named_again_while_a_prune_deletes_it_is_kept_whole(app, session):
    """Another run names a body the prune found unnamed (the same content again), committing
    just before the prune deletes the bodies: the body stays with every part of it, never a
    list naming a body whose parts went."""
    site = make_site(session)
    page = make_urls(session, site, 2)
    store = get_store(app)
    runs = []
    for day in (1, 2):
        save_url(session, site, page[0], {"lastmod": f"2026-01-0{day}"})
        session.commit()
        runs.append(jobs.regenerate(site.id, app))
    old = store.generation_set(site.storage_key, runs[0].id).files["sitemap.xml"]
    parts = session.scalar(select(func.count()).select_from(FileBodyPart)
                           .where(FileBodyPart.digest == old.sha256))
    assert parts >= 1
    engine = app.extensions["db_engine"]
    named_again = []

    def another_run(conn, cursor, statement, parameters, context, executemany):
        if statement.startswith("DELETE FROM file_bodies") and not named_again:
            with engine.begin() as other:  # a run of its own, committed at once
                other.execute(StoredFile.__table__.insert().values(
                    generation_id=runs[1].id, name="again.xml", kind="urlset",
                    digest=old.sha256, size=old.size, gzip_size=old.gzip_size))
            named_again.append(old.sha256)

    event.listen(engine, "before_cursor_execute", another_run)
    try:
        assert store.prune(site.storage_key, keep=1) == [runs[0].id]
    finally:
        event.remove(engine, "before_cursor_execute", another_run)

    assert named_again == [old.sha256]
    session.rollback()  # a fresh snapshot
    assert session.get(FileBody, old.sha256) is not None
    assert session.scalar(select(func.count()).select_from(FileBodyPart)
                          .where(FileBodyPart.digest == old.sha256)) == parts


def test_a_new_site_never_serves_the_cached_set_of_a_deleted_one(app, session):
    """SQLite gives a deleted row's id to the next row: a new site's first generation may take
    the id of a deleted site's, and must still serve its own files, not the set cached then."""
    from webapp.models import utcnow
    from webapp.sites import delete_site

    old = make_site(session, "Old", "https://old.example.com/", slug="old")
    make_urls(session, old, 2)
    jobs.regenerate(old.id, app)
    assert b"old.example.com" in fetch(app, "/sitemaps/old/sitemap.xml")[2]  # cached now
    old_generation = get_store(app).published(old.storage_key).generation
    delete_site(session, old, utcnow(), get_store(app))
    session.commit()

    new = make_site(session, "New", "https://new.example.com/", slug="new")
    make_urls(session, new, 2)
    jobs.regenerate(new.id, app)
    generation = get_store(app).published(new.storage_key).generation
    body = fetch(app, "/sitemaps/new/sitemap.xml")[2]
    assert b"new.example.com" in body and b"old.example.com" not in body, (
        old_generation, generation)
