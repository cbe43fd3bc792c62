"""The `flask --app webapp` commands, run as a person would run them, on SQLite and PostgreSQL."""

from __future__ import annotations

import gzip
import re
from pathlib import Path

import pytest
from lxml import etree
from sqlalchemy import select

from tests.sitemap_schema import NS, locs, parse
from tests.test_dashboard import as_role  # noqa: F401 - a fixture
from webapp import create_app
from webapp.models import Generation, Site, Url
from webapp.accounts.users import find_user, verify_password

SHOP = "https://shop.example.com/"
HEADER = "loc,lastmod,changefreq,priority\n"


def assert_fails_cleanly(result, *words):
    """One `Error: ...` line naming what was wrong, exit status 1, no traceback."""
    assert isinstance(result.exception, SystemExit) and result.exit_code == 1, result.exception
    assert "Traceback" not in result.output and result.stdout == ""
    assert len(result.stderr.splitlines()) == 1 and result.stderr.startswith("Error: ")
    for word in words:
        assert word in result.stderr


def shown(runner, ref):
    result = runner.invoke(args=["sites", "show", ref])
    assert result.exit_code == 0, result.output
    return dict(line.split("=", 1) for line in result.stdout.splitlines())


def live_urls(session):
    """{loc: (lastmod, changefreq, priority)} of the URLs not deleted, as committed by commands."""
    rows = session.execute(select(Url.loc, Url.lastmod, Url.changefreq, Url.priority)
                           .where(Url.deleted_at.is_(None)).order_by(Url.loc)).all()
    session.rollback()  # so that the next call sees what later commands commit
    return {loc: tuple(fields) for loc, *fields in rows}


def published_root(runner, slug, folder):
    """The sitemap.xml of a fresh generation, exported into `folder` and checked by the schema."""
    assert runner.invoke(args=["sitemaps", "generate", slug]).exit_code == 0
    assert runner.invoke(args=["sitemaps", "export", slug, str(folder)]).exit_code == 0
    return parse(folder / "sitemap.xml")


def import_file(runner, slug, path, content):
    path.write_bytes(content.encode() if isinstance(content, str) else content)
    return runner.invoke(args=["urls", "import", slug, str(path)])


@pytest.fixture
def shop(runner):
    result = runner.invoke(args=["sites", "create", "Shop", SHOP])
    assert result.exit_code == 0, result.output
    return result.stdout.strip()


def test_creating_sites_prints_a_distinct_slug_for_each(runner):
    first = runner.invoke(args=["sites", "create", "My Shop!", "https://shop.example.com"])
    second = runner.invoke(args=["sites", "create", "My Shop!", f"{SHOP}b2b/"])

    assert (first.exit_code, first.stdout, first.stderr) == (0, "my-shop\n", "")
    assert (second.exit_code, second.stdout) == (0, "my-shop-2\n")
    assert shown(runner, "my-shop-2")["sitemap_url"] == f"{SHOP}b2b/sitemap.xml"


@pytest.mark.parametrize("name, slug", [("Café Crème", "cafe-creme"),
                                        ("日本語", "shop-example-com"),
                                        ("2024", "shop-example-com")])
def test_slugs_fold_accents_and_fall_back_to_the_host_without_letters(runner, name, slug):
    result = runner.invoke(args=["sites", "create", name, SHOP])
    assert (result.exit_code, result.stdout) == (0, f"{slug}\n")


def test_a_sitemap_on_another_host_is_accepted_with_a_note_about_robots_txt(runner):
    result = runner.invoke(args=["sites", "create", "Shop", SHOP,
                                 "--sitemap-url", "https://cdn.example.net/shop/sitemap.xml"])

    assert (result.exit_code, result.stdout) == (0, "shop\n")
    assert result.stderr.startswith("Note: ") and f"{SHOP}robots.txt" in result.stderr
    assert "'Sitemap: https://cdn.example.net/shop/sitemap.xml'" in result.stderr
    assert shown(runner, "shop")["sitemap_url"] == "https://cdn.example.net/shop/sitemap.xml"


@pytest.mark.parametrize(("args", "field"), [
    (["ftp://shop.example.com/"], "base_url"),
    ([SHOP, "--encoding", "klingon"], "encoding"),
    ([SHOP, "--sitemap-url", f"{SHOP}maps"], "sitemap_url"),
    ([f"{SHOP}en/", "--sitemap-url", f"{SHOP}en/maps/sitemap.xml"], "sitemap_url"),
])
def test_creating_a_site_with_a_bad_setting_fails_naming_it(runner, args, field):
    assert_fails_cleanly(runner.invoke(args=["sites", "create", "Shop", *args]), f"Error: {field} ")
    assert_fails_cleanly(runner.invoke(args=["sites", "show", "shop"]), "no site")


# What Python makes of the byte 0xFF in a command line argument (which is not UTF-8).
NOT_UTF8 = "\udcff"


@pytest.mark.parametrize(("args", "field"), [
    (["sites", "create", f"Shop{NOT_UTF8}", SHOP], "name"),
    (["sites", "create", "Shop", SHOP, "--encoding", NOT_UTF8], "encoding"),
    (["sites", "set", "shop", f"robots_txt=User-agent: *{NOT_UTF8}"], "robots_txt"),
    (["sites", "set", "shop", "name=Shop\x00"], "name"),
    (["users", "create", f"ann{NOT_UTF8}@example.com", "--password", "correct horse"], "email"),
    (["users", "create", "ann@example.com", "--password", f"correct horse{NOT_UTF8}"],
     "password"),
    (["tokens", "create", "admin@example.com", "--all-sites", "--scope", "read", "--name",
      f"CMS{NOT_UTF8}"], "name"),
])
def test_text_no_column_can_hold_fails_naming_the_field(runner, shop, args, field):
    runner.invoke(args=["users", "create", "admin@example.com", "--password", "correct horse"])
    assert_fails_cleanly(runner.invoke(args=args), f"Error: {field} ")
    assert shown(runner, shop)["name"] == "Shop" and shown(runner, shop)["robots_txt"] == ""


def test_sites_list_shows_each_site_with_its_live_url_count(runner, shop):
    runner.invoke(args=["sites", "create", "Blog", "https://blog.example.com/"])
    for page in ("a", "b", "c"):
        runner.invoke(args=["urls", "add", shop, f"{SHOP}{page}"])
    runner.invoke(args=["urls", "delete", shop, f"{SHOP}c"])

    result = runner.invoke(args=["sites", "list"])

    assert result.exit_code == 0, result.exception
    assert [line.split("\t")[1:] for line in result.stdout.splitlines()] == [
        ["shop", "2 URLs", f"{SHOP}sitemap.xml"],
        ["blog", "0 URLs", "https://blog.example.com/sitemap.xml"]]


def test_sites_show_lists_every_setting_by_slug_and_by_id(runner, shop):
    by_slug = shown(runner, shop)

    assert by_slug == {"id": by_slug["id"], "name": "Shop", "slug": "shop", "base_url": SHOP,
                       "sitemap_url": f"{SHOP}sitemap.xml", "encoding": "utf-8",
                       "default_changefreq": "", "default_priority": "",
                       "max_urls_per_file": "50000", "stylesheet": "off", "robots_txt": "",
                       "indexnow_enabled": "off", "indexnow_key": by_slug["indexnow_key"],
                       "indexnow_key_location": "root", "indexnow_endpoint": "",
                       "gsc_property": "", "gsc_credentials": "", "gsc_endpoint": "",
                       "ping_urls": "", "schedule": "every 6h", "change_delay": "60",
                       "timezone": "UTC", "exclude": "", "strip_params": "",
                       "discover_mode": "review", "lastmod_source": "given",
                       "leave_out": "broken,noindex,canonical,blocked", "verify_schedule": "off",
                       "user_agent": "", "verify_ignore": "", "news_name": "",
                       "news_language": "", "sections": ""}
    assert re.fullmatch(r"[0-9a-f]{32}", by_slug["indexnow_key"])
    assert by_slug["id"].isdigit() and shown(runner, by_slug["id"]) == by_slug
    assert_fails_cleanly(runner.invoke(args=["sites", "show", "nope"]), "no site with slug or id")
    for odd in ("\u00b2", "9" * 30):  # isdigit() but not int(), and past any id
        assert_fails_cleanly(runner.invoke(args=["sites", "show", odd]), "no site with slug or id")


def test_sites_set_changes_several_settings_at_once(runner, shop):
    result = runner.invoke(args=["sites", "set", shop, "name=Shop Two", "slug=shop-two",
                                 "default_changefreq=Weekly", "default_priority=0.6",
                                 "max_urls_per_file=1000"])

    assert result.exit_code == 0, result.output
    assert result.stdout == ("updated name, slug, default_changefreq, default_priority, "
                             "max_urls_per_file\n")
    settings = shown(runner, "shop-two")
    assert (settings["name"], settings["default_changefreq"], settings["default_priority"],
            settings["max_urls_per_file"]) == ("Shop Two", "weekly", "0.6", "1000")


@pytest.mark.parametrize(("bad", "words"), [
    ("colour=blue", ["setting 'colour'", "is not a site setting"]),
    ("default_priority=2", ["default_priority '2'", "from 0.0 to 1.0"]),
    ("default_changefreq=sometimes", ["default_changefreq 'sometimes'", "must be one of"]),
    ("max_urls_per_file=50001", ["max_urls_per_file '50001'"]),
    ("slug=Not A Slug", ["slug 'Not A Slug'"]),
    (f"sitemap_url={SHOP}maps/sitemap.xml", ["sitemap_url", "can only list"]),
])
def test_one_bad_setting_means_none_is_saved(runner, shop, bad, words):
    before = shown(runner, shop)
    assert_fails_cleanly(runner.invoke(args=["sites", "set", shop, "name=Renamed", bad]), *words)
    assert shown(runner, shop) == before


def test_a_base_url_that_would_leave_stored_urls_outside_is_refused(runner, shop):
    runner.invoke(args=["urls", "add", shop, f"{SHOP}about"])
    runner.invoke(args=["urls", "add", shop, f"{SHOP}en/about"])

    result = runner.invoke(args=["sites", "set", shop, f"base_url={SHOP}en/"])

    assert_fails_cleanly(result, "base_url", "would leave 1 stored URLs outside")
    assert shown(runner, shop)["base_url"] == SHOP


def test_urls_add_folds_the_case_of_changefreq_like_the_import_does(runner, shop, tmp_path):
    result = runner.invoke(args=["urls", "add", shop, f"{SHOP}a", "--changefreq", "Daily"])
    bad = runner.invoke(args=["urls", "add", shop, f"{SHOP}b", "--changefreq", "sometimes"])
    assert result.exit_code == 0
    assert_fails_cleanly(bad, "changefreq 'sometimes': must be one of always, hourly")
    root = published_root(runner, shop, tmp_path / "out")
    assert root.xpath("//sm:changefreq/text()", namespaces=NS) == ["daily"]


def test_urls_add_and_import_remove_a_fragment_and_say_so(runner, shop, tmp_path, session):
    added = runner.invoke(args=["urls", "add", shop, f"{SHOP}page#part", "--priority", "0.3"])
    again = runner.invoke(args=["urls", "add", shop, f"{SHOP}page#other"])
    assert live_urls(session) == {f"{SHOP}page": (None, None, 0.3)}
    sitemap = ('<?xml version="1.0" encoding="UTF-8"?>\n'
               '<urlset xmlns="http://www.sitemaps.org/schemas/sitemap/0.9">\n'
               f'<url><loc>{SHOP}page#x</loc></url>\n<url><loc>{SHOP}two#y</loc></url>\n'
               '</urlset>\n')
    imported = import_file(runner, shop, tmp_path / "sitemap.xml", sitemap)
    listed = import_file(runner, shop, tmp_path / "urls.txt", f"{SHOP}three#z\n")

    assert added.exit_code == 0 and added.stdout.splitlines() == [
        f"note: loc '{SHOP}page#part': the fragment #part was removed: a fragment points into a "
        "page, and the sitemap lists the page once", f"added {SHOP}page"]
    assert again.stdout.splitlines()[-1] == f"unchanged {SHOP}page: it already has these values"
    assert imported.exit_code == 0, imported.output
    assert "2 kept with a note" in imported.stdout
    assert "the fragment #x was removed" in imported.stdout
    assert "the fragment #y was removed" in imported.stdout
    assert "line 1: " in listed.stdout and "the fragment #z was removed" in listed.stdout
    assert set(live_urls(session)) == {f"{SHOP}page", f"{SHOP}three", f"{SHOP}two"}
    root = published_root(runner, shop, tmp_path / "out")
    assert sorted(locs(root)) == [f"{SHOP}page", f"{SHOP}three", f"{SHOP}two"]


def test_urls_add_stores_every_field_and_a_second_add_updates(runner, shop, tmp_path):
    loc = f"{SHOP}de/hose"
    first = runner.invoke(args=[
        "urls", "add", shop, loc, "--lastmod", "2024-05-01T10:00:00+02:00",
        "--changefreq", "weekly", "--priority", "0.7",
        "--image", "https://cdn.example.net/hose 1.jpg", "--image", "https://cdn.example.net/2.jpg",
        "--alternate", f"de={loc}", "--alternate", "EN-gb=https://shop.example.co.uk/trousers"])
    again = runner.invoke(args=["urls", "add", shop, loc, "--priority", "0.9"])

    assert (first.exit_code, first.stdout) == (0, f"added {loc}\n")
    assert (again.exit_code, again.stdout) == (0, f"updated {loc}\n  priority: 0.7 -> 0.9\n")
    root = published_root(runner, shop, tmp_path / "out")
    assert locs(root) == [loc]
    assert [root.xpath(f"//sm:{name}/text()", namespaces=NS) for name in
            ("lastmod", "changefreq", "priority")] == [
        ["2024-05-01T08:00:00+00:00"], ["weekly"], ["0.9"]]
    assert root.xpath("//image:loc/text()", namespaces=NS) == [
        "https://cdn.example.net/hose%201.jpg", "https://cdn.example.net/2.jpg"]
    assert root.xpath("//xhtml:link/@hreflang", namespaces=NS) == ["de", "en-GB"]


def test_a_deleted_url_leaves_the_next_generation(runner, shop, tmp_path):
    for page in ("a", "b"):
        runner.invoke(args=["urls", "add", shop, f"{SHOP}{page}"])

    result = runner.invoke(args=["urls", "delete", shop, f"{SHOP}a"])

    assert (result.exit_code, result.stdout) == (0, f"deleted {SHOP}a\n")
    assert locs(published_root(runner, shop, tmp_path / "out")) == [f"{SHOP}b"]
    for loc in (f"{SHOP}a", f"{SHOP}never"):
        assert_fails_cleanly(runner.invoke(args=["urls", "delete", shop, loc]),
                             f"{loc} is not a URL of site shop")


def test_import_reports_counts_and_each_rejected_line(runner, shop, session, tmp_path):
    result = import_file(runner, shop, tmp_path / "urls.csv", HEADER + (
        f"{SHOP}a,2024-01-01,daily,0.5\n"
        "\n"
        "https://elsewhere.example.com/b,,,\n"
        f"{SHOP}c,2024-13-01,,\n"
        f"{SHOP}d,,sometimes,\n"
        f"{SHOP}e,2024-02-01\n"
        f"{SHOP}f,,,1.5\n"
        f"{SHOP}g,,,\n"))

    assert result.exit_code == 1
    assert result.stdout == "added 2, updated 0, unchanged 0, rejected 5\n"
    assert [line.split(": ", 2)[:2] for line in result.stderr.splitlines()] == [
        ["line 4", "loc 'https://elsewhere.example.com/b'"], ["line 5", "lastmod '2024-13-01'"],
        ["line 6", "changefreq 'sometimes'"], ["line 7", "has 2 fields; the header has 4"],
        ["line 8", "priority '1.5'"]]
    assert live_urls(session) == {f"{SHOP}a": ("2024-01-01", "daily", 0.5),
                                  f"{SHOP}g": (None, None, None)}



def test_import_refuses_a_gzip_file_that_unpacks_past_max_unpacked_mb(runner, app, shop, session,
                                                                        tmp_path):
    app.config["MAX_UNPACKED_MB"] = 1
    urls = "".join(f"{SHOP}p/{n}\n" for n in range(20_000))
    result = import_file(runner, shop, tmp_path / "urls.txt.gz",
                         gzip.compress(urls.encode() + b"\n" * (8 << 20)))
    assert_fails_cleanly(result, "urls.txt.gz is a gzip file that unpacks to more than 1 MB",
                         "MAX_UNPACKED_MB", "nothing was imported")
    assert live_urls(session) == {}


def test_importing_again_reports_what_changed(runner, shop, session, tmp_path):
    path = tmp_path / "urls.csv"
    import_file(runner, shop, path, HEADER + f"{SHOP}a,2024-01-01,daily,0.5\n"
                f"{SHOP}b,2024-01-01,,0.5\n{SHOP}c,,,\n")
    runner.invoke(args=["urls", "delete", shop, f"{SHOP}c"])

    same = runner.invoke(args=["urls", "import", shop, str(path)])
    changed = import_file(runner, shop, path, HEADER + f"{SHOP}a,2024-03-01,daily,0.5\n"
                          f"{SHOP}b,2024-01-01,,0.8\n{SHOP}c,,,\n")
    again = runner.invoke(args=["urls", "import", shop, str(path)])

    assert [(r.exit_code, r.stdout) for r in (same, changed, again)] == [
        (0, "added 1, updated 0, unchanged 2, rejected 0\n"),
        (0, "added 0, updated 2, unchanged 1, rejected 0\n"),
        (0, "added 0, updated 0, unchanged 3, rejected 0\n")]
    assert live_urls(session) == {f"{SHOP}a": ("2024-03-01", "daily", 0.5),
                                  f"{SHOP}b": ("2024-01-01", None, 0.8),
                                  f"{SHOP}c": (None, None, None)}


def test_a_plain_list_skips_blank_lines_and_comments(runner, shop, session, tmp_path):
    result = import_file(runner, shop, tmp_path / "urls.txt", "# exported from the CMS\n"
                         f"{SHOP}a\n\n   # old pages\n{SHOP}b\r\nshop.example.com/c\n")

    assert (result.exit_code, result.stdout) == (1, "added 2, updated 0, unchanged 0, rejected 1\n")
    assert result.stderr.startswith("line 6: loc 'shop.example.com/c': must be an absolute URL")
    assert set(live_urls(session)) == {f"{SHOP}a", f"{SHOP}b"}


@pytest.mark.parametrize("content", [
    f"\ufeff{SHOP}a\n{SHOP}b\n",
    f"\ufeffloc,priority\n{SHOP}a,0.5\n{SHOP}b,\n",
])
def test_a_byte_order_mark_is_ignored(runner, shop, session, tmp_path, content):
    result = import_file(runner, shop, tmp_path / "urls.csv", content)
    assert (result.exit_code, result.stdout) == (0, "added 2, updated 0, unchanged 0, rejected 0\n")
    assert set(live_urls(session)) == {f"{SHOP}a", f"{SHOP}b"}


def test_an_unknown_column_rejects_the_whole_file(runner, shop, session, tmp_path):
    result = import_file(runner, shop, tmp_path / "urls.csv", f"loc,title\n{SHOP}a,Home\n")
    assert_fails_cleanly(result, "line 1", "'title'", "loc, lastmod, changefreq, priority")
    assert live_urls(session) == {}


@pytest.mark.parametrize("good_lines", [
    0,
    1000,
])
def test_a_file_that_is_not_utf8_fails_in_one_line_and_stores_nothing(
        runner, shop, session, tmp_path, good_lines):
    content = "".join(f"{SHOP}p{n}\n" for n in range(good_lines)).encode()
    result = import_file(runner, shop, tmp_path / "urls.txt",
                         content + f"{SHOP}café\n".encode("latin-1"))
    assert_fails_cleanly(result, f"line {good_lines + 1} of the file is not UTF-8 text.",
                         "Save the file as UTF-8, or choose the encoding")
    assert live_urls(session) == {}


def test_non_ascii_urls_are_stored_percent_encoded_in_the_site_encoding(runner, session, tmp_path):
    created = runner.invoke(args=["sites", "create", "Shop", "http://www.example.jp/",
                                  "--encoding", "euc-jp"])

    result = import_file(runner, "shop", tmp_path / "urls.txt",
                         "http://www.example.jp/search?サイトマップ\n")

    assert created.exit_code == 0 and result.exit_code == 0, result.output
    assert set(live_urls(session)) == {
        "http://www.example.jp/search?%A5%B5%A5%A4%A5%C8%A5%DE%A5%C3%A5%D7"}


def test_generate_prints_files_urls_and_bytes_and_export_copies_them(runner, shop, tmp_path):
    runner.invoke(args=["sites", "set", shop, "stylesheet=on"])
    for page in ("a", "b"):
        runner.invoke(args=["urls", "add", shop, f"{SHOP}{page}"])

    generated = runner.invoke(args=["sitemaps", "generate", shop])
    exported = runner.invoke(args=["sitemaps", "export", shop, str(tmp_path / "out")])

    match = re.fullmatch(r"shop: 1 file, 2 URLs, (\d+) bytes \(succeeded, generation \d+\)\n",
                         generated.stdout)
    assert generated.exit_code == 0 and match, generated.output
    xml, gz = tmp_path / "out" / "sitemap.xml", tmp_path / "out" / "sitemap.xml.gz"
    xsl = tmp_path / "out" / "sitemap.xsl"
    assert (exported.exit_code, exported.stdout.splitlines()) == (0, [str(xml), str(gz), str(xsl)])
    assert xml.stat().st_size == int(match.group(1))
    assert gzip.decompress(gz.read_bytes()) == xml.read_bytes()
    assert locs(parse(xml)) == [f"{SHOP}a", f"{SHOP}b"]


def test_generate_all_covers_every_site(runner, shop):
    runner.invoke(args=["sites", "create", "Blog", "https://blog.example.com/"])
    runner.invoke(args=["urls", "add", shop, f"{SHOP}a"])
    runner.invoke(args=["urls", "add", "blog", "https://blog.example.com/post"])

    result = runner.invoke(args=["sitemaps", "generate", "--all"])

    assert result.exit_code == 0, result.output
    lines = result.stdout.splitlines()
    assert [line.split(": ")[0] for line in lines] == ["shop", "blog"]
    assert all(": 1 file, 1 URLs, " in line and "(succeeded" in line for line in lines)


@pytest.mark.parametrize("args", [[], ["shop", "--all"]])
def test_generate_needs_either_a_site_or_all(runner, shop, args):
    result = runner.invoke(args=["sitemaps", "generate", *args])
    assert result.exit_code == 2 and "Traceback" not in result.output
    assert "Error: give either SITE or --all" in result.stderr


def test_export_before_any_generation_fails_cleanly(runner, shop, tmp_path):
    result = runner.invoke(args=["sitemaps", "export", shop, str(tmp_path / "out")])
    assert_fails_cleanly(result, "nothing published yet", "sitemaps generate shop")
    assert not (tmp_path / "out").exists()


def test_users_create_stores_only_a_hash_of_the_password(runner, session):
    result = runner.invoke(args=["users", "create", "Ann@Example.com", "--role", "editor",
                                 "--password", "correct horse"])

    assert (result.exit_code, result.stdout) == (0, "created ann@example.com (editor)\n")
    user = find_user(session, "ann@example.com")
    assert user.role == "editor" and "correct horse" not in user.password_hash
    assert verify_password(user, "correct horse") and not verify_password(user, "correct horsE")


@pytest.mark.parametrize(("email", "password", "words"), [
    ("bob@example.com", "short", ("password '*****'", "at least 12")),
    ("bob.example.com", "long enough now", ("email 'bob.example.com'",)),
    ("ANN@example.com", "long enough now", ("email 'ann@example.com'", "already has an account")),
])
def test_users_create_refuses_bad_input(runner, email, password, words):
    runner.invoke(args=["users", "create", "ann@example.com", "--password", "the first passphrase"])
    result = runner.invoke(args=["users", "create", email, "--password", password])
    assert_fails_cleanly(result, *words)


def test_ensure_admin_creates_the_admin_once_and_shows_the_password_once(runner, session):
    first = runner.invoke(args=["users", "ensure-admin"])
    second = runner.invoke(args=["users", "ensure-admin"])

    assert first.exit_code == 0 and second.exit_code == 0
    password = first.stdout.splitlines()[0].rsplit(" with password: ", 1)[1]
    assert verify_password(find_user(session, "admin@localhost"), password)
    assert "admin@localhost" in second.stdout and "password:" not in second.stdout


@pytest.mark.parametrize("bind, address", [
    (None, "http://127.0.0.1:5000/sign-in"), ("127.0.0.1:5102", "http://127.0.0.1:5102/sign-in"),
    ("0.0.0.0:8000", "http://127.0.0.1:8000/sign-in"), ("dash.example.com:443",
                                                     "http://dash.example.com:443/sign-in")])
def test_ensure_admin_names_the_address_the_dashboard_listens_on(runner, session, bind, address):
    """make run-prod passes its BIND: the sign-in line named port 5000 whatever it was."""
    result = runner.invoke(args=["users", "ensure-admin", *(["--bind", bind] if bind else [])])
    assert result.exit_code == 0 and f"Sign in at {address} " in result.stdout


def test_set_password_replaces_the_old_one(runner, session):
    runner.invoke(args=["users", "create", "ann@example.com", "--password", "the first passphrase"])

    result = runner.invoke(args=["users", "set-password", "ann@example.com",
                                 "--password", "the second passphrase"])

    assert (result.exit_code, result.stdout) == (0, "password changed for ann@example.com\n")
    user = find_user(session, "ann@example.com")
    assert verify_password(user, "the second passphrase") \
        and not verify_password(user, "the first passphrase")
    assert_fails_cleanly(runner.invoke(args=["users", "set-password", "bob@example.com",
                                             "--password", "whatever1"]), "no account")


@pytest.mark.parametrize("args", [
    ["sites", "list"], ["sites", "create", "Shop", SHOP], ["users", "ensure-admin"]])
def test_a_database_without_tables_asks_for_alembic_upgrade(tmp_path, args):
    app = create_app({"DATABASE_URL": f"sqlite:///{tmp_path / 'empty.db'}", "SECRET_KEY": "k",
                      "INSTANCE_PATH": str(tmp_path / "i"), "SITEMAPS_DIR": str(tmp_path / "s")})
    try:
        result = app.test_cli_runner().invoke(args=args)
    finally:
        app.extensions["db_engine"].dispose()

    assert_fails_cleanly(result, "the database is not ready (no such table: ",
                         "; run `alembic upgrade head` first")


def test_export_replaces_an_earlier_export_and_leaves_other_files_alone(runner, shop, tmp_path):
    out = tmp_path / "public"
    out.mkdir()
    (out / "index.html").write_text("the site's own page")
    runner.invoke(args=["sites", "set", shop, "max_urls_per_file=1", "stylesheet=on"])
    for n in range(3):
        runner.invoke(args=["urls", "add", shop, f"{SHOP}p{n}"])
    runner.invoke(args=["sitemaps", "generate", shop])
    runner.invoke(args=["sitemaps", "export", shop, str(out)])
    assert (out / "sitemap-3.xml").exists()

    runner.invoke(args=["sites", "set", shop, "max_urls_per_file=50000"])
    runner.invoke(args=["sitemaps", "generate", shop])
    result = runner.invoke(args=["sitemaps", "export", shop, str(out)])

    assert result.exit_code == 0
    assert sorted(p.name for p in out.iterdir() if not p.name.startswith(".")) == [
        "index.html", "sitemap.xml", "sitemap.xml.gz", "sitemap.xsl"]


def test_published_and_exported_files_are_readable_by_a_web_server(runner, shop, tmp_path, app):
    runner.invoke(args=["sites", "set", shop, "max_urls_per_file=1"])
    for n in range(2):
        runner.invoke(args=["urls", "add", shop, f"{SHOP}p{n}"])
    assert runner.invoke(args=["sitemaps", "generate", shop]).exit_code == 0
    assert runner.invoke(args=["sitemaps", "export", shop, str(tmp_path / "out")]).exit_code == 0

    exported = [p for p in (tmp_path / "out").iterdir() if not p.name.startswith(".")]
    assert "sitemap.xml" in {p.name for p in exported}  # the index, among the others
    assert [p.name for p in exported if p.stat().st_mode & 0o044 != 0o044] == []
    # In the node's cache every body has the mode the umask gives; the index is no exception.
    modes = {p.stat().st_mode & 0o777 for p in (Path(app.config["SITEMAPS_DIR"]) / "bodies")
             .iterdir()}
    assert len(modes) == 1


def test_export_to_a_folder_that_cannot_be_made_fails_in_one_line(runner, shop):
    runner.invoke(args=["urls", "add", shop, f"{SHOP}a"])
    runner.invoke(args=["sitemaps", "generate", shop])
    assert_fails_cleanly(runner.invoke(args=["sitemaps", "export", shop, "/proc/no/such"]),
                         "/proc/no")


def test_urls_list_shows_live_urls_and_deleted_ones_on_request(runner, shop):
    runner.invoke(args=["urls", "add", shop, f"{SHOP}a", "--lastmod", "2024-01-02", "--priority", "0.5"])
    runner.invoke(args=["urls", "add", shop, f"{SHOP}b"])
    runner.invoke(args=["urls", "delete", shop, f"{SHOP}b"])
    live = runner.invoke(args=["urls", "list", shop])
    gone = runner.invoke(args=["urls", "list", shop, "--deleted"])
    assert live.stdout == f"{SHOP}a\t2024-01-02\t\t0.5\n"
    assert gone.stdout == f"{SHOP}b\t\t\t\n"


def test_diff_after_the_first_generation_lists_every_url_as_added(runner, shop):
    runner.invoke(args=["urls", "add", shop, f"{SHOP}a"])
    runner.invoke(args=["sitemaps", "generate", shop])
    result = runner.invoke(args=["sitemaps", "diff", shop])
    assert result.exit_code == 0
    assert result.stdout.splitlines()[0] == f"+ {SHOP}a"
    assert result.stdout.splitlines()[-1].endswith(": 1 added, 0 removed, 0 changed")


def generate(runner, site: str) -> int:
    result = runner.invoke(args=["sitemaps", "generate", site])
    assert result.exit_code == 0, result.output
    return int(re.search(r"generation (\d+)\)", result.stdout).group(1))


@pytest.fixture
def two_generations(runner, shop) -> tuple[int, int]:
    """a, b, c; then b deleted, c given a lastmod and d added."""
    for page in "abc":
        runner.invoke(args=["urls", "add", shop, f"{SHOP}{page}"])
    first = generate(runner, shop)
    runner.invoke(args=["urls", "delete", shop, f"{SHOP}b"])
    runner.invoke(args=["urls", "add", shop, f"{SHOP}c", "--lastmod", "2026-01-02"])
    runner.invoke(args=["urls", "add", shop, f"{SHOP}d"])
    return first, generate(runner, shop)


def test_diff_between_two_generations_lists_added_removed_and_changed(runner, shop,
                                                                      two_generations):
    first, second = map(str, two_generations)
    forward = runner.invoke(args=["sitemaps", "diff", shop, first, second])
    assert (forward.exit_code, forward.stdout.splitlines()) == (0, [
        f"+ {SHOP}d", f"- {SHOP}b", f"~ {SHOP}c  (lastmod - -> 2026-01-02)",
        f"generation {first} -> {second}: 1 added, 1 removed, 1 changed"])
    backward = runner.invoke(args=["sitemaps", "diff", shop, second, first])
    assert backward.stdout.splitlines()[:3] == [
        f"+ {SHOP}b", f"- {SHOP}d", f"~ {SHOP}c  (lastmod 2026-01-02 -> -)"]
    assert runner.invoke(args=["sitemaps", "diff", shop]).stdout == forward.stdout  # the latest

    one = runner.invoke(args=["sitemaps", "diff", shop, first])
    assert one.exit_code == 2 and "give two generation numbers, or none" in one.stderr
    gone = runner.invoke(args=["sitemaps", "diff", shop, first, "999"])
    assert gone.exit_code == 1 and f"site {shop} has no generation 999" in gone.stderr


def test_history_lists_generations_and_rollback_serves_an_older_one(app, runner, shop,
                                                                    two_generations):
    first, second = two_generations
    history = runner.invoke(args=["sitemaps", "history", shop]).stdout.splitlines()
    assert history[0].split("\t") == ["number", "status", "trigger", "started", "seconds",
                                      "urls", "files", "bytes", "files kept"]
    assert [row.split("\t")[:3] + row.split("\t")[8:] for row in history[1:]] == [
        [str(second), "succeeded", "cli", "published"], [str(first), "succeeded", "cli", "kept"]]

    rolled = runner.invoke(args=["sitemaps", "rollback", shop, str(first)])
    assert rolled.exit_code == 0, rolled.output
    third = int(re.fullmatch(rf"{shop}: generation (\d+) publishes the files of generation "
                             rf"{first} \(3 URLs\)\n", rolled.stdout).group(1))
    served = app.test_client().get(f"/sitemaps/{shop}/sitemap.xml")
    assert served.status_code == 200
    assert locs(etree.fromstring(served.data)) == [f"{SHOP}a", f"{SHOP}b", f"{SHOP}c"]
    newest = runner.invoke(args=["sitemaps", "history", shop]).stdout.splitlines()[1]
    assert newest.split("\t")[:3] == [str(third), "succeeded", "rollback"]
    assert newest.endswith("\tpublished\trollback of " + str(first))

    again = runner.invoke(args=["sitemaps", "rollback", shop, str(first)])
    assert again.stdout.endswith("holds the files published now; nothing to do\n")
    unknown = runner.invoke(args=["sitemaps", "rollback", shop, "999"])
    assert unknown.exit_code == 1 and "Traceback" not in unknown.output
    assert f"site {shop} has no generation 999" in unknown.stderr


def test_each_site_numbers_its_generations_and_the_commands_use_that_number(app, runner, shop,
                                                                           session, as_role):
    """Two sites generating in turn: the ids interleave, the numbers do not. `history`,
    `generate`, `rollback SITE N`, the API and the dashboard all say the site's number."""
    assert runner.invoke(args=["sites", "create", "Blog", "https://blog.example.com/"]).exit_code == 0
    for slug in (shop, "blog"):
        runner.invoke(args=["urls", "add", slug, f"https://{slug}.example.com/a"])
    made = []
    for slug in (shop, "blog", shop, "blog", shop):
        runner.invoke(args=["urls", "add", slug, f"https://{slug}.example.com/{len(made)}"])
        made.append((slug, generate(runner, slug)))
    assert made == [(shop, 1), ("blog", 1), (shop, 2), ("blog", 2), (shop, 3)]
    history = runner.invoke(args=["sitemaps", "history", shop]).stdout.splitlines()[1:]
    assert [row.split("\t")[0] for row in history] == ["3", "2", "1"]
    rolled = runner.invoke(args=["sitemaps", "rollback", shop, "2"])
    assert rolled.stdout == f"{shop}: generation 4 publishes the files of generation 2 (3 URLs)\n"
    assert runner.invoke(args=["sitemaps", "history", shop]).stdout.splitlines()[1].endswith(
        "\tpublished\trollback of 2")
    site = session.scalar(select(Site).where(Site.slug == shop))
    newest = session.scalar(select(Generation).where(Generation.site_id == site.id)
                            .order_by(Generation.id.desc()).limit(1))
    assert (newest.number, newest.rollback_of != 2) == (4, True)  # rollback_of keeps the id
    text = as_role("viewer").get(f"/sites/{shop}/generations").get_data(as_text=True)
    assert all(f"Generation {n}<" in text for n in (1, 2, 3, 4)) and "(rollback to #2)" in text


def test_two_sites_exported_into_one_folder_keep_each_others_files(runner, shop, tmp_path):
    runner.invoke(args=["sites", "create", "News", SHOP, "--sitemap-url", f"{SHOP}sitemap-news.xml"])
    for slug in (shop, "news"):
        runner.invoke(args=["urls", "add", slug, f"{SHOP}{slug}"])
        runner.invoke(args=["sitemaps", "generate", slug])
    out = tmp_path / "public"
    for slug in (shop, "news", shop):
        assert runner.invoke(args=["sitemaps", "export", slug, str(out)]).exit_code == 0
    assert {"sitemap.xml", "sitemap-news.xml"} <= {p.name for p in out.iterdir()}


def test_urls_import_fetches_a_sitemap_from_the_sites_own_hosts_only(runner, session, engine):
    base = engine.url_for("/")
    assert runner.invoke(args=["sites", "create", "Local", base]).exit_code == 0
    engine.expect_request("/sitemap.xml").respond_with_data(
        f'<urlset xmlns="{NS["sm"]}"><url><loc>{base}a</loc></url></urlset>')
    result = runner.invoke(args=["urls", "import", "local", f"{base}sitemap.xml"])
    assert result.exit_code == 0 and result.stdout.startswith("added 1"), result.output
    assert list(live_urls(session)) == [f"{base}a"]
    # The same server under another name is another host: refused before anything is sent.
    other = base.replace("127.0.0.1", "localhost")
    requests_before = len(engine.log)
    assert_fails_cleanly(runner.invoke(args=["urls", "import", "local", f"{other}sitemap.xml"]),
                         "sitemap_url", "the site's host")
    assert len(engine.log) == requests_before


def test_urls_import_rewrites_a_sitemaps_origin_with_an_option(runner, shop, session, tmp_path):
    path = tmp_path / "sitemap.xml"
    path.write_text(f'<urlset xmlns="{NS["sm"]}">\n<url>\n<loc>http://shop.example.com/x</loc>'
                    "\n</url>\n</urlset>\n")
    refused = runner.invoke(args=["urls", "import", shop, str(path)])
    assert refused.exit_code == 1 and "Traceback" not in refused.output
    assert "1 URLs (the first on line 2) are on http://shop.example.com but the site is on " \
           "https://shop.example.com: the scheme differs." in refused.stdout
    moved = runner.invoke(args=["urls", "import", shop, str(path), "--rewrite-origin"])
    assert moved.exit_code == 0 and moved.stdout.startswith("added 1,"), moved.output
    assert "https://shop.example.com/x" in live_urls(session)
