"""The importer's own machinery: chunking, line numbers, the worker process, upsert outcomes."""

from __future__ import annotations

import io
import re
import tracemalloc

import pytest
from sqlalchemy import select

from tests.builders import make_site
from webapp.models import Url
from webapp.said import render
from webapp.urls import importing
from webapp.urls.importing import ImportFormatError, import_urls, read_header, text_chunks

SHOP = "https://shop.example.com/"


def chunks_of(text: str, size: int) -> list[tuple[int, str]]:
    stream = io.StringIO(text)
    columns, first_line, first = read_header(stream)
    return list(text_chunks(stream, first_line, first, quoted=bool(columns), size=size))


def test_chunks_hold_whole_lines_and_know_their_first_line_number():
    text = "loc\n" + "".join(f"{SHOP}{n}\n" for n in range(50))
    chunks = chunks_of(text, size=100)
    assert len(chunks) > 5
    assert "".join(part for _, part in chunks) == text.split("\n", 1)[1]
    for first_line, part in chunks:
        assert part.endswith("\n")
        assert part.split("\n", 1)[0] == f"{SHOP}{first_line - 2}"


def test_a_quoted_field_with_a_line_break_is_never_cut():
    rows = [f'{SHOP}{n},"2024-01-0{n % 9 + 1}\n"' if n % 3 == 0 else f"{SHOP}{n},2024-01-01"
            for n in range(40)]
    text = "loc,lastmod\n" + "\n".join(rows) + "\n"
    for _, part in chunks_of(text, size=64):
        assert part.count('"') % 2 == 0


def test_a_plain_list_with_quotes_in_urls_is_chunked_by_lines():
    text = "".join(f'{SHOP}say-"hi"-{n}\n' for n in range(3)) + f'{SHOP}odd"\n' * 20
    chunks = chunks_of(text, size=80)
    assert len(chunks) > 3
    assert "".join(part for _, part in chunks) == text


@pytest.mark.parametrize(("text", "says"), [
    (f"{SHOP}a\n{SHOP}b" + "c" * 5000 + f"\n{SHOP}d\n", ("line 2 runs on for more than 1,000 "
     "characters without a line break, longer than any row; nothing was imported")),
    (f"loc,lastmod\n{SHOP}a,2024-01-01\n{SHOP}b,\"" + "2024\n" * 1000 + f"\n{SHOP}c,\n",
     ("line 3 runs on for more than 1,000 characters without a line break outside a quoted "
      "field")),
    ("\n\n" + "x" * 5000 + "\n", "line 3 runs on for more than 1,000 characters"),
], ids=["list", "csv-open-quote", "first-line"])
def test_a_row_with_no_end_is_refused_instead_of_held_whole(session, monkeypatch, text, says):
    # A file of one endless line was held whole in memory and rescanned at every chunk: 128 MB
    # of one line took 10.7 s and 340 MB, growing with the square of the line.
    monkeypatch.setattr(importing, "MAX_ROW_CHARS", 1000)
    site = make_site(session)
    with pytest.raises(ImportFormatError, match=re.escape(says)):
        import_urls(session, site, io.StringIO(text), chunk_chars=200)
    session.rollback()
    assert session.scalars(select(Url.loc).where(Url.site_id == site.id)).all() == []


def test_a_row_with_no_end_is_named_in_the_readers_language(app):
    refused = importing._runs_on(7, quoted=False)
    assert str(refused).startswith("line 7 runs on for more than 8,388,608 characters")
    with app.test_request_context(headers={"Accept-Language": "ja"}):
        assert render(refused.said_line()).startswith(
            "7 行目から、改行がないまま 8,388,608 文字を超えています。")


def test_a_row_as_long_as_the_longest_allowed_is_read(session, monkeypatch):
    monkeypatch.setattr(importing, "MAX_ROW_CHARS", 1000)
    site = make_site(session)
    long = f"{SHOP}{'p' * (1000 - len(SHOP) - 1)}\n"
    assert len(long) == 1000
    report = import_urls(session, site, io.StringIO(f"{SHOP}a\n" + long * 2), chunk_chars=200)
    assert (report.added, report.duplicates, report.rejected) == (2, 1, 0), report.rejections


def test_a_quote_left_open_is_scanned_without_memory_for_each_character():
    # The field's pattern backtracked: a record kept for each character, 2 GB for 16 million,
    # again at every chunk while the row was held back.
    text = f'{SHOP}a,2024-01-01\n{SHOP}b,"' + "x" * (2 << 20)
    tracemalloc.start()
    try:
        cut = importing._cut(text, quoted=True)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert cut == text.index("\n") + 1
    assert peak < 1 << 20, f"{peak:,} bytes"


@pytest.mark.parametrize("parallel", [False, True], ids=["inline", "worker-process"])
def test_rejections_carry_physical_line_numbers_across_chunks(session, parallel):
    site = make_site(session)
    lines = ["loc,lastmod"]
    for n in range(60):
        lines.append(f"{SHOP}p{n},{'not-a-date' if n % 13 == 0 else '2024-05-01'}")
    lines.insert(20, "")  # blank lines count as lines
    report = import_urls(session, site, io.StringIO("\n".join(lines) + "\n"), parallel=parallel,
                         chunk_chars=200)
    session.commit()
    expected = [number for number, text in enumerate(lines, start=1) if "not-a-date" in text]
    assert [line for line, _ in report.rejections] == expected
    assert (report.added, report.rejected) == (60 - len(expected), len(expected))


def test_worker_process_and_inline_store_the_same_rows(app, session):
    text = "loc,lastmod,changefreq,priority\n" + "".join(
        f"{SHOP}サイトマップ/{n}?a=1&b='{n}',2024-0{n % 9 + 1},{'daily' if n % 2 else ''},0.{n % 10}\n"
        for n in range(300))
    stored = []
    for parallel in (False, True):
        site = make_site(session, name=f"Shop {parallel}", sitemap_url=f"{SHOP}map-{parallel}.xml")
        report = import_urls(session, site, io.StringIO(text), parallel=parallel)
        session.commit()
        assert report.summary() == "added 300, updated 0, unchanged 0, rejected 0"
        stored.append(session.execute(
            select(Url.loc, Url.lastmod, Url.changefreq, Url.priority)
            .where(Url.site_id == site.id).order_by(Url.id)).all())
    assert stored[0] == stored[1]
    assert stored[0][1] == (f"{SHOP}%E3%82%B5%E3%82%A4%E3%83%88%E3%83%9E%E3%83%83%E3%83%97/1?a=1&b='1'",
                            "2024-02-01", "daily", 0.1)


def test_absent_columns_keep_stored_values_and_deleted_urls_come_back(session):
    site = make_site(session)
    import_urls(session, site, io.StringIO(f"loc,lastmod,priority\n{SHOP}a,2024-01-01,0.9\n"))
    session.commit()
    session.execute(Url.__table__.update().values(deleted_at=Url.created_at))
    session.commit()

    report = import_urls(session, site, io.StringIO(f"loc,lastmod\n{SHOP}a,2024-02-02\n"))
    session.commit()

    assert report.summary() == "added 1, updated 0, unchanged 0, rejected 0"
    url = session.scalars(select(Url)).one()
    session.refresh(url)
    assert (url.lastmod, url.priority, url.deleted_at) == ("2024-02-02", 0.9, None)


def test_a_repeated_loc_keeps_the_last_line_and_is_reported(session):
    site = make_site(session)
    report = import_urls(session, site, io.StringIO(
        f"loc,priority\n{SHOP}a,0.1\n{SHOP}b,0.2\n{SHOP}a,0.3\n"))
    session.commit()
    assert report.duplicates == 1 and report.added == 2
    assert "1 line repeated a loc" in report.summary()
    assert session.scalar(select(Url.priority).where(Url.loc == f"{SHOP}a")) == 0.3


def test_a_header_with_an_unknown_column_stores_nothing(session):
    site = make_site(session)
    with pytest.raises(ImportFormatError, match="unknown or repeated column 'title'"):
        import_urls(session, site, io.StringIO(f"loc,title\n{SHOP}a,Hello\n"))
    session.rollback()
    assert session.scalars(select(Url)).all() == []


def test_a_stray_quote_inside_a_field_neither_hangs_nor_swallows_the_file(session):
    rows = [f'{SHOP}tv/5"-screen,2024-01-01'] + [f"{SHOP}p{n},2024-01-01" for n in range(3000)]
    text = "loc,lastmod\n" + "\n".join(rows) + "\n"
    assert len(chunks_of(text, size=4096)) > 10
    site = make_site(session)
    report = import_urls(session, site, io.StringIO(text), chunk_chars=4096)
    assert report.summary() == "added 3001, updated 0, unchanged 0, rejected 0"
    assert session.scalar(select(Url.loc).order_by(Url.id)) == f"{SHOP}tv/5%22-screen"


@pytest.mark.parametrize("text, message", [
    (f"url,lastmod\n{SHOP}a,2024-01-01\n", "no header line naming a loc column"),
    (f"{SHOP}b,2024-01-01,daily,0.5\n", "looks like CSV"),
])
def test_csv_without_a_loc_header_is_refused_rather_than_stored_as_urls(session, text, message):
    site = make_site(session)
    with pytest.raises(ImportFormatError, match=message):
        import_urls(session, site, io.StringIO(text))


def test_a_plain_url_with_a_comma_is_still_a_url(session):
    site = make_site(session)
    report = import_urls(session, site, io.StringIO(f"{SHOP}a,b\n{SHOP}c\n"))
    assert report.added == 2
    assert session.scalars(select(Url.loc).order_by(Url.id)).all() == [f"{SHOP}a,b", f"{SHOP}c"]


def test_blank_lines_before_the_header_are_skipped_and_counted(session):
    site = make_site(session)
    report = import_urls(session, site, io.StringIO(f"\n\nloc,priority\n{SHOP}a,2\n"))
    assert report.english_rejections() == [(4, "priority '2': must be from 0.0 to 1.0 (0.5 is the default)")]


def test_only_line_feeds_end_lines_in_a_plain_list(session):
    site = make_site(session)
    report = import_urls(session, site, io.StringIO(f"{SHOP}x\u0085y\n{SHOP}ok\nnot-a-url\n"))
    session.commit()
    assert [line for line, _ in report.rejections] == [3]
    assert session.scalars(select(Url.loc).order_by(Url.id)).all() == [
        f"{SHOP}x%C2%85y", f"{SHOP}ok"]


def test_a_row_spanning_lines_is_reported_at_its_first_line(session):
    site = make_site(session)
    report = import_urls(session, site, io.StringIO(
        f'loc,lastmod\n{SHOP}a,2024-01-01\n"{SHOP}b\nc",2024-01-01\n{SHOP}d,bad\n'))
    assert [line for line, _ in report.rejections] == [3, 5]


@pytest.mark.parametrize("chunk_chars", [100, 1 << 20])
def test_repeated_locs_count_the_same_whatever_the_chunking(session, chunk_chars):
    site = make_site(session)
    rows = [f"{SHOP}p{n % 20},0.{n // 20}" for n in range(30)]  # p0-p9 again, now with 0.1
    report = import_urls(session, site, io.StringIO("loc,priority\n" + "\n".join(rows) + "\n"),
                         chunk_chars=chunk_chars)
    session.commit()
    assert (report.added, report.duplicates, report.updated) == (20, 10, 0)
    assert session.scalar(select(Url.priority).where(Url.loc == f"{SHOP}p0")) == 0.1
    assert session.scalar(select(Url.priority).where(Url.loc == f"{SHOP}p15")) == 0.0


@pytest.mark.parametrize("parallel", [False, True], ids=["inline", "worker-process"])
@pytest.mark.parametrize("header", ["loc,lastmod\n", ""], ids=["csv", "plain-list"])
def test_a_fragment_is_removed_and_noted_on_its_line_and_the_page_kept_once(session, parallel,
                                                                            header):
    site = make_site(session)
    cell = ",2024-05-01" if header else ""
    text = header + f"{SHOP}a#top{cell}\n{SHOP}b{cell}\n{SHOP}a#bottom{cell}\n"
    report = import_urls(session, site, io.StringIO(text), parallel=parallel)
    session.commit()
    first = 2 if header else 1
    assert session.scalars(select(Url.loc).order_by(Url.loc)).all() == [f"{SHOP}a", f"{SHOP}b"]
    assert [line for line, _ in report.notes] == [first, first + 2]
    assert "the fragment #top was removed" in report.english_notes()[0][1]
    assert "the fragment #bottom was removed" in report.english_notes()[1][1]
    assert (report.added, report.rejected, report.noted) == (2, 0, 2)
    assert "2 kept with a note" in report.summary()
