"""CSV files as people have them: an export that imports back into the same site (images,
alternates and videos included), compressed or misnamed files read by their content, and files saved in
the encodings of Japanese spreadsheets."""

from __future__ import annotations

import csv
import gzip
import io
import itertools
import logging
from pathlib import Path

import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st
from sqlalchemy import event, func, select
from sqlalchemy.orm import selectinload

from tests.builders import make_site, make_urls
from webapp import tasks
from webapp.errors import InvalidValue
from webapp.models import Url, UrlAlternate, UrlImage, UrlNews, UrlVideo
from webapp.outbound import Policy
from webapp.protocol import CHANGEFREQS, check_text
from webapp.protocol.news import check_news
from webapp.said import render
from webapp.urls import (
    ImportFormatError,
    check_url,
    csv_chunks,
    import_opened,
    import_urls,
    open_import,
)
from webapp.urls.csv_rows import FORMULA_STARTS
from webapp.urls.videos import Video

SCOPES = [("https://shop.example.com/", "utf-8"), ("https://bücher.example/katalog/", "utf-8"),
          ("http://shop.example.com:8080/blog/", "shift_jis"), ("https://例え.テスト/", "euc-jp")]
# What CSV, the cells' own line format and the title escapes must carry through unchanged.
# What starts a formula in a spreadsheet, and the quote an export puts before it, too.
PIECES = [",", '"', "\n", "\r\n", "\r", "\\", "\\n", "\\\\", " ", "\t", "=", "あ", "表", "ソ",
          "é", "\U0001f600", "&", "<", "%", "%2", "/", "?", "#", "+", "-", "@", "'", "'=", "''"]
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
                           .options(selectinload(Url.images), selectinload(Url.alternates),
                                    selectinload(Url.videos), selectinload(Url.news))
                           .order_by(Url.loc))
    return [(url.loc, url.lastmod, url.changefreq, url.priority,
             [(image.loc, image.title, image.caption) for image in url.images],
             [(alternate.hreflang, alternate.href) for alternate in url.alternates],
             [Video.from_row(video) for video in url.videos],
             url.news and (url.news.publication_date, url.news.title))
            for url in urls]


def exported(session, site) -> str:
    return "".join(csv_chunks(session, site))


def formulas(text: str) -> list[str]:
    """The cells of a CSV text that a spreadsheet opens as formulas."""
    return [cell for row in csv.reader(io.StringIO(text)) for cell in row
            if cell.startswith(FORMULA_STARTS)]


def import_file(session, site, path: Path, encoding: str = "utf-8", parallel=None):
    with open_import(path, path.name, site.base_url, None, Policy(5), encoding) as stream:
        report = (import_opened(session, site, stream) if parallel is None  # a sitemap too
                  else import_urls(session, site, stream, parallel=parallel))
    session.commit()
    return report


def videos(base: str):
    """A page's videos as typed: every field, text with the pieces the cells escape (line
    breaks, backslashes, commas in tags)."""
    where = st.sampled_from([base, "https://cdn.example.net/", "http://例え.jp/"])
    path = st.text(letters, max_size=8)  # URLs' own rules are drawn for images above
    moment = st.one_of(st.dates().map(str), st.datetimes().map(
        lambda moment: moment.isoformat() + "+09:00"))

    def listed(choices):
        return st.tuples(st.sampled_from(["allow", "deny"]), st.lists(
            st.sampled_from(choices), min_size=1, max_size=3).map(" ".join))

    def flat(video: dict) -> dict:
        for pair, names in (("restriction", ("restriction_relationship",
                                             "restriction_countries")),
                            ("platform", ("platform_relationship", "platforms"))):
            if pair in video:
                video[names[0]], video[names[1]] = video.pop(pair)
        if "uploader" in video:  # its info page needs it
            video["uploader"], info = video["uploader"]
            if info is not None:
                video["uploader_info"] = info
        return video

    return st.lists(st.fixed_dictionaries({
        "thumbnail_loc": st.tuples(where, path).map("".join),
        "title": words, "description": words,
        "content_loc": st.tuples(where, path).map(lambda parts: "".join(parts) + ".mp4"),
    }, optional={
        "player_loc": st.tuples(where, path).map("".join),
        "duration": st.integers(1, 28_800), "rating": st.floats(0, 5),
        "view_count": st.integers(0, 2**63 - 1), "expiration_date": moment,
        "publication_date": moment, "family_friendly": st.booleans(),
        "restriction": listed(["JP", "US", "DE", "GB"]),
        "platform": listed(["web", "mobile", "tv"]),
        "requires_subscription": st.booleans(),
        "uploader": st.tuples(words, st.one_of(st.none(), st.just(base + "about"))),
        "live": st.booleans(),
        "tags": st.lists(words, max_size=4),
    }).map(flat), max_size=2)


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
        "videos": draw(videos(base)),
        "news": draw(st.one_of(st.none(), st.tuples(st.one_of(
            st.dates().map(str), st.datetimes().map(lambda moment: moment.isoformat() + "-05:00"),
            st.sampled_from(["2026-11", "", "soon"])), st.one_of(words, st.just(""))))),
    }


def store(session, site, page: dict) -> None:
    """The page as the site keeps it, when the site's rules take it; else nothing."""
    alternates = {lang: prefix + path for lang, prefix, path in page["alternates"]}
    try:
        checked = check_url(site, page["loc"], page["fields"],
                            [prefix + path for prefix, path, _, _ in page["images"]],
                            videos=page.get("videos"))
        if alternates:
            alternates[page["own_language"]] = checked.loc
            checked = check_url(site, page["loc"], page["fields"],
                                [prefix + path for prefix, path, _, _ in page["images"]],
                                alternates, page.get("videos"))
        texts = [(check_text("title", title) if title else None,
                  check_text("caption", caption) if caption else None)
                 for _, _, title, caption in page.get("images", ())]
        article = check_news(*page["news"]) if page.get("news") else None
    except InvalidValue:
        return
    if session.scalar(select(Url.id).where(Url.site_id == site.id, Url.loc == checked.loc)):
        return
    url = Url(site_id=site.id, loc=checked.loc, **checked.values)
    url.images = [UrlImage(loc=loc, title=title or None, caption=caption or None, position=n)
                  for n, (loc, (title, caption)) in enumerate(zip(checked.images, texts))]
    url.alternates = [UrlAlternate(hreflang=lang, href=href)
                      for lang, href in (checked.alternates or {}).items()]
    url.videos = [UrlVideo(position=n, **video.as_row())
                  for n, video in enumerate(checked.videos or ())]
    if article is not None:
        url.news = UrlNews(publication_date=article.publication_date, title=article.title)
    session.add(url)
    session.flush()


# 1. Export, then import into a fresh site: the same site


def test_an_export_imported_into_a_fresh_site_gives_back_the_same_site(session, tmp_path):
    base = SCOPES[0][0]
    with_a_video = {"loc": base + "clip", "fields": {}, "images": [], "alternates": [],
                    "own_language": "en", "news": None,
                    "videos": [{"thumbnail_loc": base + "clip.jpg", "title": "Clip, \"one\"",
                                "description": "A line\nand another", "tags": ["a,b", "表"],
                                "content_loc": "https://cdn.example.net/clip.mp4"}]}

    @settings(max_examples=50, database=None, deadline=None)
    @given(st.sampled_from(SCOPES).flatmap(
        lambda scope: st.tuples(st.just(scope), st.lists(pages(scope[0]), max_size=6))))
    @example((SCOPES[0], [with_a_video]))  # drawn videos are all refused in some runs
    def round_trip(scope_and_pages):
        scope, drawn = scope_and_pages
        original = new_site(session, scope)
        for page in drawn:
            store(session, original, page)
        session.commit()
        path = tmp_path / "export.csv"
        path.write_text(exported(session, original), encoding="utf-8", newline="")
        assert formulas(path.read_text(encoding="utf-8")) == []
        copy = new_site(session, scope)
        report = import_file(session, copy, path)
        assert (report.rejected, report.rejections) == (0, []), report.rejections
        assert snapshot(session, copy) == snapshot(session, original)
        assert exported(session, copy) == exported(session, original)
        stored_videos.append(session.scalar(select(func.count(UrlVideo.id)).join(Url).where(
            Url.site_id == copy.id)))

    stored_videos: list[int] = []
    round_trip()
    assert sum(stored_videos) > 0  # a video went through at least once (the example's)


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


def site_with_a_titled_image(session):
    site = make_site(session)
    store(session, site, {"loc": f"{site.base_url}a", "fields": {},
                          "images": [(site.base_url, "a.jpg", "Front", "A caption")],
                          "alternates": [], "own_language": "en"})
    session.commit()
    return site


def test_importing_an_export_again_changes_nothing_and_a_changed_title_is_an_update(session,
                                                                                     tmp_path):
    site = site_with_a_titled_image(session)
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
    ("loc,alternates", "{b}a,en={b}a de={b}de/a de={b}de/b", "one URL per language"),
    ("loc,alternates", "{b}a,{b}a", "must be written as LANG=URL"),
    ("loc,images", "{b}a,notaurl", "images 'notaurl'"),
])
def test_a_row_with_a_bad_image_or_alternate_is_rejected_by_line_and_column(
        session, tmp_path, header, row, message):
    site = make_site(session)
    path = tmp_path / "urls.csv"
    path.write_text(f"{header}\n{row.format(b=site.base_url)}\n", encoding="utf-8")
    report = import_file(session, site, path)
    [(line, reason)] = report.english_rejections()
    assert line == 2 and message.format(b=site.base_url) in reason, reason
    assert snapshot(session, site) == []


def test_titles_without_an_images_column_are_refused_before_anything_is_stored(session,
                                                                               tmp_path):
    site = make_site(session)
    path = tmp_path / "urls.csv"
    path.write_text(f"loc,image_titles\n{site.base_url}a,Front\n", encoding="utf-8")
    with pytest.raises(ImportFormatError, match="image_titles needs an images column"):
        import_file(session, site, path)


# 2. What a file is comes from its content, not its name


def japanese_site(session, encoding="utf-8"):
    return make_site(session, "Shop", "https://shop.example.com/", encoding=encoding)


@pytest.mark.parametrize(("name", "content"), [
    ("urls.txt.gz", "# from the CMS\n{b}a\n{b}b\n"),
    ("urls.csv.gz", "loc,priority,images\n{b}a,0.5,{b}a.jpg\n{b}b,,\n"),
    ("sitemap.xml", "loc\n{b}a\n{b}b\n"),  # a CSV by any other name
    ("sitemap.xml.gz", "{b}a\n{b}b\n"),
])
def test_a_compressed_or_misnamed_list_or_csv_is_read_as_what_it_holds(session, tmp_path, name,
                                                                         content):
    site = make_site(session)
    data = content.format(b=site.base_url).encode()
    path = tmp_path / name
    path.write_bytes(gzip.compress(data) if name.endswith(".gz") else data)
    report = import_file(session, site, path)
    assert (report.added, report.rejected) == (2, 0), report.rejections
    assert [loc for loc, *_ in snapshot(session, site)] == [f"{site.base_url}a",
                                                             f"{site.base_url}b"]


def test_a_compressed_sitemap_named_as_csv_is_read_as_a_sitemap(session, tmp_path):
    site = make_site(session)
    path = tmp_path / "urls.csv"
    path.write_bytes(gzip.compress(
        b'<?xml version="1.0"?><urlset xmlns="http://www.sitemaps.org/schemas/sitemap/0.9">'
        + f"<url><loc>{site.base_url}a</loc><lastmod>2026-01-02</lastmod></url>".encode()
        + b"</urlset>"))
    assert import_file(session, site, path).added == 1
    assert snapshot(session, site)[0][:2] == (f"{site.base_url}a", "2026-01-02")


def test_a_truncated_gzip_list_is_refused_whole_as_a_damaged_file(session, tmp_path):
    site = make_site(session)
    packed = gzip.compress("".join(f"{site.base_url}p/{n}\n" for n in range(5000)).encode())
    path = tmp_path / "urls.txt.gz"
    path.write_bytes(packed[:len(packed) // 2])
    with pytest.raises(ImportFormatError, match="urls.txt.gz is not a readable gzip file"):
        import_file(session, site, path)
    session.rollback()
    assert snapshot(session, site) == []



def test_a_gzip_list_is_read_up_to_max_unpacked_and_refused_whole_one_byte_past_it(session,
                                                                                   tmp_path):
    site = make_site(session)
    line = f"{site.base_url}p/{{:07}}\n".format
    limit = 1 << 20
    exactly = "".join(line(n) for n in range(limit // len(line(0)))).encode()
    exactly += b"\n" * (limit - len(exactly))
    path = tmp_path / "urls.txt.gz"

    def imported(size: int):
        path.write_bytes(gzip.compress(exactly + b"\n" * (size - limit)))
        with open_import(path, path.name, site.base_url, None, Policy(5),
                         max_unpacked=limit) as stream:
            return import_opened(session, site, stream)

    assert imported(limit).added == len(exactly.split())
    session.rollback()
    statements = []
    engine = session.get_bind()

    def spy(_connection, _cursor, statement, *_):
        statements.append(statement)

    event.listen(engine, "before_cursor_execute", spy)
    try:
        with pytest.raises(ImportFormatError, match=(
                "urls.txt.gz is a gzip file that unpacks to more than 1 MB, the most this server "
                r"reads \(MAX_UNPACKED_MB\); nothing was imported")):
            imported(limit + 1)
    finally:
        event.remove(engine, "before_cursor_execute", spy)
    assert not [s for s in statements if s.lstrip().upper().startswith(("INSERT", "UPDATE",
                                                                         "COPY"))], statements


def test_a_gzip_list_past_the_limit_is_refused_before_the_rest_is_unpacked(session, tmp_path):
    # Its end is cut off: reading on past the limit to learn its size would find that first.
    site = make_site(session)
    packed = gzip.compress(f"{site.base_url}a\n".encode() + b"\n" * (16 << 20))
    path = tmp_path / "urls.txt.gz"
    path.write_bytes(packed[:-64])
    with pytest.raises(ImportFormatError, match="urls.txt.gz is a gzip file that unpacks to more "
                                                "than 1 MB"), \
            open_import(path, path.name, site.base_url, None, Policy(5),
                        max_unpacked=1 << 20) as stream:
        import_opened(session, site, stream)


@pytest.mark.parametrize("damage", ["truncated", "bad CRC"])
def test_a_small_damaged_gzip_list_is_refused_as_a_damaged_file(session, tmp_path, damage):
    site = make_site(session)
    packed = gzip.compress("".join(f"{site.base_url}p/{n}\n" for n in range(400)).encode())
    path = tmp_path / "urls.txt.gz"
    path.write_bytes(packed[:-16] if damage == "truncated"
                     else packed[:-8] + bytes(4) + packed[-4:])
    with pytest.raises(ImportFormatError, match="urls.txt.gz is not a readable gzip file"):
        import_file(session, site, path)
    session.rollback()
    assert snapshot(session, site) == []


def test_an_upload_that_unpacks_past_max_unpacked_mb_stores_nothing(app, session):
    # The known case: a few hundred KB of gzip that unpack to hundreds of MB kept a worker busy
    # for minutes. A site's URLs stay as they were.
    site = make_site(session)
    kept = make_urls(session, site, 1)
    app.config["MAX_UNPACKED_MB"] = 1
    urls = "".join(f"{site.base_url}p/{n}\n" for n in range(20_000)).encode()
    upload = gzip.compress(urls + b"\n" * (64 << 20))  # 64 MB of blank lines: 64 KB packed
    assert len(upload) < 1 << 20
    task_id = tasks.start(session, app, "import", site, payload=gzip.compress(upload))
    session.commit()  # queued on commit; here the work runs at once
    state = tasks.read(session, task_id)
    assert state["status"] == "failed", state
    assert ("the uploaded file is a gzip file that unpacks to more than 1 MB, the most this "
            "server reads (MAX_UNPACKED_MB)") in state["message"]
    with app.test_request_context(headers={"Accept-Language": "ja"}):  # as the page says it
        assert render(state["said"][0]).startswith(
            "アップロードされたファイルは、展開すると 1 MB を超える gzip ファイルです。")
    session.expire_all()
    assert [loc for loc, *_ in snapshot(session, site)] == kept



def test_a_row_of_a_thousand_images_with_long_urls_is_read(session, tmp_path):
    # The most a URL may have (§4): their cell was longer than the csv module's field limit
    # (131,072 characters), which refused the whole file without naming a line.
    site = make_site(session)
    images = [f"{site.base_url}images/{'p' * 100}/{n:04}.jpg" for n in range(1000)]
    assert len("\n".join(images)) > 131_072
    path = tmp_path / "urls.csv"
    path.write_text(f'loc,images\n{site.base_url}a,"{chr(10).join(images)}"\n')
    report = import_file(session, site, path)
    assert (report.added, report.rejected) == (1, 0), report.rejections
    stored = session.scalars(select(UrlImage.loc).order_by(UrlImage.position)).all()
    assert stored == images


# 3. Files saved in the encodings of Japanese spreadsheets

JAPANESE_CSV = "loc,lastmod\n{b}ソフト/表示,2026-01-01\n{b}商品/①番,2026-01-02\n"


@pytest.mark.parametrize(("choice", "codec"), [("shift_jis", "cp932"), ("euc-jp", "euc_jp"),
                                               ("utf-8", "utf-8-sig")])
def test_a_csv_of_japanese_paths_is_read_in_the_encoding_chosen(session, tmp_path, choice, codec):
    # ソ and 表 end in the byte of a backslash in Shift_JIS; ① is a Windows (cp932) character.
    # The file's encoding is not the site's: its URLs are percent-encoded in UTF-8.
    site = japanese_site(session)
    content = JAPANESE_CSV if codec != "euc_jp" else JAPANESE_CSV.replace("①", "一")
    path = tmp_path / "urls.csv"
    path.write_bytes(content.format(b=site.base_url).encode(codec))
    report = import_file(session, site, path, encoding=choice)
    assert (report.added, report.rejected) == (2, 0), report.rejections
    expected = [check_url(site, line.split(",")[0]).loc
                for line in content.format(b=site.base_url).splitlines()[1:]]
    assert sorted(loc for loc, *_ in snapshot(session, site)) == sorted(expected)


@pytest.mark.parametrize(("codec", "chosen", "says"), [
    ("cp932", "utf-8", ("line 2 of the file is not UTF-8 text: the file looks like Shift_JIS. "
                        "Choose the encoding shift_jis")),
    ("euc_jp", "utf-8", ("line 2 of the file is not UTF-8 text: the file looks like EUC-JP. "
                         "Choose the encoding euc-jp")),
    ("utf-8", "euc-jp", "line 2 of the file is not EUC-JP text: the file looks like UTF-8."),
])
def test_a_file_in_another_encoding_is_refused_naming_the_line_and_the_encoding_to_choose(
        session, tmp_path, codec, chosen, says):
    site = japanese_site(session)
    path = tmp_path / "urls.csv"
    path.write_bytes(f"loc\n{site.base_url}ソフト/表示/ページ\n".encode(codec))
    with pytest.raises(ImportFormatError) as refused:
        import_file(session, site, path, encoding=chosen)
    assert says in str(refused.value) and "codec" not in str(refused.value)
    session.rollback()
    assert snapshot(session, site) == []


def test_a_utf8_file_with_a_byte_order_mark_is_utf8_whatever_was_chosen(session, tmp_path):
    site = japanese_site(session)
    path = tmp_path / "urls.csv"
    path.write_bytes(f"loc\n{site.base_url}ソフト\n".encode("utf-8-sig"))
    assert import_file(session, site, path, encoding="shift_jis").added == 1
    assert snapshot(session, site)[0][0] == check_url(site, f"{site.base_url}ソフト").loc


def test_a_gzip_compressed_shift_jis_list_is_read_after_decompression(session, tmp_path):
    site = japanese_site(session)
    path = tmp_path / "urls.txt.gz"
    path.write_bytes(gzip.compress(f"{site.base_url}表示\n".encode("cp932")))
    assert import_file(session, site, path, encoding="shift_jis").added == 1


def test_a_bad_upload_is_logged_in_one_line_at_info(app, session, caplog):
    site = japanese_site(session)
    upload = f"loc\n{site.base_url}ソフト\n".encode("cp932")
    with caplog.at_level(logging.DEBUG, logger="webapp.tasks.work"):
        task_id = tasks.start(session, app, "import", site, payload=gzip.compress(upload))
        session.commit()  # queued on commit; here the work runs at once
        state = tasks.read(session, task_id)
    assert state["status"] == "failed" and "line 2 of the file is not UTF-8" in state["message"]
    [record] = [r for r in caplog.records if r.name == "webapp.tasks.work"]
    assert record.levelno == logging.INFO and record.exc_info is None
    assert "\n" not in record.getMessage() and "line 2" in record.getMessage()


def test_a_csv_with_images_but_no_titles_keeps_the_stored_titles_of_the_same_images(session,
                                                                                     tmp_path):
    site = site_with_a_titled_image(session)
    path = tmp_path / "urls.csv"
    path.write_text(f"loc,images\n{site.base_url}a,{site.base_url}a.jpg {site.base_url}b.jpg\n",
                    encoding="utf-8")
    assert import_file(session, site, path).updated == 1
    assert snapshot(session, site)[0][4] == [(f"{site.base_url}a.jpg", "Front", "A caption"),
                                             (f"{site.base_url}b.jpg", None, None)]
