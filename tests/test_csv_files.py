"""CSV files as people have them: an export that imports back into the same site (images and
alternates included), compressed or misnamed files read by their content, and files saved in
the encodings of Japanese spreadsheets."""

from __future__ import annotations

import gzip
import io
import itertools
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from sqlalchemy import select
from sqlalchemy.orm import selectinload

from tests.builders import make_site
from webapp.errors import InvalidValue
from webapp.models import Url, UrlAlternate, UrlImage
from webapp.outbound import Policy
from webapp.protocol import CHANGEFREQS, check_text
from webapp.urls import (
    ImportFormatError,
    check_url,
    csv_chunks,
    import_urls,
    open_import,
)

SCOPES = [("https://shop.example.com/", "utf-8"), ("https://bücher.example/katalog/", "utf-8"),
          ("http://shop.example.com:8080/blog/", "shift_jis"), ("https://例え.テスト/", "euc-jp")]
# What CSV, the cells' own line format and the title escapes must carry through unchanged.
PIECES = [",", '"', "\n", "\r\n", "\r", "\\", "\\n", "\\\\", " ", "\t", "=", "あ", "表", "ソ",
          "é", "\U0001f600", "&", "<", "%", "%2", "/", "?", "#"]
letters = st.characters(exclude_categories=["Cs", "Cc", "Cn"])
text = st.lists(st.one_of(st.text(letters, max_size=8), st.sampled_from(PIECES)),
                max_size=5).map("".join)
# Titles and captions lean on the pieces: line breaks and backslashes are what the cells escape.
words = st.lists(st.one_of(st.sampled_from(PIECES), st.text(letters, max_size=4)), min_size=1,
                 max_size=6).map("".join)
numbers = itertools.count()


def new_site(session, scope: tuple[str, str]):
    n = next(numbers)
    return make_site(session, f"Site {n}", scope[0], encoding=scope[1],
                     sitemap_url=f"{scope[0]}site{n}.xml")


def snapshot(session, site) -> list[tuple]:
    """Everything stored of the site's live URLs."""
    session.expire_all()
    urls = session.scalars(select(Url).where(Url.site_id == site.id, Url.deleted_at.is_(None))
                           .options(selectinload(Url.images), selectinload(Url.alternates))
                           .order_by(Url.loc))
    return [(url.loc, url.lastmod, url.changefreq, url.priority,
             [(image.loc, image.title, image.caption) for image in url.images],
             [(alternate.hreflang, alternate.href) for alternate in url.alternates])
            for url in urls]


def exported(session, site) -> str:
    return "".join(csv_chunks(session, site))


def import_file(session, site, path: Path, encoding: str = "utf-8", parallel=None):
    with open_import(path, path.name, site.base_url, None, Policy(5), encoding) as stream:
        report = import_urls(session, site, stream, parallel=parallel)
    session.commit()
    return report


@st.composite
def pages(draw, base: str) -> dict:
    """A URL as typed, with any of its fields, images (titles, captions) and alternates."""
    return {
        "loc": base + draw(text),
        "fields": draw(st.fixed_dictionaries({}, optional={
            "lastmod": st.one_of(st.dates().map(str), st.datetimes().map(
                lambda moment: moment.isoformat() + "+09:00")),
            "changefreq": st.sampled_from(CHANGEFREQS),
            "priority": st.decimals(0, 1, places=3).map(str)})),
        "images": draw(st.lists(st.tuples(
            st.sampled_from([base, "https://cdn.example.net/", "http://例え.jp/"]), text,
            st.one_of(st.none(), words), st.one_of(st.none(), words)), max_size=3)),
        "alternates": draw(st.lists(st.tuples(
            st.sampled_from(["de", "de-CH", "zh-Hant", "x-default", "ja"]),
            st.sampled_from([base, "https://other.example/"]), text), max_size=3)),
        "own_language": draw(st.sampled_from(["en", "fr-CA"])),
    }


def store(session, site, page: dict) -> None:
    """The page as the site keeps it, when the site's rules take it; else nothing."""
    alternates = {lang: prefix + path for lang, prefix, path in page["alternates"]}
    try:
        checked = check_url(site, page["loc"], page["fields"],
                            [prefix + path for prefix, path, _, _ in page["images"]])
        if alternates:
            alternates[page["own_language"]] = checked.loc
            checked = check_url(site, page["loc"], page["fields"],
                                [prefix + path for prefix, path, _, _ in page["images"]],
                                alternates)
        texts = [(check_text("title", title) if title else None,
                  check_text("caption", caption) if caption else None)
                 for _, _, title, caption in page["images"]]
    except InvalidValue:
        return
    if session.scalar(select(Url.id).where(Url.site_id == site.id, Url.loc == checked.loc)):
        return
    url = Url(site_id=site.id, loc=checked.loc, **checked.values)
    url.images = [UrlImage(loc=loc, title=title or None, caption=caption or None, position=n)
                  for n, (loc, (title, caption)) in enumerate(zip(checked.images, texts))]
    url.alternates = [UrlAlternate(hreflang=lang, href=href)
                      for lang, href in (checked.alternates or {}).items()]
    session.add(url)
    session.flush()


# 1. Export, then import into a fresh site: the same site


def test_an_export_imported_into_a_fresh_site_gives_back_the_same_site(session, tmp_path):
    @settings(max_examples=50, database=None, deadline=None)
    @given(st.sampled_from(SCOPES).flatmap(
        lambda scope: st.tuples(st.just(scope), st.lists(pages(scope[0]), max_size=6))))
    def round_trip(scope_and_pages):
        scope, drawn = scope_and_pages
        original = new_site(session, scope)
        for page in drawn:
            store(session, original, page)
        session.commit()
        path = tmp_path / "export.csv"
        path.write_text(exported(session, original), encoding="utf-8", newline="")
        copy = new_site(session, scope)
        report = import_file(session, copy, path)
        assert (report.rejected, report.rejections) == (0, []), report.rejections
        assert snapshot(session, copy) == snapshot(session, original)
        assert exported(session, copy) == exported(session, original)

    round_trip()


def test_a_large_export_read_by_the_worker_process_gives_back_the_same_site(session, tmp_path):
    original = make_site(session)
    for n in range(30):
        store(session, original, {
            "loc": f"{original.base_url}p/{n}", "fields": {"priority": "0.5"},
            "images": [(original.base_url, f"i{n}.jpg", f"Title\n{n} \\n\\", None)] * (n % 3),
            "alternates": [("de", original.base_url, f"de/p/{n}")] if n % 2 else [],
            "own_language": "en"})
    session.commit()
    path = tmp_path / "export.csv"
    path.write_text(exported(session, original), encoding="utf-8", newline="")
    copy = make_site(session, "Copy", original.base_url, sitemap_url=f"{original.base_url}c.xml")
    assert import_file(session, copy, path, parallel=True).added == 30
    assert snapshot(session, copy) == snapshot(session, original)


def test_importing_an_export_again_changes_nothing_and_a_changed_title_is_an_update(session,
                                                                                     tmp_path):
    site = make_site(session)
    store(session, site, {"loc": f"{site.base_url}a", "fields": {},
                          "images": [(site.base_url, "a.jpg", "Front", "A caption")],
                          "alternates": [], "own_language": "en"})
    session.commit()
    path = tmp_path / "export.csv"
    path.write_text(exported(session, site), encoding="utf-8", newline="")
    report = import_file(session, site, path)
    assert (report.added, report.updated, report.unchanged) == (0, 0, 1)
    path.write_text(path.read_text(encoding="utf-8").replace("Front", "Back"), encoding="utf-8")
    report = import_file(session, site, path)
    assert (report.added, report.updated, report.unchanged) == (0, 1, 0)
    assert snapshot(session, site)[0][4] == [(f"{site.base_url}a.jpg", "Back", "A caption")]


@pytest.mark.parametrize(("header", "row", "message"), [
    ("loc,images,image_titles", "{b}a,{b}1.jpg {b}2.jpg,One",
     "image_titles 'One': has 1 lines and there are 2 images"),
    ("loc,alternates", "{b}a,de={b}de/a", "alternates 'de': must include {b}a itself"),
    ("loc,alternates", "{b}a,en={b}a de={b}de/a de={b}de/b", "names the language de twice"),
    ("loc,alternates", "{b}a,{b}a", "must be written as LANG=URL"),
    ("loc,images", "{b}a,notaurl", "images 'notaurl'"),
])
def test_a_row_with_a_bad_image_or_alternate_is_rejected_by_line_and_column(
        session, tmp_path, header, row, message):
    site = make_site(session)
    path = tmp_path / "urls.csv"
    path.write_text(f"{header}\n{row.format(b=site.base_url)}\n", encoding="utf-8")
    report = import_file(session, site, path)
    [(line, reason)] = report.rejections
    assert line == 2 and message.format(b=site.base_url) in reason, reason
    assert snapshot(session, site) == []


def test_titles_without_an_images_column_are_refused_before_anything_is_stored(session,
                                                                               tmp_path):
    site = make_site(session)
    path = tmp_path / "urls.csv"
    path.write_text(f"loc,image_titles\n{site.base_url}a,Front\n", encoding="utf-8")
    with pytest.raises(ImportFormatError, match="image_titles needs an images column"):
        import_file(session, site, path)
