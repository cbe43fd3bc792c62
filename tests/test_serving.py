"""Serving published sitemaps to crawlers: paths, hosts, HTTP caching, and consistency."""

from __future__ import annotations

import gc
import gzip
import os
import sys
import threading
import weakref
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import UTC, datetime, timedelta
from hashlib import sha256
from urllib.parse import unquote_to_bytes

import pytest
from lxml import etree
from sqlalchemy import event
from werkzeug.http import parse_date

from tests.builders import make_site, make_urls
from tests.probes import wait_for
from tests.sitemap_schema import locs
from webapp import create_app, jobs
from webapp.db import make_engine, new_session, session_scope
from webapp.models import utcnow
from webapp.sitemaps import get_store
from webapp.sitemaps.publish import SitemapStore
from webapp.sites import delete_site, find_site, update_site
from webapp.urls import delete_url, save_url
from webapp.views.public import VIEW_VERSION, FileMemory

SHOP = "https://shop.example.com"


@pytest.fixture
def app(database_url, tmp_path):
    """Site changes are seen at once (no routing cache), so tests need not wait."""
    app = create_app({"TESTING": True, "DATABASE_URL": database_url, "SECRET_KEY": "test",
                      "INSTANCE_PATH": str(tmp_path / "instance"),
                      "SITEMAPS_DIR": str(tmp_path / "sitemaps"), "SITE_CACHE_SECONDS": 0})
    yield app
    app.extensions["db_engine"].dispose()


class ClosingClient:
    """A test client whose responses are read and closed, as a WSGI server would close the
    files that send_file opens (otherwise they leak and warn)."""

    def __init__(self, client):
        self._client = client

    def get(self, *args, **kwargs):
        return self._finish(self._client.get(*args, **kwargs))

    def head(self, *args, **kwargs):
        return self._finish(self._client.head(*args, **kwargs))

    @staticmethod
    def _finish(response):
        response.get_data()
        response.close()
        return response


@pytest.fixture
def client(app):
    return ClosingClient(app.test_client())


@pytest.fixture
def shop(app, session):
    site = make_site(session, max_urls_per_file=2)
    make_urls(session, site, 3)
    jobs.regenerate(site.id, app)
    return site


def test_files_are_served_under_the_site_slug_with_protocol_headers(client, shop):
    index = client.get("/sitemaps/shop/sitemap.xml")
    assert index.status_code == 200
    assert index.headers["Content-Type"] == "application/xml; charset=utf-8"
    assert index.headers["X-Robots-Tag"] == "noindex"
    assert "Content-Encoding" not in index.headers
    assert locs(etree.fromstring(index.data)) == [f"{SHOP}/sitemap-1.xml", f"{SHOP}/sitemap-2.xml"]

    part = client.get("/sitemaps/shop/sitemap-2.xml")
    assert locs(etree.fromstring(part.data)) == [f"{SHOP}/page/2"]


def test_xml_is_sent_gzip_encoded_to_clients_that_accept_it(client, shop):
    plain = client.get("/sitemaps/shop/sitemap-1.xml")
    encoded = client.get("/sitemaps/shop/sitemap-1.xml", headers={"Accept-Encoding": "gzip, br"})
    assert encoded.headers["Content-Encoding"] == "gzip"
    assert encoded.headers["Content-Type"] == "application/xml; charset=utf-8"
    assert gzip.decompress(encoded.data) == plain.data
    assert plain.headers["Vary"] == encoded.headers["Vary"] == "Accept-Encoding"
    assert plain.headers["ETag"] != encoded.headers["ETag"]
    refused = client.get("/sitemaps/shop/sitemap-1.xml", headers={"Accept-Encoding": "gzip;q=0"})
    assert "Content-Encoding" not in refused.headers and refused.data == plain.data


def test_gz_files_are_gzip_bytes_without_content_encoding(client, shop):
    response = client.get("/sitemaps/shop/sitemap-1.xml.gz", headers={"Accept-Encoding": "gzip"})
    assert response.headers["Content-Type"] == "application/gzip"
    assert "Content-Encoding" not in response.headers
    assert gzip.decompress(response.data) == client.get("/sitemaps/shop/sitemap-1.xml").data


@pytest.mark.parametrize("accept", ["", "gzip"])
def test_conditional_requests_get_304_with_the_same_validators(client, shop, accept):
    headers = {"Accept-Encoding": accept}
    first = client.get("/sitemaps/shop/sitemap.xml", headers=headers)
    etag, modified = first.headers["ETag"], first.headers["Last-Modified"]

    by_etag = client.get("/sitemaps/shop/sitemap.xml", headers={**headers, "If-None-Match": etag})
    by_date = client.get("/sitemaps/shop/sitemap.xml",
                         headers={**headers, "If-Modified-Since": modified})
    changed = client.get("/sitemaps/shop/sitemap.xml",
                         headers={**headers, "If-None-Match": '"something-else"'})

    assert (by_etag.status_code, by_date.status_code, changed.status_code) == (304, 304, 200)
    assert by_etag.data == by_date.data == b""
    # RFC 7232: a 304 repeats ETag, Cache-Control and Vary (Werkzeug drops Last-Modified).
    assert by_etag.headers["ETag"] == etag
    assert by_etag.headers["Cache-Control"] == first.headers["Cache-Control"] == "no-cache"
    assert by_etag.headers.get("Vary") == first.headers.get("Vary")


def test_if_none_match_decides_over_if_modified_since(client, shop):
    first = client.get("/sitemaps/shop/sitemap.xml")
    stale_etag_fresh_date = client.get("/sitemaps/shop/sitemap.xml", headers={
        "If-None-Match": '"an-older-one"', "If-Modified-Since": first.headers["Last-Modified"]})
    assert stale_etag_fresh_date.status_code == 200  # RFC 9110 13.2.2: the date is ignored


class FileOpens:
    """The paths this process opens while `watching` (an audit hook sees open(), io.open and
    os.open, however they are reached)."""

    def __init__(self):
        self.paths: list[str] | None = None
        sys.addaudithook(self._hook)  # hooks last as long as the process: idle unless watching

    def _hook(self, event: str, args: tuple) -> None:
        if event == "open" and self.paths is not None and not isinstance(args[0], int):
            self.paths.append(os.fsdecode(args[0]))

    @contextmanager
    def watching(self) -> Iterator[list[str]]:
        self.paths = []
        try:
            yield self.paths
        finally:
            self.paths = None


@pytest.fixture(scope="session")
def file_opens() -> FileOpens:
    return FileOpens()


@pytest.mark.parametrize("method", ["GET", "HEAD"])
def test_a_304_is_answered_without_opening_the_file(app, shop, file_opens, method):
    variants = [("sitemap.xml", ""), ("sitemap-1.xml", ""), ("sitemap-1.xml", "gzip"),
                ("sitemap-1.xml.gz", "gzip")]
    validators = []
    for name, accept in variants:
        first = app.test_client().get(f"/sitemaps/shop/{name}", headers={"Accept-Encoding": accept})
        validators += [(name, {"Accept-Encoding": accept, "If-None-Match": first.headers["ETag"]}),
                       (name, {"Accept-Encoding": accept,
                               "If-Modified-Since": first.headers["Last-Modified"]})]
        first.close()
    # A process that has served nothing yet, so no body is in its memory: it reads the
    # generation's manifest on its first request, which here is for a file it does not have.
    fresh = create_app(app.config)
    client = fresh.test_client()
    assert client.get("/sitemaps/shop/no-such-file.xml").status_code == 404
    try:
        with file_opens.watching() as opened:
            statuses = [client.open(f"/sitemaps/shop/{name}", method=method,
                                    headers=headers).status_code for name, headers in validators]
    finally:
        fresh.extensions["db_engine"].dispose()
    assert statuses == [304] * len(validators)
    sitemaps = app.config["SITEMAPS_DIR"]
    assert [path for path in opened if os.path.abspath(path).startswith(sitemaps)] == []


def test_head_answers_headers_without_a_body(client, shop):
    response = client.head("/sitemaps/shop/sitemap.xml")
    assert response.status_code == 200 and response.data == b""
    assert int(response.headers["Content-Length"]) == len(client.get("/sitemaps/shop/sitemap.xml").data)


def test_unknown_sites_files_and_unpublished_sites_are_404_with_a_reason(client, shop, session):
    make_site(session, name="Blog", base_url="https://blog.example.com/")
    for path, reason in (("/sitemaps/nope/sitemap.xml", b"no site 'nope'"),
                         ("/sitemaps/shop/sitemap-9.xml", b"no file 'sitemap-9.xml'"),
                         ("/sitemaps/shop/manifest.json", b"no file 'manifest.json'"),
                         ("/sitemaps/blog/sitemap.xml", b"no published sitemaps yet"),
                         ("https://blog.example.com/sitemap.xml", b"no published sitemaps yet")):
        response = client.get(path)
        assert response.status_code == 404, path
        assert response.headers["Content-Type"] == "text/plain; charset=utf-8"
        assert reason in response.data
    # Other paths on a site's host go on to the app (the dashboard may share the host).
    assert client.get(f"{SHOP}/sitemap-9.xml").status_code == 404


def test_the_sitemap_host_answers_at_public_paths(client, shop):
    index = client.get("/sitemap.xml", base_url=SHOP)
    assert index.status_code == 200
    assert index.data == client.get("/sitemaps/shop/sitemap.xml").data
    assert client.get("/sitemap-2.xml.gz", base_url=SHOP).headers["Content-Type"] == "application/gzip"
    assert client.get("/sitemap.xml", base_url="https://shop.example.com:443").status_code == 200
    assert client.get("/sitemap.xml", base_url="http://shop.example.com").status_code == 404
    assert client.get("/sitemap.xml", base_url="https://other.example.com").status_code == 404


@pytest.mark.parametrize("port", ["\u00b2", "\u00b9\u00b3", "9" * 30])
@pytest.mark.parametrize("path", ["/sitemap.xml", "/robots.txt", "/sitemaps/shop/sitemap.xml",
                                  "/sign-in"])
def test_a_host_header_with_an_odd_port_is_no_error(client, shop, port, path):
    """A Host header is the client's to write: a port of superscript digits (Latin-1 bytes
    that str.isdigit() calls digits and int() refuses) or of thirty digits is just a host no
    site has, before the app or on any path, never an error."""
    answer = client.get(path, headers={"Host": f"shop.example.com:{port}"})
    assert answer.status_code in (200, 404)
    if path == "/sitemaps/shop/sitemap.xml":
        assert answer.status_code == 200  # /sitemaps/<slug>/ is served on any host


def test_robots_txt_always_carries_the_sitemap_line(client, shop, session):
    response = client.get("/robots.txt", base_url=SHOP)
    assert response.headers["Content-Type"] == "text/plain; charset=utf-8"
    assert response.text == f"User-agent: *\nDisallow:\n\nSitemap: {SHOP}/sitemap.xml\n"

    shop.robots_txt = "User-agent: *\nDisallow: /cart\n"
    session.commit()
    assert client.get("/robots.txt", base_url=SHOP).text.endswith(
        f"Disallow: /cart\n\nSitemap: {SHOP}/sitemap.xml\n")
    assert client.get("/robots.txt", base_url="https://other.example.com").status_code == 404


def test_a_change_committed_in_this_process_is_served_at_once_despite_the_cache(
        database_url, tmp_path):
    app = create_app({"TESTING": True, "DATABASE_URL": database_url, "SECRET_KEY": "test",
                      "INSTANCE_PATH": str(tmp_path / "instance"),
                      "SITEMAPS_DIR": str(tmp_path / "sitemaps"), "SITE_CACHE_SECONDS": 3600})
    client, store = ClosingClient(app.test_client()), get_store(app)
    reads_of_sites = []
    event.listen(app.extensions["db_engine"], "before_cursor_execute",
                 lambda *args: reads_of_sites.append(args[2])
                 if "FROM sites" in args[2] and args[2].lstrip().startswith("SELECT") else None)
    try:
        with new_session(app) as session:
            site = make_site(session)
            make_urls(session, site, 1)
        jobs.regenerate(site.id, app)
        assert client.get("/robots.txt", base_url=SHOP).text.startswith("User-agent: *\n")

        with session_scope(app) as session:  # a URL edit changes no site address
            save_url(session, find_site(session, "shop"), f"{SHOP}/new")
        reads_of_sites.clear()
        assert client.get("/robots.txt", base_url=SHOP).status_code == 200
        assert reads_of_sites == [], "the routing table was rebuilt for a URL edit"

        with session_scope(app) as session:  # as `flask sites set` commits it
            update_site(session, find_site(session, "shop"), {"robots_txt": "Disallow: /cart"})
        assert "Disallow: /cart" in client.get("/robots.txt", base_url=SHOP).text

        with session_scope(app) as session:
            delete_site(session, find_site(session, "shop"), utcnow(), store)
        assert client.get("/robots.txt", base_url=SHOP).status_code == 404
        assert "no site 'shop'" in client.get("/sitemaps/shop/sitemap.xml").text
    finally:
        app.extensions["db_engine"].dispose()


def test_an_app_let_go_is_freed_with_its_routing_table(database_url, tmp_path):
    """The routing table's listeners sit in a registry of SQLAlchemy's that lives as long as
    the process: they must not keep the app, its engine and its caches alive, or a process
    that makes apps one after another (this test suite) keeps every one of them."""
    app = create_app({"TESTING": True, "DATABASE_URL": database_url, "SECRET_KEY": "test",
                      "INSTANCE_PATH": str(tmp_path / "instance"),
                      "SITEMAPS_DIR": str(tmp_path / "sitemaps")})
    with new_session(app) as session:
        make_site(session)  # the table's listeners have seen a commit
    assert ClosingClient(app.test_client()).get("/robots.txt", base_url=SHOP).status_code == 200
    app.extensions["db_engine"].dispose()
    freed = weakref.ref(app)
    del app, session
    gc.collect()
    assert freed() is None


def test_the_indexnow_key_file_holds_only_the_key(client, shop):
    response = client.get(f"/{shop.indexnow_key}.txt", base_url=SHOP)
    assert response.status_code == 200
    assert response.headers["Content-Type"] == "text/plain; charset=utf-8"
    assert response.data == shop.indexnow_key.encode()
    assert client.get("/0000000000000000.txt", base_url=SHOP).status_code == 404


def test_a_sitemap_in_a_folder_is_answered_in_that_folder_only(app, client, session):
    site = make_site(session, name="Docs", base_url="https://docs.example.com/guide/",
                     sitemap_url="https://docs.example.com/guide/maps.xml")
    make_urls(session, site, 1)
    jobs.regenerate(site.id, app)
    assert client.get("/guide/maps.xml", base_url="https://docs.example.com").status_code == 200
    assert client.get("/maps.xml", base_url="https://docs.example.com").status_code == 404


def test_forwarded_scheme_is_believed_only_when_configured(database_url, tmp_path, session, shop):
    for proxies, expected in ((0, 404), (1, 200)):
        app = create_app({"DATABASE_URL": database_url, "SECRET_KEY": "t", "PROXY_COUNT": proxies,
                          "SITEMAPS_DIR": str(tmp_path / "sitemaps"), "SITE_CACHE_SECONDS": 0,
                          "INSTANCE_PATH": str(tmp_path / "instance")})
        response = ClosingClient(app.test_client()).get(
            "/sitemap.xml", base_url="http://shop.example.com", headers={"X-Forwarded-Proto": "https"})
        assert response.status_code == expected
        app.extensions["db_engine"].dispose()


def test_the_stylesheet_is_same_origin_and_can_be_turned_off(app, client, shop, session):
    shop.stylesheet = True
    session.commit()
    jobs.regenerate(shop.id, app)
    assert b'<?xml-stylesheet type="text/xsl" href="sitemap.xsl"?>' in client.get(
        "/sitemap.xml", base_url=SHOP).data
    xsl = client.get("/sitemap.xsl", base_url=SHOP)
    assert xsl.headers["Content-Type"] == "text/xsl; charset=utf-8"
    etree.XSLT(etree.fromstring(xsl.data))  # a stylesheet lxml can compile
    html = etree.XSLT(etree.fromstring(xsl.data))(etree.fromstring(
        client.get("/sitemap-1.xml", base_url=SHOP).data))
    assert f"{SHOP}/page/0" in str(html)

    shop.stylesheet = False
    session.commit()
    jobs.regenerate(shop.id, app)
    assert b"xml-stylesheet" not in client.get("/sitemap.xml", base_url=SHOP).data
    assert client.get("/sitemap.xsl", base_url=SHOP).status_code == 404


def test_the_stylesheet_has_validators_that_last_while_it_is_unchanged(app, client, session):
    site = make_site(session, max_urls_per_file=2, stylesheet=True)
    make_urls(session, site, 3)
    two_days_ago = datetime.now(UTC) - timedelta(days=2)
    assert jobs.regenerate(site.id, app, now=two_days_ago).status == "succeeded"
    first = client.get("/sitemaps/shop/sitemap.xsl")
    assert parse_date(first.headers["Last-Modified"]) == two_days_ago.replace(microsecond=0)
    assert first.headers["ETag"]
    assert client.get("/sitemaps/shop/sitemap.xsl", headers={
        "If-Modified-Since": first.headers["Last-Modified"]}).status_code == 304

    save_url(session, site, f"{SHOP}/page/9", {})
    session.commit()
    assert jobs.regenerate(site.id, app, now=two_days_ago + timedelta(days=1)).status == "succeeded"
    assert client.get("/sitemaps/shop/sitemap.xsl").headers["Last-Modified"] == \
        first.headers["Last-Modified"]  # the same bytes: a browser keeps its copy
    assert parse_date(client.get("/sitemaps/shop/sitemap-2.xml").headers["Last-Modified"]) == \
        two_days_ago.replace(microsecond=0) + timedelta(days=1)  # the file that changed


def test_last_modified_is_never_later_than_the_response(app, client, session):
    # Runs within one second date each generation a second after the last (generate's
    # later_than); a clock set back does the same. RFC 9110 8.8.2.1: then say "now".
    site = make_site(session)
    make_urls(session, site, 2)
    tomorrow = datetime.now(UTC) + timedelta(days=1)
    assert jobs.regenerate(site.id, app, now=tomorrow).status == "succeeded"
    for accept in ("", "gzip"):
        response = client.get("/sitemaps/shop/sitemap.xml", headers={"Accept-Encoding": accept})
        assert parse_date(response.headers["Last-Modified"]) <= datetime.now(UTC)
        assert parse_date(response.headers["Last-Modified"]) >= tomorrow - timedelta(days=1,
                                                                                    minutes=1)
        assert client.get("/sitemaps/shop/sitemap.xml", headers={
            "Accept-Encoding": accept, "If-Modified-Since": response.headers["Last-Modified"],
        }).status_code == 200  # the file is dated later than that


def test_readers_during_publishing_always_get_a_complete_set(app, session, shop):
    """Crawlers read the index and then every file it lists while generations publish: each
    file must be the one of the index's generation, or of one published since."""
    app.config["SITEMAP_KEEP_GENERATIONS"] = 3
    client = ClosingClient(app.test_client())
    store = get_store(app)
    problems, passes, done = [], [], threading.Event()

    def digests() -> tuple[int, dict[str, str]]:
        published = store.published(shop.storage_key)
        return published.generation, {n: f.sha256 for n, f in published.files.items()}

    def crawl():
        while not done.is_set():
            index = client.get("/sitemap.xml", base_url=SHOP)
            names = [loc.rsplit("/", 1)[-1] for loc in locs(etree.fromstring(index.data))]
            bodies = [client.get(f"/{name}", base_url=SHOP) for name in names]
            if [b.status_code for b in bodies] != [200] * len(names):
                problems.append(("missing", names, [b.status_code for b in bodies]))
                continue
            pages = sorted(loc for body in bodies for loc in locs(etree.fromstring(body.data)))
            if pages != sorted(f"{SHOP}/page/{n}" for n in range(3)):
                problems.append(("incomplete", pages))
            passes.append((sha256(index.data).hexdigest(),
                           [(name, sha256(body.data).hexdigest()) for name, body in
                            zip(names, bodies)]))

    def readers_passed(count: int) -> bool:  # or found what the test is for
        return len(passes) >= count or bool(problems)

    generations = dict([digests()])
    readers = [threading.Thread(target=crawl) for _ in range(2)]
    for reader in readers:
        reader.start()
    try:
        for n in range(12):  # each generation moves one lastmod, so every set differs
            save_url(session, shop, f"{SHOP}/page/{n % 3}", {"lastmod": f"2026-01-{n + 1:02d}"})
            session.commit()
            seen = len(passes)
            assert jobs.regenerate(shop.id, app).status == "succeeded"
            generations.update([digests()])
            # Readers read during every publication: a pass or more between two of them,
            # however a busy machine shares its time between the threads.
            wait_for(lambda after=seen + 2: readers_passed(after), what="two readers' passes")
    finally:
        done.set()
        for reader in readers:
            reader.join()
    assert problems == []
    assert len(generations) == 13 and len(passes) > 12
    for index, files in passes:
        first = min(g for g, names in generations.items() if names["sitemap.xml"] == index)
        for name, digest in files:
            assert any(names.get(name) == digest for g, names in generations.items()
                       if g >= first), (name, "is older than the index it was listed in")


def test_small_bodies_are_kept_in_memory_within_a_budget(tmp_path):
    memory = FileMemory(budget=800)  # files up to 800 // 8 = 100 bytes, eight of them at most
    paths = [tmp_path / f"f{n}" for n in range(9)]
    for n, path in enumerate(paths):
        path.write_bytes(bytes([n]) * 100)
    (tmp_path / "big").write_bytes(b"x" * 101)

    assert memory.get(str(tmp_path / "big"), 101) is None
    assert memory.get(str(paths[0]), 100) == bytes([0]) * 100
    paths[0].unlink()  # published files never change, so memory may answer for them
    assert memory.get(str(paths[0]), 100) == bytes([0]) * 100
    for path in paths[1:]:
        memory.get(str(path), 100)
    assert memory.used == 800
    assert memory.get(str(paths[0]), 100) is None  # the oldest was dropped, and is gone now


def test_another_process_publishing_is_seen_at_once_without_a_ttl(app, session, shop,
                                                                   tmp_path):
    """Processes serve side by side: with PUBLISHED_TTL_SECONDS=0 one never answers from a set
    another has replaced."""
    reader = SitemapStore(tmp_path / "other", lambda: new_session(app), ttl=0)
    for n in range(2):
        save_url(session, shop, f"{SHOP}/page/0", {"lastmod": f"2026-01-0{n + 1}"})
        session.commit()
        generation = jobs.regenerate(shop.id, app)
        assert reader.published(shop.storage_key).generation == generation.id


def test_people_get_an_html_table_of_any_published_sitemap(app, client, shop):
    index = client.get("/sitemaps/shop/view/sitemap.xml")
    assert index.status_code == 200
    store = get_store(app)
    rendered = store.view_path(store.published(shop.storage_key).files["sitemap.xml"],
                               f"{VIEW_VERSION}\n{SHOP}/\n/sitemaps/shop/view/\nen")
    assert rendered.read_bytes() == index.data  # rendered once
    assert index.headers["Content-Type"] == "text/html; charset=utf-8"
    page = etree.fromstring(index.data, etree.HTMLParser())
    assert page.xpath("//h1/text()") == ["Sitemap index"]
    assert page.xpath("//tbody//a/@href") == ["/sitemaps/shop/view/sitemap-1.xml",
                                              "/sitemaps/shop/view/sitemap-2.xml"]

    part = etree.fromstring(client.get("/sitemaps/shop/view/sitemap-1.xml").data, etree.HTMLParser())
    assert page.xpath("//h1/text()") and part.xpath("//tbody//a/@href") == [
        f"{SHOP}/page/0", f"{SHOP}/page/1"]
    assert client.get("/sitemaps/shop/view/sitemap.xsl").status_code == 404
    assert client.get("/sitemaps/shop/view/nope.xml").status_code == 404


@pytest.mark.parametrize("encoding, folder", [("utf-8", "%E3%82%B5%E3%82%A4%E3%83%88"),
                                              ("euc-jp", "%A5%B5%A5%A4%A5%C8")])
def test_a_sitemap_folder_with_non_ascii_characters_is_found(app, client, session, encoding,
                                                             folder):
    site = make_site(session, name="Japan", base_url="https://jp.example.com/サイト/",
                     sitemap_url="https://jp.example.com/サイト/sitemap.xml", encoding=encoding)
    assert site.sitemap_url == f"https://jp.example.com/{folder}/sitemap.xml"
    make_urls(session, site, 1)
    jobs.regenerate(site.id, app)
    # As servers such as gunicorn build it: the path's raw bytes, decoded as latin-1 (PEP 3333).
    # (Werkzeug's test client would decode the escapes as UTF-8 first.)
    raw_path = unquote_to_bytes(f"/{folder}/sitemap.xml").decode("latin-1")
    response = client.get("/", base_url="https://jp.example.com",
                          environ_overrides={"PATH_INFO": raw_path})
    assert response.status_code == 200 and b"<urlset" in response.data


def test_robots_txt_lists_the_sitemap_of_every_site_on_the_host(app, client, shop, session):
    german = make_site(session, name="Shop DE", base_url=f"{SHOP}/de/",
                       sitemap_url=f"{SHOP}/de/sitemap.xml")
    text = client.get("/robots.txt", base_url=SHOP).text
    assert f"Sitemap: {SHOP}/sitemap.xml\n" in text and "/de/" not in text  # nothing published
    make_urls(session, german, 1)
    jobs.regenerate(german.id, app)
    text = client.get("/robots.txt", base_url=SHOP).text
    assert f"Sitemap: {SHOP}/sitemap.xml\n" in text and f"Sitemap: {SHOP}/de/sitemap.xml\n" in text


def test_robots_txt_names_the_sitemap_only_while_it_is_published(app, client, session):
    """A `Sitemap:` line for a file that answers 404 would send crawlers nowhere."""
    site = make_site(session)
    assert client.get("/robots.txt", base_url=SHOP).text == "User-agent: *\nDisallow:\n"
    assert client.get("/sitemap.xml", base_url=SHOP).status_code == 404
    save_url(session, site, f"{SHOP}/a")
    session.commit()
    jobs.regenerate(site.id, app)
    assert client.get("/robots.txt", base_url=SHOP).text.endswith(f"\nSitemap: {SHOP}/sitemap.xml\n")
    assert client.get("/sitemap.xml", base_url=SHOP).status_code == 200
    delete_url(session, site, f"{SHOP}/a")  # emptied: the published set has no entry file
    session.commit()
    jobs.regenerate(site.id, app)
    assert client.get("/sitemap.xml", base_url=SHOP).status_code == 404
    assert "Sitemap:" not in client.get("/robots.txt", base_url=SHOP).text


def test_weak_etags_and_accept_encoding_variants_are_understood(client, shop):
    etag = client.get("/sitemaps/shop/sitemap.xml", headers={"Accept-Encoding": "gzip"}).headers["ETag"]
    assert client.get("/sitemaps/shop/sitemap.xml", headers={
        "Accept-Encoding": "gzip", "If-None-Match": f"W/{etag}, \"other\""}).status_code == 304
    for header, encoded in (("*;q=0, gzip", True), ("gzip;Q=1", True), ("gzip;q=0.5;x=y", True),
                            ("identity", False), ("*;q=0", False), ("x-gzip", True)):
        response = client.get("/sitemaps/shop/sitemap-1.xml", headers={"Accept-Encoding": header})
        assert ("Content-Encoding" in response.headers) is encoded, header


def test_a_site_may_keep_its_sitemaps_in_a_sitemaps_folder(app, client, session):
    site = make_site(session, name="News", base_url="https://news.example.com/",
                     sitemap_url="https://maps.example.com/sitemaps/news.xml")
    make_urls(session, site, 1)
    jobs.regenerate(site.id, app)
    response = client.get("/sitemaps/news.xml", base_url="https://maps.example.com")
    assert response.status_code == 200 and b"<urlset" in response.data


def test_two_sites_may_not_publish_files_of_the_same_name_in_one_folder(session, shop):
    from webapp.errors import InvalidValue
    from webapp.sites import create_site

    for clash in (f"{SHOP}/sitemap.xml", f"{SHOP}/sitemap-1.xml"):
        with pytest.raises(InvalidValue, match="same names as site 'shop'"):
            create_site(session, "Other", f"{SHOP}/", clash)
    create_site(session, "Other", f"{SHOP}/", f"{SHOP}/sitemap-other.xml")


def test_serving_goes_on_from_the_last_known_sites_while_the_database_is_down(app, client, shop):
    routes = app.extensions["site_routes"]
    assert client.get("/sitemaps/shop/sitemap.xml").status_code == 200
    app.extensions["db_engine"].dispose()
    routes._sessions = type(routes._sessions)(make_engine("postgresql+psycopg://x@127.0.0.1:1/x"))
    assert client.get("/sitemaps/shop/sitemap.xml").status_code == 200
