"""Site sections: the `sections` setting refused line by line with a named rule (settings,
form, API, command line), each section published in files of its own beside the default
files and listed in the index, incremental runs per section, and sites with sections kept out
of the small-sites batch."""

from __future__ import annotations

import re
import shutil
from datetime import UTC, datetime, timedelta
from fnmatch import fnmatchcase

import pytest
from hypothesis import Phase, given, settings
from hypothesis import strategies as st
from sqlalchemy import select

from tests.builders import make_site
from tests.sitemap_schema import locs, parse
from tests.test_exclusions import sign_in
from tests.test_generate import all_published_locs, published
from tests.test_incremental import bodies, index_lastmods, stored_bodies
from webapp import jobs
from webapp.accounts.tokens import create_token
from webapp.accounts.users import create_user
from webapp.errors import InvalidValue
from webapp.models import Generation, Site, Url
from webapp.sitemaps import get_store
from webapp.sitemaps import sections as sections_module
from webapp.sitemaps.sections import MAX_SECTIONS, definitions, section_of
from webapp.sites import publish_guide
from webapp.sites import site_settings, update_site
from webapp.urls import delete_url, rule_matches, save_url

SHOP = "https://shop.example.com/"
SECTIONS = "blog /blog/\\nitems /shop/*/item-*\\nold re:^/(old|archive)/"
PASSWORD = "correct horse"
T = [datetime(2026, 2, day, 12, tzinfo=UTC) for day in range(1, 29)]
LATER = datetime(2030, 1, 1, tzinfo=UTC)  # past every site's change delay


pytestmark = pytest.mark.session_outside_app_context


@pytest.fixture
def shop(session):
    site = make_site(session, max_urls_per_file=3)
    update_site(session, site, {"sections": SECTIONS})
    session.commit()
    return site


def add(session, site, *paths: str) -> None:
    for path in paths:
        save_url(session, site, SHOP + path)
    session.commit()


def files_of(app, site) -> dict[str, list[str]]:
    """The locs of each urlset file the index lists, every file checked against the schema;
    the index itself must be the entry sitemap."""
    served = published(app, site)
    index = parse(served["sitemap.xml"])
    assert index.tag.endswith("sitemapindex")
    names = [loc.rsplit("/", 1)[-1] for loc in locs(index)]
    urlsets = {name for name in served if name.endswith(".xml") and name != "sitemap.xml"}
    assert set(names) == urlsets  # the index lists every file published, and no other
    return {name: locs(parse(served[name])) for name in names}


def live_locs(session, site) -> list[str]:
    session.expire_all()
    return session.scalars(select(Url.loc).where(Url.site_id == site.id,
                                                 Url.deleted_at.is_(None))).all()


# --- the setting ---------------------------------------------------------------------------

def test_sections_are_a_setting_shown_as_sites_set_takes_them(session, shop):
    shown = site_settings(shop)["sections"]
    assert shown == "blog /blog/\\nitems /shop/*/item-*\\nold re:^/(old|archive)/"
    update_site(session, shop, {"sections": shown})
    assert shop.sections == "blog /blog/\nitems /shop/*/item-*\nold re:^/(old|archive)/"
    update_site(session, shop, {"sections": " docs\t  /docs/ \\n\\n"})  # spaces, tabs, blanks
    assert shop.sections == "docs /docs/"
    update_site(session, shop, {"sections": ""})
    assert shop.sections is None


@pytest.mark.parametrize("value, message", [
    ("blog", "line 1: write a name, a space and a pattern, e.g. blog /blog/"),
    ("Blog /blog/", ("line 1: the name 'Blog' must be 1 to 40 lower-case letters, digits or "
                     "'-', starting with a letter")),
    ("blog- /blog/", "line 1: the name 'blog-' must be"),
    ("2024 /2024/", "line 1: the name '2024' must be"),
    ("a" * 41 + " /a/", "must be 1 to 40 lower-case letters"),
    ("blog /blog/\\nnews /news/", "line 2: the name 'news' is used by the app's own files"),
    ("sitemap /s/", "line 1: the name 'sitemap' is the file name of the site's sitemap"),
    ("blog /blog/\\nblog /b/", "line 2: the name 'blog' is already used by another section"),
    ("blog blog/", ("line 1: the pattern must be a path prefix starting with / (e.g. /blog/), "
                    "a glob (e.g. /shop/*/item-*) or re: and a regular expression")),
    ("a /x/\\nb /x/", "line 2: the pattern /x/ is already another section's"),
    ("a /x/\\nb re:(open", "line 2: is not a valid regular expression"),
    ("a re:", "line 1: re: needs a regular expression after it"),
    ("a /" + "x" * 300, "line 1: a rule may be at most 300 characters"),
    ("\\n".join(f"s{n} /s{n}/" for n in range(MAX_SECTIONS + 1)),
     f"a site may have at most {MAX_SECTIONS} sections"),
    ("s0 re:/0.{1000}.{1000}.{1000}", "is too costly to run"),
    ("\\n".join(f"s{n} re:/{n}.{{40}}" for n in range(30)),
     "together the rules are too costly to run"),
])
def test_a_bad_section_is_refused_naming_its_line_and_the_rule(session, shop, value, message):
    with pytest.raises(InvalidValue) as refused:
        update_site(session, shop, {"sections": value})
    assert refused.value.field == "sections"
    assert message in str(refused.value)


def test_a_sitemap_url_named_as_a_section_is_refused(session, shop):
    with pytest.raises(InvalidValue, match="the name 'blog' is the file name of the site's"):
        update_site(session, shop, {"sitemap_url": SHOP + "blog.xml"})


def test_the_first_matching_section_takes_a_url():
    sections = definitions("a /shop/\nb /shop/*/item-*\nc re:item")
    assert section_of(sections, SHOP + "shop/x/item-1") == "a"  # the first wins
    assert section_of(sections, SHOP + "other/item-1") == "c"
    assert section_of(sections, SHOP + "other/1?q=/shop/") == ""  # the path, not the query
    assert section_of(definitions("j /ブログ/"), SHOP + "%E3%83%96%E3%83%AD%E3%82%B0/1") == "j"


def test_prefix_and_glob_sections_still_take_the_first_match():
    """A glob is run only on paths that start with its lead (the text before its first
    wildcard), a prefix compared as text: the first section matching still takes a URL, in
    either form of its path."""
    sections = definitions("items /shop/*/item-*\nshop /shop/\nany /*/item-*\n"
                           "j /ブログ/*/x\nk /ブログ/")
    assert section_of(sections, SHOP + "shop/a/item-1") == "items"  # the glob, listed first
    assert section_of(sections, SHOP + "shop/a/other") == "shop"  # its lead, not the glob
    assert section_of(sections, SHOP + "other/item-1") == "any"  # a glob without a lead
    assert section_of(sections, SHOP + "sho") == ""
    blog = "%E3%83%96%E3%83%AD%E3%82%B0"  # ブログ, matched decoded
    assert section_of(sections, f"{SHOP}{blog}/1/x") == "j"
    assert section_of(sections, f"{SHOP}{blog}/1/y") == "k"
    assert section_of(definitions("a /x/\nb /x/*"), SHOP + "x/1") == "a"  # the prefix first
    assert section_of(definitions("b /x/*\na /x/"), SHOP + "x/1") == "b"


def test_a_glob_is_run_by_re2_only_on_paths_that_start_with_its_lead(monkeypatch):
    runs = []

    def counted(rule, path, decoded):
        runs.append(path)
        return rule_matches(rule, path, decoded)

    monkeypatch.setattr(sections_module, "rule_matches", counted)
    sections = definitions("items /shop/*/item-*")
    names = [section_of(sections, f"{SHOP}blog/{n}") for n in range(100)]
    assert names == [""] * 100 and runs == []
    assert section_of(sections, SHOP + "shop/a/item-1") == "items" and runs == ["/shop/a/item-1"]


def test_the_settings_form_saves_sections_and_refuses_a_bad_line(app, session, shop):
    add(session, shop, "blog/1", "blog/2", "shop/a/item-1", "about")
    client = sign_in(app, session)
    page = client.get("/sites/shop/settings")
    assert 'id="f-sections"' in page.text
    assert "<code>blog</code>: 2 URLs" in page.text
    assert "<code>items</code>: 1 URL<" in page.text
    assert "Other URLs: 1" in page.text

    refused = client.post("/sites/shop/settings", data={
        "csrf_token": client.csrf, "sections": "blog /blog/\r\nBad /x/"})
    assert refused.status_code == 422
    assert "line 2: the name &#39;Bad&#39; must be" in refused.text
    session.expire_all()
    assert session.get(Site, shop.id).sections.startswith("blog /blog/\nitems")

    saved = client.post("/sites/shop/settings", data={
        "csrf_token": client.csrf, "sections": "docs /docs/\r\nblog /blog/"})
    assert saved.status_code == 302
    session.expire_all()
    assert session.get(Site, shop.id).sections == "docs /docs/\nblog /blog/"


def test_the_api_takes_sections_as_a_list_and_refuses_a_bad_one(app, session, shop):
    user = create_user(session, "cms@example.com", PASSWORD, "editor")
    _, secret = create_token(session, user, "cms", "write", None)
    session.commit()
    client = app.test_client()
    headers = {"Authorization": f"Bearer {secret}"}
    assert client.get("/api/v1/sites/shop", headers=headers).get_json()["sections"] == [
        "blog /blog/", "items /shop/*/item-*", "old re:^/(old|archive)/"]
    patched = client.patch("/api/v1/sites/shop", headers=headers,
                           json={"sections": ["docs /docs/", "blog /blog/"]})
    assert patched.status_code == 200, patched.get_json()
    assert patched.get_json()["sections"] == ["docs /docs/", "blog /blog/"]
    refused = client.patch("/api/v1/sites/shop", headers=headers,
                           json={"sections": ["docs /docs/", "docs /d/"]})
    assert refused.status_code == 422
    error = refused.get_json()["error"]["errors"][0]
    assert error["field"] == "sections"
    assert "line 2: the name 'docs' is already used by another section" in error["rule"]
    cleared = client.patch("/api/v1/sites/shop", headers=headers, json={"sections": None})
    assert cleared.get_json()["sections"] == []


def test_the_command_line_sets_sections_and_refuses_a_bad_one(runner, session, shop):
    done = runner.invoke(args=["sites", "set", "shop", "sections=a /a/\\nb /shop/*"])
    refused = runner.invoke(args=["sites", "set", "shop", "sections=a /a/\\nb shop"])
    assert done.exit_code == 0, done.output
    assert refused.exit_code != 0
    assert "line 2: the pattern must be a path prefix starting with /" in refused.output
    session.expire_all()
    assert session.get(Site, shop.id).sections == "a /a/\nb /shop/*"


# --- the files -----------------------------------------------------------------------------

def test_each_url_lands_in_exactly_one_file_of_its_first_matching_section(app, session, shop):
    add(session, shop, *[f"blog/{n}" for n in range(7)], "shop/x/item-1", "shop/y/item-2",
        "shop/x/other", "old/1", "archive/2", "about", "blog")
    jobs.regenerate(shop.id, app, now=T[0])

    files = files_of(app, shop)
    assert list(files) == ["sitemap-blog-1.xml", "sitemap-blog-2.xml", "sitemap-blog-3.xml",
                           "sitemap-items-1.xml", "sitemap-old-1.xml", "sitemap-1.xml"]
    assert [len(f) for f in files.values()] == [3, 3, 1, 2, 2, 3]  # split at 3 on its own
    assert files["sitemap-old-1.xml"] == [SHOP + "old/1", SHOP + "archive/2"]
    assert files["sitemap-1.xml"] == [SHOP + "shop/x/other", SHOP + "about", SHOP + "blog"]
    every = [loc for found in files.values() for loc in found]
    assert sorted(every) == sorted(live_locs(session, shop))  # each once, none missing


def test_a_site_with_sections_publishes_an_index_even_for_one_file(app, session, shop):
    add(session, shop, "blog/1")
    jobs.regenerate(shop.id, app, now=T[0])
    assert files_of(app, shop) == {"sitemap-blog-1.xml": [SHOP + "blog/1"]}


def test_a_change_in_one_section_rewrites_only_the_file_that_holds_it(app, session, shop):
    add(session, shop, *[f"blog/{n}" for n in range(6)], *[f"p/{n}" for n in range(6)],
        *[f"shop/a/item-{n}" for n in range(4)])
    jobs.regenerate(shop.id, app, now=T[0])
    before, dated, count = bodies(app, shop), index_lastmods(app, shop), stored_bodies(session)
    save_url(session, shop, SHOP + "blog/4", {"lastmod": "2026-02-02"})
    session.commit()
    shutil.rmtree(get_store(app).bodies)  # the worker's cache is empty: reuse needs no bytes

    jobs.regenerate(shop.id, app, now=T[1])

    after = bodies(app, shop)
    rewritten = {name for name in after if after[name] != before.get(name)}
    assert rewritten == {"sitemap-blog-2.xml", "sitemap-blog-2.xml.gz", "sitemap.xml",
                         "sitemap.xml.gz"}
    assert stored_bodies(session) == count + 2  # the blog file and the index, nothing else
    assert index_lastmods(app, shop) == {**dated, "sitemap-blog-2.xml": "2026-02-02T12:00:00+00:00"}
    files = files_of(app, shop)
    assert sorted(loc for found in files.values() for loc in found) == \
        sorted(live_locs(session, shop))


def test_new_and_deleted_urls_touch_only_their_sections_files(app, session, shop):
    add(session, shop, *[f"blog/{n}" for n in range(5)], *[f"p/{n}" for n in range(5)])
    jobs.regenerate(shop.id, app, now=T[0])
    before = bodies(app, shop)
    add(session, shop, "blog/new", "old/1")  # the blog's last file grows; a new section starts
    delete_url(session, shop, SHOP + "p/1")
    session.commit()

    jobs.regenerate(shop.id, app, now=T[1])

    after = bodies(app, shop)
    rewritten = {name.removesuffix(".gz") for name in after if after[name] != before.get(name)}
    assert rewritten == {"sitemap-blog-2.xml", "sitemap-old-1.xml", "sitemap-1.xml",
                         "sitemap.xml"}
    files = files_of(app, shop)
    assert files["sitemap-blog-2.xml"] == [SHOP + "blog/3", SHOP + "blog/4", SHOP + "blog/new"]
    assert files["sitemap-1.xml"] == [SHOP + "p/0", SHOP + "p/2"]
    assert sorted(loc for found in files.values() for loc in found) == \
        sorted(live_locs(session, shop))


def test_a_rewritten_file_that_no_longer_fits_rewrites_its_section_only(app, session, shop):
    add(session, shop, *[f"blog/{n}" for n in range(7)], *[f"p/{n}" for n in range(4)])
    jobs.regenerate(shop.id, app, now=T[0])
    before = bodies(app, shop)
    for n in range(3):  # the blog's first file is emptied: its later files move up
        delete_url(session, shop, SHOP + f"blog/{n}")
    session.commit()

    jobs.regenerate(shop.id, app, now=T[1])

    after = bodies(app, shop)
    assert after["sitemap-1.xml"] == before["sitemap-1.xml"]
    assert after["sitemap-2.xml"] == before["sitemap-2.xml"]
    files = files_of(app, shop)
    assert [name for name in files if "blog" in name] == ["sitemap-blog-1.xml",
                                                          "sitemap-blog-2.xml"]
    assert files["sitemap-blog-1.xml"] == [SHOP + f"blog/{n}" for n in (3, 4, 5)]


def test_changing_the_sections_moves_every_url_to_its_new_section(app, session, shop):
    add(session, shop, "blog/1", "docs/1", "about")
    delete_url(session, shop, SHOP + "about")
    session.commit()
    jobs.regenerate(shop.id, app, now=T[0])
    update_site(session, shop, {"sections": "docs /docs/"})
    session.commit()
    add(session, shop, "about")  # comes back: assigned with the new definition

    jobs.regenerate(shop.id, app, now=T[1])

    assert files_of(app, shop) == {"sitemap-docs-1.xml": [SHOP + "docs/1"],
                                   "sitemap-1.xml": [SHOP + "blog/1", SHOP + "about"]}
    session.expire_all()
    assert session.get(Site, shop.id).sections_assigned == "docs /docs/"
    update_site(session, shop, {"sections": ""})
    session.commit()
    jobs.regenerate(shop.id, app, now=T[2])
    assert set(published(app, shop)) == {"sitemap.xml", "sitemap.xml.gz"}  # one file again


def test_the_generation_page_lists_the_files_per_section(app, session, shop):
    add(session, shop, "blog/1", "about")
    generation = jobs.regenerate(shop.id, app, now=T[0])
    client = sign_in(app, session, "viewer")
    page = client.get(f"/sites/shop/generations/{generation.id}").text
    assert page.index("sitemap-blog-1.xml") < page.index("sitemap-1.xml")
    assert "Section blog" in page and "Other URLs" in page


def test_a_small_site_with_sections_is_generated_on_its_own_not_in_a_batch(app, session, shop):
    plain = make_site(session, "Plain", "https://plain.example.com/")
    add(session, shop, "blog/1", "about")
    save_url(session, plain, "https://plain.example.com/a")
    session.commit()

    outcome = jobs.batch._regenerate_small_sites(app, [shop.id, plain.id], LATER)

    assert shop.id not in outcome and outcome[plain.id] == "succeeded"
    assert session.scalar(select(Generation.id).where(Generation.site_id == shop.id)) is None
    assert jobs.regenerate_many_if_due([shop.id, plain.id], app, now=LATER) == {
        shop.id: "succeeded", plain.id: None}
    assert files_of(app, shop) == {"sitemap-blog-1.xml": [SHOP + "blog/1"],
                                   "sitemap-1.xml": [SHOP + "about"]}


# --- any definition, any URLs -----------------------------------------------------------------

# Mostly good names and patterns, so that most definitions are taken: one in four is bad.
_GOOD_NAMES = st.sampled_from(["blog", "shop", "a-1", "x", "z9"])
NAMES = st.one_of(_GOOD_NAMES, _GOOD_NAMES, _GOOD_NAMES,
                  st.sampled_from(["Bad", "news", "b-", "sitemap", "日本"]))
_GOOD_PATTERNS = st.sampled_from(["/blog/", "/shop/*/item-*", "re:^/(old|arch)/", "/a", "*/x",
                                  "/x?", "/[ab]*", "re:item-[0-9]$", "/"])
PATTERNS = st.one_of(_GOOD_PATTERNS, _GOOD_PATTERNS, _GOOD_PATTERNS,
                     st.sampled_from(["re:(", "nope", "re:", "/" + "x" * 300]))
PATHS = st.builds("{}{}".format, st.sampled_from(
    ["blog/", "shop/x/item-", "shop/y/", "old/", "arch/", "a", "x/", "b/x", "c/item-"]),
    st.integers(0, 12))


def expected_section(lines: list[tuple[str, str]], path: str) -> str:
    """The first section whose pattern matches, by Python's own matching (not the app's)."""
    for name, pattern in lines:
        if pattern.startswith("re:"):
            if re.search(pattern[3:], path):
                return name
        elif any(char in pattern for char in "*?["):
            if fnmatchcase(path, pattern):
                return name
        elif path.startswith(pattern):
            return name
    return ""


def test_any_sections_are_refused_by_rule_or_publish_each_live_url_once_in_its_section(
        app, session):
    """Random definitions and URLs over several runs of one site (so incremental runs are
    met too): a definition is refused naming its line and rule, or every live URL is
    published exactly once, in the file of the first section matching it, in schema-valid
    files the index lists."""
    site = make_site(session, max_urls_per_file=3)
    runs = iter(range(10_000))
    current: list[tuple[str, str]] = []

    @settings(database=None, deadline=None, phases=[Phase.generate], max_examples=40)
    @given(st.booleans(), st.lists(st.tuples(NAMES, PATTERNS), max_size=4),
           st.lists(PATHS, max_size=12), st.lists(st.integers(0, 40), max_size=4, unique=True))
    def check(redefine, lines, paths, deletions):
        nonlocal current
        if redefine:
            try:
                update_site(session, site,
                            {"sections": "\\n".join(f"{n} {p}" for n, p in lines)})
                session.commit()
                current = [(n, p) for n, p in lines]
            except InvalidValue as exc:
                session.rollback()
                assert exc.field == "sections"
                assert re.fullmatch(r"sections '.*': (line \d+: .+|a site may have .+)", str(exc),
                                    re.DOTALL), str(exc)
        for path in paths:
            save_url(session, site, SHOP + path)
        live = live_locs(session, site)
        for n in deletions:
            if n < len(live):
                delete_url(session, site, live[n])
        session.commit()

        run = jobs.regenerate(site.id, app, now=datetime(2026, 3, 1, tzinfo=UTC)
                              + timedelta(minutes=next(runs)))

        assert run.status in ("succeeded", "unchanged"), run.error
        live = live_locs(session, site)
        if not live:
            return
        if not current:
            assert sorted(all_published_locs(app, site)) == sorted(live)
            return
        files = files_of(app, site)
        stems = {name: name.rsplit("-", 1)[0] for name in files}
        placed = [(loc, stems[name]) for name, found in files.items() for loc in found]
        assert sorted(loc for loc, _ in placed) == sorted(live)
        for loc, stem in placed:
            section = expected_section(current, "/" + loc.removeprefix(SHOP))
            assert stem == (f"sitemap-{section}" if section else "sitemap"), (loc, stem)

    check()


def test_a_section_whose_files_another_site_publishes_is_refused_naming_its_line_and_file(
        session, shop):
    """A section adds sitemap-NAME-1.xml, sitemap-NAME-2.xml, ...: where another site of the
    folder publishes one of them, the sections setting is refused, by its line, with the
    file; a name no site publishes is free."""
    make_site(session, "Posts", SHOP, sitemap_url=SHOP + "sitemap-news-2.xml")
    with pytest.raises(InvalidValue) as refused:
        update_site(session, shop, {"sections": f"{SECTIONS}\\nnews-2 /press/"})
    assert (refused.value.field, refused.value.value) == ("sections", "news-2 /press/")
    assert refused.value.rule == (
        "line 4: the section's files would have the same names as files of site 'posts' "
        "(https://shop.example.com/sitemap-news-2.xml) in the same folder, such as "
        "sitemap-news-2-1.xml; choose another section name")
    update_site(session, shop, {"sections": f"{SECTIONS}\\npress /press/"})


@settings(database=None, deadline=None, phases=[Phase.generate], max_examples=300)
@given(st.lists(st.one_of(_GOOD_PATTERNS, st.sampled_from(["/shop/[xy]/*", "/c/item-?"])),
                max_size=5, unique=True), st.lists(PATHS, max_size=10))
def test_each_url_takes_the_first_section_whose_pattern_matches(patterns, paths):
    """section_of against Python's own matching, for any order of prefixes, globs and re:
    rules (the generation's property test below meets fewer definitions, more slowly)."""
    lines = [(f"s{n}", pattern) for n, pattern in enumerate(patterns)]
    sections = definitions("\n".join(f"{name} {pattern}" for name, pattern in lines))
    for path in paths:
        assert section_of(sections, SHOP + path) == expected_section(lines, "/" + path), path


def test_the_nginx_location_passes_each_sections_files(session, shop):
    pattern = re.search(r'location ~ "([^"]+)"',
                        publish_guide.nginx(shop, "http://10.0.0.5:8000")).group(1)
    for path in ("/sitemap.xml", "/sitemap-2.xml.gz", "/sitemap-blog-1.xml",
                 "/sitemap-items-12.xml.gz", "/sitemap-old-3.xml"):
        assert re.fullmatch(pattern, path), path
    for path in ("/sitemap-x-1.xml", "/sitemap-blogs-1.xml", "/other.xml"):
        assert not re.fullmatch(pattern, path), path


def test_a_section_may_not_publish_files_named_as_another_sites(session, shop):
    """Sites may share a folder, not file names: shop's blog section writes
    sitemap-blog-1.xml, which a site whose sitemap is sitemap-blog.xml would write too."""
    other = make_site(session, "Posts", SHOP, sitemap_url=SHOP + "posts-x.xml")
    with pytest.raises(InvalidValue, match="would publish files with the same names as site "
                                           "'shop'"):
        update_site(session, other, {"sitemap_url": SHOP + "sitemap-blog.xml"})
    with pytest.raises(InvalidValue, match="section's files would have the same names as "
                                           "files of site 'posts'") as refused:
        update_site(session, shop, {"sitemap_url": SHOP + "posts.xml", "sections": "x /x/"})
    assert refused.value.field == "sections"  # the section brings posts-x-1.xml
