"""Generation: protocol-exact files, splitting, the index, gzip twins, atomic publishing, records."""

from __future__ import annotations

import gzip
import hashlib
import os
import shutil
import threading
from datetime import UTC, datetime

import pytest
from sqlalchemy import func, select, text

from tests.builders import make_site, make_urls
from tests.sitemap_schema import NS, locs, parse
from webapp import jobs
from webapp.errors import InvalidValue
from webapp.db import new_session
from webapp.jobs.numbers import next_numbers
from webapp.models import (
    FileBody,
    FileBodyPart,
    Generation,
    GenerationFile,
    StoredFile,
    Url,
    UrlAlternate,
    UrlImage,
)
from webapp.sitemaps import get_store
from webapp.sitemaps.build import (
    Limits,
    UrlsetWriter,
    image_fragment,
    url_fragment,
    urlset_open,
    write_index,
)
from webapp.sitemaps import MissingBody, SitemapStore
from webapp.sitemaps.publish import Entry
from webapp.urls import save_url

T1 = datetime(2026, 1, 1, 12, 0, 0, tzinfo=UTC)
T2 = datetime(2026, 2, 1, 12, 0, 0, tzinfo=UTC)


def published(app, site):
    """Every file served for the site, `.gz` twins included, by name."""
    store = get_store(app)
    files = store.published(site.storage_key)
    if files is None:
        return {}
    paths = {f.name: store.local(f) for f in files.files.values()}
    paths.update({f"{f.name}.gz": f.gzip_path for f in files.files.values() if f.gzip_size})
    return dict(sorted(paths.items()))


def all_published_locs(app, site, entry="sitemap.xml"):
    files = published(app, site)
    root = parse(files[entry])
    if root.tag.endswith("sitemapindex"):
        names = [loc.rsplit("/", 1)[-1] for loc in locs(root)]
        return [loc for name in names for loc in locs(parse(files[name]))]
    return locs(root)


def test_small_site_is_one_valid_urlset_with_a_gzip_twin(app, session):
    site = make_site(session, stylesheet=True)
    save_url(session, site, "https://shop.example.com/a?x=1&y='2'", {"lastmod": "2024-01-02",
             "changefreq": "daily", "priority": "0.8"})
    save_url(session, site, "https://shop.example.com/サイトマップ", {"lastmod": "2004-12-23T18:00:15+09:00"})
    session.commit()

    generation = jobs.regenerate(site.id, app)

    files = published(app, site)
    assert sorted(files) == ["sitemap.xml", "sitemap.xml.gz", "sitemap.xsl"]
    assert gzip.decompress(files["sitemap.xml.gz"].read_bytes()) == files["sitemap.xml"].read_bytes()
    raw = files["sitemap.xml"].read_text()
    assert raw.startswith('<?xml version="1.0" encoding="UTF-8"?>\n'
                          '<?xml-stylesheet type="text/xsl" href="sitemap.xsl"?>\n<urlset ')
    assert "x=1&amp;y=&apos;2&apos;" in raw
    root = parse(files["sitemap.xml"])
    assert locs(root) == ["https://shop.example.com/a?x=1&y='2'",
                          "https://shop.example.com/%E3%82%B5%E3%82%A4%E3%83%88%E3%83%9E%E3%83%83%E3%83%97"]
    assert root.xpath("//sm:lastmod/text()", namespaces=NS) == ["2024-01-02", "2004-12-23T09:00:15+00:00"]
    assert root.xpath("//sm:changefreq/text()", namespaces=NS) == ["daily"]
    assert root.xpath("//sm:priority/text()", namespaces=NS) == ["0.8"]
    assert (generation.status, generation.url_count, generation.file_count) == ("succeeded", 2, 1)
    assert generation.bytes == files["sitemap.xml"].stat().st_size
    assert generation.finished_at is not None and generation.error is None


def test_namespaces_are_declared_only_when_extensions_are_used(app, session):
    site = make_site(session)
    make_urls(session, site, 2)
    jobs.regenerate(site.id, app)
    plain = published(app, site)["sitemap.xml"].read_text()
    assert "xmlns:image" not in plain and "xmlns:xhtml" not in plain

    save_url(session, site, "https://shop.example.com/de/", images=["https://cdn.example.net/a b.jpg"],
             alternates=["de=https://shop.example.com/de/", "en=https://shop.example.com/en/"])
    session.commit()
    jobs.regenerate(site.id, app)
    root = parse(published(app, site)["sitemap.xml"])
    assert root.xpath("//image:loc/text()", namespaces=NS) == ["https://cdn.example.net/a%20b.jpg"]
    assert root.xpath("//xhtml:link/@hreflang", namespaces=NS) == ["de", "en"]
    assert "xmlns:image" in published(app, site)["sitemap.xml"].read_text()


def test_extensions_of_many_urls_stay_with_their_own_url(app, session):
    site = make_site(session, max_urls_per_file=3)
    for n in range(7):
        save_url(session, site, f"https://shop.example.com/p{n}",
                 images=[f"https://cdn.example.net/{n}-{i}.jpg" for i in range(n % 3)])
    session.commit()
    jobs.regenerate(site.id, app)
    files = published(app, site)
    for name in ("sitemap-1.xml", "sitemap-2.xml", "sitemap-3.xml"):
        for url in parse(files[name]).xpath("sm:url", namespaces=NS):
            n = url.findtext(f"{{{NS['sm']}}}loc").rsplit("p", 1)[-1]
            images = url.xpath("image:image/image:loc/text()", namespaces=NS)
            assert images == [f"https://cdn.example.net/{n}-{i}.jpg" for i in range(int(n) % 3)]


def test_large_site_is_split_by_url_count_and_listed_in_an_index(app, session):
    site = make_site(session, max_urls_per_file=3, stylesheet=True)
    expected = make_urls(session, site, 7)

    generation = jobs.regenerate(site.id, app, now=T1)

    files = published(app, site)
    assert sorted(files) == ["sitemap-1.xml", "sitemap-1.xml.gz", "sitemap-2.xml",
                             "sitemap-2.xml.gz", "sitemap-3.xml", "sitemap-3.xml.gz",
                             "sitemap.xml", "sitemap.xml.gz", "sitemap.xsl"]
    index = parse(files["sitemap.xml"])
    assert locs(index) == [f"https://shop.example.com/sitemap-{n}.xml" for n in (1, 2, 3)]
    assert index.xpath("//sm:lastmod/text()", namespaces=NS) == ["2026-01-01T12:00:00+00:00"] * 3
    assert [len(locs(parse(files[f"sitemap-{n}.xml"]))) for n in (1, 2, 3)] == [3, 3, 1]
    assert all_published_locs(app, site) == expected
    assert generation.url_count == 7 and generation.file_count == 4


def test_index_points_to_the_directory_of_the_public_sitemap_url(app, session):
    site = make_site(session, base_url="https://shop.example.com/maps/", max_urls_per_file=1,
                     sitemap_url="https://shop.example.com/maps/index.xml")
    make_urls(session, site, 2)
    jobs.regenerate(site.id, app)
    files = published(app, site)
    assert locs(parse(files["index.xml"])) == ["https://shop.example.com/maps/index-1.xml",
                                               "https://shop.example.com/maps/index-2.xml"]


def test_files_are_split_before_they_pass_the_byte_limit(tmp_path):
    header = urlset_open()
    fragment = "<url><loc>https://shop.example.com/x</loc></url>\n"
    exact = len(header) + 3 * len(fragment) + len("</urlset>\n")
    for max_bytes, expected_counts in ((exact, [3, 1]), (exact - 1, [2, 2])):
        folder = tmp_path / f"bytes-{max_bytes}"
        folder.mkdir()
        built = UrlsetWriter(folder, "s", header, Limits(max_bytes=max_bytes)).write(
            (n, fragment) for n in range(4))
        assert [f.url_count for f in built] == expected_counts
        assert all(f.bytes <= max_bytes for f in built)
        assert built[0].bytes == (exact if max_bytes == exact else exact - len(fragment))
        for f in built:
            assert (folder / f.name).stat().st_size == f.bytes
            parse(folder / f.name)


def test_non_ascii_extension_text_counts_in_bytes_not_characters(tmp_path):
    header = urlset_open(images=True)
    fragment = url_fragment("https://shop.example.com/x", None, None, None,
                            image_fragment("https://cdn.example.net/i.jpg", "日本語" * 100, None))
    assert len(fragment.encode()) > len(fragment)
    max_bytes = len(header.encode()) + len(fragment.encode()) + len("</urlset>\n")
    built = UrlsetWriter(tmp_path, "s", header, Limits(max_bytes=max_bytes)).write(
        [(1, fragment), (2, fragment)])
    assert [f.url_count for f in built] == [1, 1]
    assert [(tmp_path / f.name).stat().st_size for f in built] == [max_bytes, max_bytes]


def test_deleted_urls_leave_the_sitemap_and_defaults_fill_empty_fields(app, session):
    site = make_site(session, default_changefreq="weekly", default_priority=0.3)
    save_url(session, site, "https://shop.example.com/keep")
    save_url(session, site, "https://shop.example.com/own", {"changefreq": "daily", "priority": "0.0"})
    save_url(session, site, "https://shop.example.com/gone")
    session.execute(Url.__table__.update().where(Url.loc.endswith("/gone")).values(deleted_at=T1))
    session.commit()
    jobs.regenerate(site.id, app)
    root = parse(published(app, site)["sitemap.xml"])
    assert locs(root) == ["https://shop.example.com/keep", "https://shop.example.com/own"]
    assert root.xpath("//sm:changefreq/text()", namespaces=NS) == ["weekly", "daily"]
    assert root.xpath("//sm:priority/text()", namespaces=NS) == ["0.3", "0.0"]


def test_a_site_without_urls_publishes_no_empty_urlset_and_withdraws_old_files(app, session):
    site = make_site(session)
    assert jobs.regenerate(site.id, app).file_count == 0
    assert published(app, site) == {}

    make_urls(session, site, 1)
    jobs.regenerate(site.id, app)
    assert "sitemap.xml" in published(app, site)
    session.execute(Url.__table__.update().values(deleted_at=T1))
    session.commit()
    generation = jobs.regenerate(site.id, app)
    assert (generation.status, generation.file_count) == ("succeeded", 0)
    assert published(app, site) == {}


def test_files_no_longer_in_the_set_stop_being_served(app, session):
    site = make_site(session, max_urls_per_file=2, stylesheet=True)
    make_urls(session, site, 5)
    jobs.regenerate(site.id, app)
    assert "sitemap-3.xml" in published(app, site)
    site.max_urls_per_file = 50_000
    session.commit()
    jobs.regenerate(site.id, app)
    assert sorted(published(app, site)) == ["sitemap.xml", "sitemap.xml.gz", "sitemap.xsl"]


def test_a_failed_run_is_recorded_and_leaves_the_previous_set_published(app, session):
    site = make_site(session, max_urls_per_file=2)
    make_urls(session, site, 3)
    good = jobs.regenerate(site.id, app)
    before = {name: path.read_bytes() for name, path in published(app, site).items()}

    # One URL per file, and an index of at most one file, cannot hold three URLs.
    failed = jobs.regenerate(site.id, app, limits=Limits(max_urls=1, max_index_entries=1))

    assert failed.status == "failed"
    assert "index would list 3 files; an index may list at most 1" in failed.error and failed.finished_at is not None
    assert {name: path.read_bytes() for name, path in published(app, site).items()} == before
    assert get_store(app).current_generation(site.storage_key) == good.id
    site_folder = get_store(app).site_folder(site.storage_key)
    assert not [p for p in site_folder.iterdir() if p.name.startswith(".staging")]
    assert session.scalars(select(GenerationFile.generation_id).distinct()).all() == [good.id]


def test_index_lastmod_moves_only_for_files_whose_content_changed(app, session):
    site = make_site(session, max_urls_per_file=2)
    locs_ = make_urls(session, site, 4)
    jobs.regenerate(site.id, app, now=T1)
    save_url(session, site, locs_[3], {"lastmod": "2026-01-31"})
    session.commit()
    jobs.regenerate(site.id, app, now=T2)
    index = parse(published(app, site)["sitemap.xml"])
    assert index.xpath("//sm:lastmod/text()", namespaces=NS) == [
        "2026-01-01T12:00:00+00:00", "2026-02-01T12:00:00+00:00"]


def test_every_run_is_recorded_and_old_generations_and_their_bodies_are_pruned(app, session):
    app.config["SITEMAP_KEEP_GENERATIONS"] = 2
    site = make_site(session, stylesheet=True)
    make_urls(session, site, 1)
    runs = []
    for day in range(1, 5):
        session.execute(Url.__table__.update().values(lastmod=f"2026-01-0{day}"))
        session.commit()
        runs.append(jobs.regenerate(site.id, app))
    assert [g.status for g in session.scalars(select(Generation).order_by(Generation.id))] == [
        "succeeded"] * 4
    assert get_store(app).kept_generations(site.storage_key) == {runs[2].id, runs[3].id}
    assert get_store(app).generation_set(site.storage_key, runs[1].id) is None
    # Each run's sitemap.xml differs; the stylesheet is one body. Bodies of pruned runs went.
    kept = session.scalars(select(StoredFile.digest).distinct()).all()
    assert sorted(session.scalars(select(FileBody.digest)).all()) == sorted(kept)
    assert len(kept) == 3
    assert session.scalar(select(func.count()).select_from(FileBodyPart).where(
        FileBodyPart.digest.not_in(kept))) == 0


def test_a_run_that_changes_nothing_publishes_nothing_and_keeps_the_history(app, session):
    site = make_site(session)
    make_urls(session, site, 2)
    first = jobs.regenerate(site.id, app)
    again = jobs.regenerate(site.id, app)
    assert (again.status, again.file_count, again.url_count) == ("unchanged", 1, 2)
    assert get_store(app).current_generation(site.storage_key) == first.id
    assert get_store(app).kept_generations(site.storage_key) == {first.id}  # no second set
    assert list(get_store(app).site_folder(site.storage_key).iterdir()) == []  # nor staging


def test_a_rollback_dates_the_files_it_changes_as_changed_now(app, session):
    site = make_site(session, max_urls_per_file=2)
    locs_ = make_urls(session, site, 4)
    old = jobs.regenerate(site.id, app, now=T1)
    save_url(session, site, locs_[3], {"lastmod": "2026-01-31"})
    session.commit()
    jobs.regenerate(site.id, app, now=T2)
    later = datetime(2026, 3, 1, tzinfo=UTC)

    back = jobs.rollback(site.id, old.id, app, now=later)

    assert back.status == "succeeded" and back.rollback_of == old.id
    index = parse(published(app, site)["sitemap.xml"])
    assert index.xpath("//sm:lastmod/text()", namespaces=NS) == [
        "2026-01-01T12:00:00+00:00", "2026-03-01T00:00:00+00:00"]
    store = get_store(app)
    assert published(app, site)["sitemap-2.xml"].read_bytes() == store.local(store.generation_set(
        site.storage_key, old.id).files["sitemap-2.xml"]).read_bytes()


def _publish_text(store, session, site, generation_id, files):
    """Publish `files` ({name: text}) as generation `generation_id` of `site`, and commit."""
    with store.staging(site.storage_key, generation_id) as folder:
        entries = []
        for name, text_ in files.items():
            data = text_.encode()
            (folder / name).write_bytes(data)
            (folder / f"{name}.gz").write_bytes(gzip.compress(data, mtime=0))
            entries.append(Entry(name, "urlset", hashlib.sha256(data).hexdigest(), len(data),
                                 len(gzip.compress(data, mtime=0)), "2026-01-01"))
        result = store.publish(session, site.storage_key, generation_id, folder, entries)
    session.commit()
    return result


def _generations(session, site, count):
    first = next_numbers(session, [site.id])[site.id]
    rows = [Generation(site_id=site.id, number=first + n, status="succeeded")
            for n in range(count)]
    session.add_all(rows)
    session.commit()
    return [row.id for row in rows]


def test_an_older_generation_never_replaces_a_newer_one(app, session):
    site = make_site(session)
    older, newer = _generations(session, site, 2)
    store = get_store(app)
    assert _publish_text(store, session, site, newer, {"sitemap.xml": "new"}) is True
    assert _publish_text(store, session, site, older, {"sitemap.xml": "old"}) is False
    published = store.current_set(site.storage_key)
    assert published.generation == newer
    assert store.local(published.files["sitemap.xml"]).read_text() == "new"
    assert store.kept_generations(site.storage_key) == {newer}  # the older list was not kept


def test_readers_on_another_node_see_one_complete_set_while_publishing(app, session, tmp_path):
    store = get_store(app)
    reader = SitemapStore(tmp_path / "node-b", lambda: new_session(app), ttl=0)
    site = make_site(session)
    ids = _generations(session, site, 40)
    problems, done = [], threading.Event()

    def read_many():
        while not done.is_set():
            published = reader.published(site.storage_key)
            if published is None:
                continue
            try:
                texts = {reader.local(f).read_text() for f in published.files.values()}
            except MissingBody:
                continue  # pruned after it was read: a newer set is live
            count = int(reader.local(published.files["index"]).read_text().split()[1])
            if len(published.files) != count + 1 or {t.split()[0] for t in texts} != {
                    str(published.generation)}:
                problems.append((published.generation, texts))

    thread = threading.Thread(target=read_many)
    thread.start()
    try:
        with new_session(app) as writer:
            for generation in ids:
                parts = generation % 4 + 1
                files = {f"part-{n}": f"{generation} {n}" for n in range(parts)}
                files["index"] = f"{generation} {parts}"
                _publish_text(store, writer, site, generation, files)
                store.prune(site.storage_key, keep=3)
    finally:
        done.set()
        thread.join()
    assert problems == []


def test_removing_images_and_alternates_leaves_no_rows_behind(app, session):
    site = make_site(session)
    url, _ = save_url(session, site, "https://shop.example.com/x", images=["https://cdn.example.net/1.jpg"],
                      alternates=["en=https://shop.example.com/x", "fr=https://shop.example.com/fr/x"])
    session.commit()
    save_url(session, site, url.loc, images=[], alternates=[])
    session.commit()
    assert session.scalars(select(UrlImage)).all() == []
    assert session.scalars(select(UrlAlternate)).all() == []


def test_an_hreflang_cluster_must_include_the_page_itself(app, session):
    site = make_site(session)
    with pytest.raises(InvalidValue, match="must include https://shop.example.com/x itself"):
        save_url(session, site, "https://shop.example.com/x",
                 alternates=["fr=https://shop.example.com/fr/x"])


def test_regenerating_an_unknown_site_is_an_error(app):
    with pytest.raises(LookupError):
        jobs.regenerate(999, app)


class WatchedStore(SitemapStore):
    """A store that checks, at the moment of publishing, what another session can see."""

    def __init__(self, root, sessions, interrupt=False):
        super().__init__(root, sessions)
        self.sessions, self.interrupt, self.seen = sessions, interrupt, []

    def publish(self, session, key, generation_id, staged, entries):
        with self.sessions() as other:
            self.seen.append((other.get(Generation, generation_id).status, len(
                other.scalars(select(GenerationFile).where(
                    GenerationFile.generation_id == generation_id)).all())))
        if self.interrupt:
            raise KeyboardInterrupt
        return super().publish(session, key, generation_id, staged, entries)


def test_a_generation_is_committed_before_its_files_go_live(app, session):
    store = app.extensions["sitemap_store"] = WatchedStore(
        app.config["SITEMAPS_DIR"], lambda: new_session(app))
    site = make_site(session, max_urls_per_file=2)
    make_urls(session, site, 3)
    assert jobs.regenerate(site.id, app).status == "succeeded"
    assert store.seen == [("publishing", 3)]


def test_an_interrupted_run_is_recorded_as_failed(app, session):
    app.extensions["sitemap_store"] = WatchedStore(
        app.config["SITEMAPS_DIR"], lambda: new_session(app), interrupt=True)
    site = make_site(session)
    make_urls(session, site, 1)
    with pytest.raises(KeyboardInterrupt):
        jobs.regenerate(site.id, app)
    generation = session.scalars(select(Generation)).one()
    session.refresh(generation)
    assert (generation.status, generation.error) == ("failed", "interrupted (KeyboardInterrupt)")


def test_a_new_site_never_sees_files_left_by_a_site_of_a_reset_database(app, session):
    old = make_site(session)
    make_urls(session, old, 1)
    jobs.regenerate(old.id, app)
    old_key = old.storage_key
    for table in ("stored_files", "generation_files", "generations", "urls", "sites"):
        session.execute(text(f"DELETE FROM {table}"))
    session.commit()
    session.expunge_all()

    new = make_site(session, name="Blog", base_url="https://blog.example.com/")
    assert new.storage_key != old_key
    assert get_store(app).published(new.storage_key) is None
    assert get_store(app).current_set(old_key) is None  # the database is the store


def test_writing_an_index_replaces_a_linked_file_instead_of_writing_through_it(tmp_path):
    older, staging = tmp_path / "g1", tmp_path / "g2"
    older.mkdir()
    staging.mkdir()
    (older / "sitemap-1.xml").write_text("the old generation's file")
    (older / "sitemap-1.xml.gz").write_bytes(b"old gzip")
    os.link(older / "sitemap-1.xml", staging / "sitemap-1.xml")
    os.link(older / "sitemap-1.xml.gz", staging / "sitemap-1.xml.gz")

    write_index(staging, "sitemap-1.xml", [("https://shop.example.com/sitemap-2.xml", "2026-01-01")])

    assert (older / "sitemap-1.xml").read_text() == "the old generation's file"
    assert (older / "sitemap-1.xml.gz").read_bytes() == b"old gzip"
    assert b"<sitemapindex" in (staging / "sitemap-1.xml").read_bytes()


def test_rollback_refuses_a_generation_whose_entry_file_is_not_its_entry(app, session):
    site = make_site(session, max_urls_per_file=1)
    make_urls(session, site, 2)
    old = jobs.regenerate(site.id, app)
    site.sitemap_url = "https://shop.example.com/sitemap-1.xml"  # now names a child of `old`
    session.commit()
    with pytest.raises(LookupError, match="published under another sitemap URL"):
        jobs.rollback(site.id, old.id, app)
    assert "<sitemapindex" in published(app, site)["sitemap.xml"].read_text()


def test_a_node_that_lost_its_cache_serves_from_the_database(app, session):
    site = make_site(session)
    make_urls(session, site, 1)
    jobs.regenerate(site.id, app)
    before = published(app, site)["sitemap.xml"].read_bytes()
    shutil.rmtree(get_store(app).bodies)
    again = jobs.regenerate(site.id, app)
    assert again.status == "unchanged"  # what is stored is what is served: nothing to publish
    assert published(app, site)["sitemap.xml"].read_bytes() == before
