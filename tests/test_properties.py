"""Bad input at scale: arbitrary text through URL validation, CSV import and the bulk API.

Every value is either refused with a reason that names its field and rule, or stored in the one
form the generator writes; the published files then validate against the sitemaps.org schema
and say exactly what the database holds. Each test builds a fresh site per example inside its
body, so the database fixtures (SQLite, and PostgreSQL when configured) are made once per test.
"""

from __future__ import annotations

import csv
import io
import itertools
import operator
import re
from urllib.parse import urlsplit

from hypothesis import Phase, given, settings
from hypothesis import strategies as st
from sqlalchemy import select
from sqlalchemy.orm import selectinload

from tests.builders import make_site
from tests.sitemap_schema import NS, locs, parse
from webapp import jobs
from webapp.errors import InvalidValue, each_error
from webapp.models import Site, Url
from webapp.protocol import (
    CHANGEFREQS,
    FIELD_RULES,
    MAX_LOC_LENGTH,
    MIN_LOC_LENGTH,
    Scope,
    format_priority,
    normalize_base_url,
    normalize_hreflang,
    normalize_url,
)
from webapp.sitemaps import get_store
from webapp.accounts.tokens import create_token
from webapp.urls import COLUMNS, ITEM_FIELDS, ImportFormatError, check_url, delete_urls, import_urls
from webapp.accounts.users import create_user

# (base_url as typed, encoding): IDN hosts, ports, path prefixes and non-UTF-8 encodings.
SCOPES = [("https://shop.example.com/", "utf-8"), ("https://bücher.example/katalog/", "utf-8"),
          ("http://shop.example.com:8080/blog/", "shift_jis"),
          ("https://shop.example.com/", "iso-8859-1"), ("https://例え.テスト/", "euc-jp")]
PREFIXES = [base for base, _ in SCOPES] + [
    "HTTPS://Shop.Example.COM:443/", "https://shop.example.com", "http://shop.example.com/",
    "https://shop.example.com:8443/", "https://BÜCHER.example/katalog/",
    "https://xn--bcher-kva.example/katalog/", "https://shop.example.com/blog/../",
    "http://shop.example.com:8080/blog/%2e%2E/", "https://user:pw@shop.example.com/",
    "  https://shop.example.com/", "https://shop.example.com./", "https://[::1]/",
    "https://shop.example.com:99999/", "ftp://shop.example.com/", "//shop.example.com/",
    "https://xn--/", "https://ex ample.com/", "https://shop．example。com/", "https:///"]
CONTROLS = ["\t", "\n", "\r\n", "\r", "\x00", "\x07", "\x7f", "\x85", "\ufffe", "\uffff"]
PIECES = ["&", "<", ">", '"', "'", ",", ";", "%", "%2", "%zz", "%2e", "%2E%2e", "%E3%81%82",
          "%e3%81", "%00", "..", ".", "/", "//", "?", "#", "@", ":", "[", "]", "\\", " ",
          "\u2028", "\ufeff", "é", "ß", "あ", "ソ", "表", "\U0001f600", "\u202e", "&amp;", "]]>",
          "K", "-", "_", "~", "=", "a1"]
SITEMAP_TAGS = ("sm:lastmod", "sm:changefreq", "sm:priority")


def texts(alphabet: st.SearchStrategy[str], pieces: list[str]) -> st.SearchStrategy[str]:
    return st.lists(st.one_of(st.text(alphabet, max_size=12), st.sampled_from(pieces)),
                    max_size=6).map("".join)


nasty = texts(st.characters(), PIECES + CONTROLS)  # any text but surrogates
printable = texts(st.characters(exclude_categories=["Cc", "Cs"]), PIECES)
long_text = st.builds(operator.mul, st.sampled_from(["a", "é", "%", "&", "/x", "%E3", "あ"]),
                      st.integers(300, 2100))


@st.composite
def loc_text(draw, base: str, valid_often: bool = False) -> str:
    """Text that is often a URL of the site at `base`, often nearly one, sometimes anything."""
    if draw(st.booleans()) or (valid_often and draw(st.booleans())):
        return base + draw(printable)
    if draw(st.booleans()):
        return draw(st.sampled_from(PREFIXES)) + draw(st.one_of(printable, nasty, long_text))
    return draw(nasty)


def mostly(usual: st.SearchStrategy, unusual: st.SearchStrategy) -> st.SearchStrategy:
    """Half of each (one_of would lean hard on its first strategy); shrinks towards `usual`."""
    return st.booleans().flatmap(lambda odd: unusual if odd else usual)


LASTMODS = ["2024", "2024-13", "2024-02-30", "2024-01-01 10:00", "0001-01-01T00:00+01:00",
            "9999-12-31T23:59-14:00", "2004-12-23T18:00:15.5+0900", "٢٠٢٤-٠١-٠١"]
lastmod_text = mostly(st.one_of(st.dates().map(str), st.datetimes().map(lambda d: d.isoformat()),
                                st.sampled_from(LASTMODS)), nasty)
changefreq_text = mostly(st.sampled_from([*CHANGEFREQS, "DAILY", " weekly ", "weeKly", "Daily"]),
                         nasty)
priority_text = mostly(st.one_of(st.decimals(0, 1, places=3).map(str), st.sampled_from(
                           ["1", ".5", "5.", ".", "0.1234", "nan", "-0", "٠.٥"])),
                       st.one_of(nasty, st.floats().map(str)))
FIELD_TEXT = {"lastmod": lastmod_text, "changefreq": changefreq_text, "priority": priority_text}
# JSON as a client might send it; numbers as large as JSON can write, as strings are long.
json_leaf = st.one_of(st.none(), st.booleans(), st.integers(), st.integers(-10**400, 10**400),
                      st.floats(), nasty)
json_values = st.recursive(json_leaf, lambda inner: st.lists(inner, max_size=3)
                           | st.dictionaries(nasty, inner, max_size=3), max_leaves=8)
rarely = st.tuples(st.booleans(), st.booleans(), st.booleans()).map(all)  # one time in eight
hreflang = st.one_of(st.sampled_from(["en", "de-CH", "x-default", "zh-Hant", "EN", "de_CH"]), nasty)
other_url = st.builds(operator.add, st.sampled_from(["https://cdn.example.net/", "http://例え.jp/"]),
                      printable)
numbers = itertools.count()
# Examples that each make a site and publish its sitemaps are too dear to shrink: shrinking one
# failure took five minutes. A failure shows the example as found; the smallest cases of the
# failures found so far are the tests at the end of the module.
UNSHRUNK = settings(database=None, deadline=None, phases=[Phase.generate])


def new_site(session, scope: tuple[str, str], max_urls: int) -> Site:
    """A site of its own per example; sites on one host need sitemaps of their own names."""
    n = next(numbers)
    return make_site(session, f"Site {n}", scope[0], encoding=scope[1], max_urls_per_file=max_urls,
                     sitemap_url=f"{scope[0]}site{n}.xml")


def check_rejection(exc: InvalidValue, fields) -> None:
    """Each field's error names its field and its rule."""
    for error in each_error(exc):
        assert error.field in fields and error.rule.strip(), error
        assert str(error).startswith(error.field) and str(error).endswith(error.rule)


@settings(max_examples=1500, database=None, deadline=None)
@given(st.sampled_from(SCOPES).flatmap(lambda scope: st.tuples(st.just(scope), loc_text(scope[0]))),
       st.fixed_dictionaries({}, optional=FIELD_TEXT))
def test_any_loc_is_refused_by_rule_or_normalized_into_the_sites_scope(scope_and_raw, fields):
    scope, raw = scope_and_raw
    site = Site(base_url=normalize_base_url(*scope), encoding=scope[1])
    try:
        checked = check_url(site, raw, fields)
    except InvalidValue as exc:
        check_rejection(exc, COLUMNS)
        return
    loc = checked.loc
    assert loc.isascii() and loc.startswith(site.base_url)
    assert urlsplit(loc).scheme in ("http", "https") and urlsplit(loc).netloc
    assert MIN_LOC_LENGTH <= len(loc) <= MAX_LOC_LENGTH
    assert re.fullmatch(r"[A-Za-z0-9\-._~!$&'()*+,;=:@/?#%\[\]]+", loc)
    assert not re.search(r"%(?![0-9A-F]{2})", loc)
    assert normalize_url(loc, site.encoding) == loc
    assert check_url(site, loc).loc == loc
    values = checked.values
    if values.get("lastmod") is not None:
        assert re.fullmatch(r"\d{4}-\d\d-\d\d(T\d\d:\d\d:\d\d\+00:00)?", values["lastmod"], re.A)
        assert FIELD_RULES["lastmod"](values["lastmod"]) == values["lastmod"]
    assert values.get("changefreq") in (None, *CHANGEFREQS)
    if values.get("priority") is not None:
        assert 0 <= values["priority"] <= 1
        assert FIELD_RULES["priority"](format_priority(values["priority"])) == values["priority"]


def published_entries(app, site: Site) -> dict[str, tuple]:
    """loc -> (lastmod, changefreq, priority, images, alternates) as the published files say,
    each file validated against the official schema on the way."""
    files = get_store(app).published(site.storage_key)
    if files is None or not files.files:
        return {}
    paths = {name: file.path for name, file in files.files.items()}
    root = parse(paths[site.sitemap_url.rsplit("/", 1)[-1]])
    if root.tag.endswith("sitemapindex"):
        roots = [parse(paths[loc.rsplit("/", 1)[-1]]) for loc in locs(root)]
    else:
        roots = [root]
    entries = {}
    for url in (url for root in roots for url in root.xpath("sm:url", namespaces=NS)):
        loc = url.findtext("sm:loc", namespaces=NS)
        lastmod, changefreq, priority = (url.findtext(tag, namespaces=NS) for tag in SITEMAP_TAGS)
        assert loc not in entries, f"{loc} is listed twice"
        entries[loc] = (lastmod, changefreq, None if priority is None else float(priority),
                        url.xpath("image:image/image:loc/text()", namespaces=NS),
                        sorted((link.get("hreflang"), link.get("href"))
                               for link in url.xpath("xhtml:link", namespaces=NS)))
    return entries


def stored_entries(app, site_id: int) -> dict[str, tuple]:
    """The same view of the site's live URLs, read from the database."""
    with app.extensions["db_sessionmaker"]() as session:
        urls = session.scalars(select(Url).where(Url.site_id == site_id, Url.deleted_at.is_(None))
                               .options(selectinload(Url.images), selectinload(Url.alternates)))
        return {url.loc: (url.lastmod, url.changefreq, url.priority,
                          [image.loc for image in url.images],
                          sorted((a.hreflang, a.href) for a in url.alternates)) for url in urls}


def assert_sitemaps_say_what_is_stored(app, site: Site) -> None:
    generation = jobs.regenerate(site.id, app)
    assert generation.status == "succeeded", generation.error
    assert published_entries(app, site) == stored_entries(app, site.id)


@st.composite
def csv_files(draw, base: str) -> tuple[str, list[tuple[int, list[str]]], tuple[str, ...]]:
    """A CSV file written by the csv module: (text, [(line, cells)] of its rows, columns)."""
    columns = ("loc", *draw(st.lists(st.sampled_from(COLUMNS[1:]), unique=True)))
    # Any order: a loc column after another one finds the importer bug shown by
    # test_an_import_whose_loc_is_not_the_first_column_keeps_every_row.
    columns = tuple(draw(st.permutations(columns)))
    header = [draw(st.sampled_from([name, name.upper(), f" {name} "])) for name in columns]
    cell = {"loc": loc_text(base, valid_often=True), **FIELD_TEXT}
    out = io.StringIO()
    writer = csv.writer(out)
    writer.writerow(header)
    rows = []
    for _ in range(draw(st.integers(0, 8))):
        cells = [draw(cell[name]) for name in columns]
        if draw(rarely):  # a row with too few or too many fields, or none
            cells = cells[:draw(st.integers(0, len(cells)))] or draw(st.lists(nasty, max_size=5))
        line = out.getvalue().count("\n") + 1
        writer.writerow(cells)
        if cells:
            rows.append((line, cells))
    return out.getvalue(), rows, tuple(name.lower() for name in columns)


def expected_import(scope: Scope, rows, columns) -> tuple[list, list[tuple[int, str | None]]]:
    """What each row should become: checked values in file order, and the rejected lines with
    the reason the rule gives (None for a row of the wrong width)."""
    rules = [scope.normalize if name == "loc" else FIELD_RULES[name] for name in columns]
    valid, rejected = [], []
    for line, cells in rows:
        if len(cells) != len(columns):
            rejected.append((line, None))
            continue
        try:
            valid.append(dict(zip(columns, (rule(c) for rule, c in zip(rules, cells)))))
        except InvalidValue as exc:
            rejected.append((line, str(exc)))
    return valid, rejected


def all_stored(session, site: Site) -> dict[str, dict]:
    rows = session.execute(select(Url).where(Url.site_id == site.id)).scalars()
    return {url.loc: {"lastmod": url.lastmod, "changefreq": url.changefreq,
                      "priority": url.priority, "live": url.deleted_at is None} for url in rows}


def test_any_import_file_stores_valid_rows_and_rejects_the_rest_by_line(app, session):
    @settings(UNSHRUNK, max_examples=60)
    @given(st.sampled_from(SCOPES), st.sampled_from([1, 3, 50_000]), st.data())
    def check(scope, max_urls, data):
        site = new_site(session, scope, max_urls)
        for _ in range(data.draw(st.integers(1, 3))):
            if data.draw(st.booleans()):
                # Chunks no smaller than a row: see test_a_quoted_line_break_never_starts_a_row.
                chunk_chars = data.draw(st.sampled_from([2048, 1 << 19]))
                import_csv(site, *data.draw(csv_files(scope[0])), chunk_chars)
            else:
                lines = st.lists(loc_text(scope[0])).map("\n".join)
                import_raw(site, data.draw(st.one_of(nasty, lines)))
            live = session.scalars(select(Url.id).where(Url.site_id == site.id,
                                                        Url.deleted_at.is_(None))).all()
            if live:  # deleted rows come back through a later import
                delete_urls(session, site, data.draw(st.lists(st.sampled_from(live), max_size=2)))
            session.commit()
        assert_sitemaps_say_what_is_stored(app, site)

    def import_csv(site, text, rows, columns, chunk_chars):
        before = all_stored(session, site)
        valid, rejected = expected_import(Scope(site.base_url, site.encoding), rows, columns)
        report = import_urls(session, site, io.StringIO(text), chunk_chars=chunk_chars)
        session.commit()
        assert [line for line, _ in report.rejections] == [line for line, _ in rejected]
        for (_, reason), (_, expected) in zip(report.english_rejections(), rejected):
            assert reason == expected if expected else "fields" in reason
        model = {loc: dict(values) for loc, values in before.items()}
        for values in valid:
            model.setdefault(values["loc"], dict.fromkeys(COLUMNS[1:]))
            model[values["loc"]].update({k: v for k, v in values.items() if k != "loc"},
                                        live=True)
        assert all_stored(session, site) == model
        new = {values["loc"] for values in valid} - {loc for loc, v in before.items() if v["live"]}
        assert report.added == len(new)
        assert report.added + report.updated + report.unchanged + report.duplicates == len(valid)

    def import_raw(site, text):
        try:
            report = import_urls(session, site, io.StringIO(text))
        except ImportFormatError as exc:
            session.rollback()
            assert str(exc)
            return
        session.commit()
        lines = text.count("\n") + 1
        assert all(1 <= line <= lines and reason for line, reason in report.rejections)

    check()


@st.composite
def api_items(draw, base: str) -> dict:
    """An item with the right keys and values that are mostly of the right type, sometimes any
    JSON at all; alternates that usually name the item itself."""
    loc = draw(json_values if draw(rarely) else loc_text(base, valid_often=True))
    fields = {"lastmod": lastmod_text, "changefreq": changefreq_text,
              "priority": mostly(st.decimals(0, 1, places=3).map(float),
                                 st.one_of(st.floats(), st.integers(-10**400, 10**400))),
              "images": st.lists(st.one_of(other_url, loc_text(base)), max_size=3)}
    item = {"loc": loc}
    for name, values in fields.items():
        if draw(st.booleans()):
            item[name] = draw(json_values if draw(rarely) else values)
    if draw(st.booleans()):
        others = draw(st.dictionaries(hreflang, st.one_of(other_url, loc_text(base)), max_size=3))
        item["alternates"] = others if draw(rarely) else {draw(hreflang): loc, **others}
    if draw(rarely):
        item[draw(nasty)] = draw(json_values)
    return item


@st.composite
def api_requests(draw, scope: tuple[str, str]) -> tuple[tuple[str, str], list[list]]:
    """(scope, [items of each request]): a request, and perhaps another that sends some of its
    items again, as a content system syncing twice does."""
    items = st.one_of(api_items(scope[0]), api_items(scope[0]), json_values)
    first = draw(st.lists(items, max_size=8))
    if not draw(st.booleans()):
        return scope, [first]
    again = draw(st.lists(st.sampled_from(first), max_size=4)) if first else []
    return scope, [first, again + draw(st.lists(items, max_size=4))]


def write_token(app) -> str:
    """The secret of a write token for every site."""
    with app.extensions["db_sessionmaker"]() as session:
        user = create_user(session, "cms@example.com", "correct horse", "editor")
        _, secret = create_token(session, user, "properties", "write", None)
        session.commit()
    return secret


def assert_stored_as_sent(app, site: Site, item: dict) -> None:
    """An accepted item's loc is live with every field it sent, each in its normalised form."""
    loc = Scope(site.base_url, site.encoding).normalize(item["loc"])
    lastmod, changefreq, priority, images, alternates = stored_entries(app, site.id)[loc]
    if "lastmod" in item:
        assert lastmod == FIELD_RULES["lastmod"](item["lastmod"])
    if "changefreq" in item:
        assert changefreq == FIELD_RULES["changefreq"](item["changefreq"])
    if "priority" in item:
        assert priority == (None if item["priority"] is None else float(item["priority"]))
    if item.get("images") is not None:
        assert images == [normalize_url(image, site.encoding) for image in item["images"]]
    if item.get("alternates") is not None:
        assert alternates == sorted({normalize_hreflang(lang): normalize_url(href, site.encoding)
                                     for lang, href in item["alternates"].items()}.items())


def test_any_bulk_upsert_stores_or_reports_each_item_and_never_fails(app):
    app.config["API_RATE_LIMIT"] = 10 ** 6
    secret = write_token(app)
    client = app.test_client()

    @settings(UNSHRUNK, max_examples=100)
    @given(st.sampled_from(SCOPES).flatmap(api_requests), st.sampled_from([2, 50_000]))
    def check(scope_and_requests, max_urls):
        scope, requests = scope_and_requests
        with app.extensions["db_sessionmaker"]() as session:
            site = new_site(session, scope, max_urls)
            session.refresh(site)  # loaded, so it can be read once the session is closed
        for items in requests:
            before = len(stored_entries(app, site.id))
            answer = client.post(f"/api/v1/sites/{site.slug}/urls", json={"urls": items},
                                 headers={"Authorization": f"Bearer {secret}"})
            assert answer.status_code == 200, answer.text
            report = answer.json
            # Each rejected item is reported once per field that breaks a rule.
            indexes = {error["index"] for error in report["errors"]}
            assert indexes <= set(range(len(items)))
            assert len({(e["index"], e["field"]) for e in report["errors"]}) == len(report["errors"])
            for error in report["errors"]:  # a field, a key of alternates, or an unknown key
                item = items[error["index"]]
                assert error["field"] in (*ITEM_FIELDS, "item", "hreflang") \
                    or error["field"] in item, error
                assert error["rule"].strip() and error["message"].endswith(error["rule"]), error
            assert report["created"] + report["updated"] + report["unchanged"] + len(indexes) \
                == len(items)
            assert len(stored_entries(app, site.id)) == before + report["created"]
            for index in set(range(len(items))) - set(indexes):
                assert_stored_as_sent(app, site, items[index])
        assert_sitemaps_say_what_is_stored(app, site)

    check()


# What the properties above once found, each kept as its smallest case.


def test_an_import_whose_loc_is_not_the_first_column_keeps_every_row(session):
    # Rows were once keyed by their first value, not their loc: two rows with one lastmod
    # collapsed into one.
    site = make_site(session)
    text = ("lastmod,loc\n2024-01-01,https://shop.example.com/a\n"
            "2024-01-01,https://shop.example.com/b\n")
    report = import_urls(session, site, io.StringIO(text))
    assert (report.added, report.duplicates) == (2, 0)


def test_importing_again_a_file_whose_loc_is_not_the_first_column_changes_nothing(session):
    # For the same reason the stored loc was never found: the second import inserted it again
    # and raised IntegrityError (UNIQUE urls.site_id, urls.loc).
    site = make_site(session)
    text = "changefreq,loc\ndaily,https://shop.example.com/a\n"
    import_urls(session, site, io.StringIO(text))
    session.commit()
    assert import_urls(session, site, io.StringIO(text)).unchanged == 1


def test_a_quoted_line_break_never_starts_a_row(session):
    # A quoted field open for more than twice chunk_chars was once cut at a line break inside
    # it, and the rest read as rows of their own: the loc inside the quotes was imported.
    site = make_site(session)
    text = 'loc\nhttps://shop.example.com/a,"\nhttps://shop.example.com/injected\n"\n'
    report = import_urls(session, site, io.StringIO(text), chunk_chars=8)
    assert [line for line, _ in report.rejections] == [2]
    assert report.added == 0


def test_a_priority_too_large_for_a_float_is_refused_by_rule(app):
    # float() of a JSON integer of 309 digits raises OverflowError: once a 500.
    secret = write_token(app)
    with app.extensions["db_sessionmaker"]() as session:
        make_site(session)
    answer = app.test_client().post(
        "/api/v1/sites/shop/urls", json={"urls": [{"loc": "https://shop.example.com/a",
                                                   "priority": 10 ** 309}]},
        headers={"Authorization": f"Bearer {secret}"})
    assert answer.status_code == 200, answer.text
    assert [(e["index"], e["field"]) for e in answer.json["errors"]] == [(0, "priority")]


def test_sending_a_url_with_alternates_again_leaves_it_unchanged(app):
    # New alternates were once inserted before the old ones were deleted: UNIQUE (url_id,
    # hreflang) failed and the API answered 409 "send it again", every time.
    secret = write_token(app)
    with app.extensions["db_sessionmaker"]() as session:
        make_site(session)
    item = {"loc": "https://shop.example.com/a", "alternates": {"en": "https://shop.example.com/a"}}
    for _ in range(2):
        answer = app.test_client().post("/api/v1/sites/shop/urls", json={"urls": [item]},
                                        headers={"Authorization": f"Bearer {secret}"})
        assert answer.status_code == 200, answer.text
    assert answer.json["unchanged"] == 1
