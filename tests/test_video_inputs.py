"""A URL's videos through every input path: CSV columns (import, export, the example file),
the JSON API (upsert, read, errors by field and rule), the CLI (`urls add --videos-json`,
`urls show`, import and export) and the dashboard's edit page (a fieldset per video)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from sqlalchemy import select

from tests.builders import make_site
from tests.test_api import api, api_as  # noqa: F401  (fixtures)
from tests.test_dashboard import as_role, post  # noqa: F401  (fixture, helper)
from webapp.models import Url, UrlVideo
from webapp.outbound import Policy
from webapp.urls import csv_chunks, import_opened, open_import
from webapp.urls.videos import Video

ROOT = Path(__file__).resolve().parent.parent
EXAMPLE = ROOT / "webapp" / "static" / "examples" / "urls-with-videos.csv"
SHOP = "https://shop.example.com/"
VIDEO = {"thumbnail_loc": f"{SHOP}thumbs/a.jpg", "title": "Making bread",
         "description": "Flour, water, salt.", "content_loc": "https://cdn.example.com/a.mp4"}


pytestmark = pytest.mark.session_outside_app_context


@pytest.fixture
def shop(session):
    return make_site(session)


def videos_of(session, loc: str) -> list[Video]:
    session.expire_all()
    url = session.scalar(select(Url).where(Url.loc == loc))
    return [Video.from_row(video) for video in url.videos]


def import_csv(session, site, path: Path):
    with open_import(path, path.name, site.base_url, None, Policy(5), "utf-8") as stream:
        report = import_opened(session, site, stream)
    session.commit()
    return report


def write_csv(tmp_path, header: str, *rows: str) -> Path:
    path = tmp_path / "urls.csv"
    path.write_text("\n".join([header, *rows]) + "\n", encoding="utf-8")
    return path


# CSV


def test_the_example_file_imports_whole_and_its_export_imports_back_the_same(session, shop,
                                                                            tmp_path):
    report = import_csv(session, shop, EXAMPLE)
    assert (report.added, report.rejected) == (2, 0), report.rejections
    soup = videos_of(session, f"{SHOP}recipes/miso-soup")
    assert [video.title for video in soup] == ["How to make miso soup", "Miso soup in 60 seconds"]
    assert soup[0].description == "Dashi, miso and tofu: the whole recipe, step by step.\nServes four."
    assert (soup[0].duration, soup[0].family_friendly, soup[0].live) == (600, True, False)
    assert (soup[0].restriction_relationship, soup[0].restriction_countries) == ("allow", "JP US")
    assert (soup[0].platform_relationship, soup[0].platforms) == ("deny", "tv")
    assert soup[0].tags == ("soup", "miso", "japanese food")
    assert (soup[1].content_loc, soup[1].player_loc) == (None, "https://www.youtube.com/embed/abc123")
    assert videos_of(session, f"{SHOP}about") == []

    exported = "".join(csv_chunks(session, shop))
    assert exported.splitlines()[0].endswith("video_live,video_tags")
    copy = make_site(session, "Copy", SHOP, sitemap_url=f"{SHOP}copy.xml")
    path = tmp_path / "export.csv"
    path.write_text(exported, encoding="utf-8", newline="")
    assert import_csv(session, copy, path).rejected == 0
    assert "".join(csv_chunks(session, copy)) == exported
    again = import_csv(session, shop, path)
    assert (again.updated, again.unchanged) == (0, 2)


def test_an_export_of_a_site_without_videos_has_no_video_columns(session, shop, tmp_path):
    import_csv(session, shop, write_csv(tmp_path, "loc", f"{SHOP}a"))
    assert "".join(csv_chunks(session, shop)).splitlines()[0] == (
        "loc,lastmod,changefreq,priority,images,image_titles,image_captions,alternates")


@pytest.mark.parametrize(("header", "cells", "message"), [
    ("video_thumbnail_locs,video_titles,video_descriptions,video_content_locs",
     '{b}t.jpg,Title,Text,{b}bad', "video_content_locs (video 1) '{b}bad': must not be the page's"),
    ("video_thumbnail_locs,video_titles,video_descriptions,video_player_locs,video_durations",
     "{b}t.jpg,Title,Text,https://p.example/x,ten", ("video_durations (video 1) 'ten': must be a "
     "whole number of seconds")),
    ("video_thumbnail_locs,video_titles,video_descriptions,video_content_locs",
     '"{b}t.jpg\n{b}u.jpg",Title,Text,https://c.example/v.mp4',
     "video_titles 'Title': has 1 lines and there are 2 videos"),
    ("video_thumbnail_locs,video_titles,video_descriptions,video_content_locs",
     '"{b}t.jpg\n{b}u.jpg","A\nB","x\n","https://c.example/v.mp4\n"', ("video_descriptions (video 2) "
     "'': is required")),
    ("video_thumbnail_locs,video_titles,video_descriptions,video_content_locs,video_restrictions",
     "{b}t.jpg,Title,Text,https://c.example/v.mp4,maybe JP", ("video_restrictions 'maybe JP': "
     "must start with allow or deny")),
    ("video_thumbnail_locs,video_titles,video_descriptions,video_content_locs,video_restrictions",
     "{b}t.jpg,Title,Text,https://c.example/v.mp4,allow XX", ("video_restrictions (video 1) 'XX': "
     "must be ISO 3166 country codes")),
    ("video_thumbnail_locs,video_titles,video_descriptions,video_content_locs,video_tags",
     "{b}t.jpg,Title,Text,https://c.example/v.mp4,\"a,,b\"", ("video_tags (video 1) '': must not "
     "be empty")),
    ("video_thumbnail_locs,video_titles,video_descriptions,video_content_locs,video_live",
     "{b}t.jpg,Title,Text,https://c.example/v.mp4,perhaps", ("video_live (video 1) 'perhaps': "
     "must be yes or no")),
    ("video_thumbnail_locs,video_titles,video_descriptions", "{b}t.jpg,Title,Text",
     "video_content_locs (video 1) '': is required when there is no player_loc"),
])
def test_a_row_with_a_bad_video_is_rejected_by_line_column_and_rule_and_the_others_stored(
        session, shop, tmp_path, header, cells, message):
    path = write_csv(tmp_path, f"loc,{header}", f"{SHOP}bad,{cells.format(b=SHOP)}",
                     f"{SHOP}good,{','.join([''] * header.count(','))},")
    report = import_csv(session, shop, path)
    [(line, reason)] = report.english_rejections()
    assert line == 2 and message.format(b=SHOP) in reason, reason
    assert report.added == 1
    assert session.scalars(select(Url.loc).where(Url.site_id == shop.id)).all() == [f"{SHOP}good"]
    assert session.scalar(select(UrlVideo.id)) is None


def test_video_columns_without_video_thumbnail_locs_stop_the_import(session, shop, tmp_path):
    path = write_csv(tmp_path, "loc,video_titles", f"{SHOP}a,Title")
    with pytest.raises(Exception, match="video_titles needs a video_thumbnail_locs column"):
        import_csv(session, shop, path)
    assert session.scalar(select(Url.id)) is None


def test_an_empty_video_cell_clears_the_videos_and_a_file_without_video_columns_keeps_them(
        session, shop, tmp_path):
    import_csv(session, shop, EXAMPLE)
    import_csv(session, shop, write_csv(tmp_path, "loc,priority",
                                        f"{SHOP}recipes/miso-soup,0.5"))
    assert len(videos_of(session, f"{SHOP}recipes/miso-soup")) == 2
    report = import_csv(session, shop, write_csv(tmp_path, "loc,video_thumbnail_locs",
                                                 f"{SHOP}recipes/miso-soup,"))
    assert report.updated == 1
    assert videos_of(session, f"{SHOP}recipes/miso-soup") == []


# JSON API


def test_the_api_stores_reads_and_replaces_videos_by_their_field_names(api, session, shop):  # noqa: F811
    full = {**VIDEO, "player_loc": "https://player.example/a", "duration": 95,
            "expiration_date": "2027-01-01", "rating": 4.5, "view_count": 12000,
            "publication_date": "2026-05-01", "family_friendly": True,
            "restriction_relationship": "deny", "restriction_countries": ["cn", "RU"],
            "platform_relationship": "allow", "platforms": "web mobile",
            "requires_subscription": False, "uploader": "Bakery",
            "uploader_info": f"{SHOP}about", "live": False, "tags": ["bread", "baking"]}
    answer = api.post("/sites/shop/urls", {"urls": [{"loc": f"{SHOP}bread", "videos": [full]}]})
    assert answer.status_code == 200 and answer.json["created"] == 1, answer.json
    [item] = api.get("/sites/shop/urls").json["items"]
    assert item["videos"] == [{**full, "restriction_countries": "CN RU"}]
    again = api.post("/sites/shop/urls", {"urls": [{"loc": f"{SHOP}bread", "videos": [full]}]})
    assert again.json["unchanged"] == 1
    seq = session.scalar(select(Url.change_seq).where(Url.loc == f"{SHOP}bread"))
    other = api.post("/sites/shop/urls", {"urls": [{"loc": f"{SHOP}bread", "videos": [VIDEO]}]})
    assert other.json["updated"] == 1
    session.expire_all()
    assert session.scalar(select(Url.change_seq).where(Url.loc == f"{SHOP}bread")) > seq
    assert [video.title for video in videos_of(session, f"{SHOP}bread")] == ["Making bread"]
    api.post("/sites/shop/urls", {"urls": [{"loc": f"{SHOP}bread", "priority": 0.5}]})
    assert len(videos_of(session, f"{SHOP}bread")) == 1  # left out: kept
    api.post("/sites/shop/urls", {"urls": [{"loc": f"{SHOP}bread", "videos": []}]})
    assert videos_of(session, f"{SHOP}bread") == []


@pytest.mark.parametrize(("videos", "field", "rule"), [
    ([{**VIDEO, "duration": 0}], "videos[0].duration", "must be a whole number of seconds"),
    ([VIDEO, {**VIDEO, "title": ""}], "videos[1].title", "is required"),
    ([{**VIDEO, "rating": "great"}], "videos[0].rating", "must be a number from 0.0 to 5.0"),
    ([{**VIDEO, "colour": "red"}], "videos[0].colour", "is not a video field"),
    ([{**VIDEO, "uploader_info": "https://elsewhere.example/me"}], "videos[0].uploader",
     "is required with uploader_info"),
    (["not an object"], "videos", "must be a list of video objects"),
    ({"title": "x"}, "videos", "must be a list of video objects"),
])
def test_a_bad_video_is_refused_naming_the_field_and_rule_and_stores_nothing_of_its_item(
        api, session, shop, videos, field, rule):  # noqa: F811
    answer = api.post("/sites/shop/urls", {"urls": [
        {"loc": f"{SHOP}bad", "priority": 0.5, "videos": videos}, {"loc": f"{SHOP}good"}]})
    assert answer.status_code == 200 and answer.json["created"] == 1, answer.json
    errors = answer.json["errors"]
    assert any(error["index"] == 0 and error["field"] == field and error["rule"].startswith(rule)
               for error in errors), errors
    assert session.scalar(select(Url.id).where(Url.loc == f"{SHOP}bad")) is None


# CLI


def test_the_cli_adds_videos_from_a_json_file_and_shows_them(runner, session, shop, tmp_path):
    path = tmp_path / "videos.json"
    path.write_text(json.dumps([{**VIDEO, "tags": ["bread"], "live": True}]), encoding="utf-8")
    result = runner.invoke(args=["urls", "add", "shop", f"{SHOP}bread", "--videos-json",
                                 str(path)])
    assert result.exit_code == 0 and f"added {SHOP}bread" in result.output, result.output
    shown = runner.invoke(args=["urls", "show", "shop", f"{SHOP}bread"])
    assert "video 1:\n  thumbnail_loc: https://shop.example.com/thumbs/a.jpg\n" in shown.output
    assert "  live: yes\n" in shown.output and "  tags: bread\n" in shown.output
    as_json = json.loads(runner.invoke(args=["urls", "show", "shop", f"{SHOP}bread",
                                             "--json"]).output)
    path.write_text(json.dumps([{**as_json["videos"][0], "title": "Rye"}]), encoding="utf-8")
    result = runner.invoke(args=["urls", "add", "shop", f"{SHOP}bread", "--videos-json",
                                 str(path)])
    assert "videos: Making bread -> Rye" in result.output, result.output
    path.write_text(json.dumps([{**VIDEO, "duration": -1}]), encoding="utf-8")
    result = runner.invoke(args=["urls", "add", "shop", f"{SHOP}bread", "--videos-json",
                                 str(path)])
    assert result.exit_code == 1 and "video 1 duration '-1': must be a whole number" in \
        result.output, result.output
    path.write_text("[{", encoding="utf-8")
    result = runner.invoke(args=["urls", "add", "shop", f"{SHOP}bread", "--videos-json",
                                 str(path)])
    assert result.exit_code == 1 and "--videos-json" in result.output and "must be JSON" in \
        result.output
    path.write_text("[" * 32_000, encoding="utf-8")  # deeper than the parser goes
    result = runner.invoke(args=["urls", "add", "shop", f"{SHOP}bread", "--videos-json",
                                 str(path)])
    assert result.exit_code == 1 and "--videos-json" in result.output and "nested this " \
        "deeply" in result.output, result.output
    assert [video.title for video in videos_of(session, f"{SHOP}bread")] == ["Rye"]


def test_the_cli_exports_videos_that_import_reads_back(runner, session, shop, tmp_path):
    assert runner.invoke(args=["urls", "import", "shop", str(EXAMPLE)]).exit_code == 0
    out = tmp_path / "out.csv"
    assert runner.invoke(args=["urls", "export", "shop", str(out)]).exit_code == 0
    make_site(session, "Copy", SHOP, sitemap_url=f"{SHOP}copy.xml")
    result = runner.invoke(args=["urls", "import", "copy", str(out)])
    assert result.exit_code == 0 and "added 2" in result.output, result.output
    copy = tmp_path / "copy.csv"
    runner.invoke(args=["urls", "export", "copy", str(copy)])
    assert copy.read_text(encoding="utf-8") == out.read_text(encoding="utf-8")


# Dashboard


def edit_page(session, shop, loc=f"{SHOP}bread") -> str:
    url = session.scalar(select(Url).where(Url.loc == loc))
    if url is None:
        url = Url(site_id=shop.id, loc=loc)
        session.add(url)
        session.commit()
    return f"/sites/shop/urls/{url.id}"


def form_of(video: dict, n: int = 0) -> dict:
    return {f"video-{n}-{name}": value for name, value in video.items()}


def test_the_edit_page_adds_a_video_fieldset_without_saving_then_saves_it(as_role, session,  # noqa: F811
                                                                          shop):
    editor, path = as_role("editor"), edit_page(session, shop)
    page = editor.get(path).text
    assert 'name="video_count" value="0"' in page and "Add a video" in page
    answer = post(editor, path, video_count="0", add_video="1")
    assert answer.status_code == 200
    assert 'id="f-video-0-thumbnail_loc"' in answer.text and 'for="f-video-0-title"' in answer.text
    assert videos_of(session, f"{SHOP}bread") == []
    answer = post(editor, path, video_count="1", **form_of(VIDEO), **{"video-0-tags": "a\nb"})
    assert answer.status_code == 302, answer.text
    [video] = videos_of(session, f"{SHOP}bread")
    assert (video.title, video.tags) == ("Making bread", ("a", "b"))
    page = editor.get(path).text
    assert 'value="Making bread"' in page and 'name="video_count" value="1"' in page


def test_the_edit_page_shows_each_error_beside_its_input_and_keeps_what_was_typed(
        as_role, session, shop):  # noqa: F811
    editor, path = as_role("editor"), edit_page(session, shop)
    answer = post(editor, path, video_count="2", **form_of(VIDEO),
                  **form_of({**VIDEO, "duration": "long", "title": "Second"}, 1))
    assert answer.status_code == 422
    assert 'id="f-video-1-duration" name="video-1-duration" type="text" value="long" ' \
           'aria-invalid="true" aria-describedby="e-video-1-duration"' in answer.text
    assert '<p class="error" id="e-video-1-duration">video 2 duration' in answer.text
    assert 'value="Second"' in answer.text and " open>" in answer.text  # its details opened
    assert videos_of(session, f"{SHOP}bread") == []


def test_the_edit_page_removes_a_checked_video_and_ignores_an_empty_fieldset(as_role, session,  # noqa: F811
                                                                            shop):
    editor, path = as_role("editor"), edit_page(session, shop)
    post(editor, path, video_count="2", **form_of(VIDEO), **form_of({**VIDEO, "title": "B"}, 1))
    assert [video.title for video in videos_of(session, f"{SHOP}bread")] == ["Making bread", "B"]
    blank = form_of({name: "" for name in VIDEO}, 2)
    answer = post(editor, path, video_count="3", **form_of(VIDEO),
                  **form_of({**VIDEO, "title": "B"}, 1), **{"video-0-remove": "on"}, **blank)
    assert answer.status_code == 302
    assert [video.title for video in videos_of(session, f"{SHOP}bread")] == ["B"]


def test_the_edit_page_speaks_japanese(as_role, session, shop):  # noqa: F811
    editor, path = as_role("editor"), edit_page(session, shop)
    answer = editor.post(path, data={"csrf_token": editor.csrf, "video_count": "1",
                                      **form_of({**VIDEO, "duration": "long"})},
                         headers={"Accept-Language": "ja"})
    assert answer.status_code == 422
    assert "動画" in answer.text and "サムネイル" in answer.text


def test_a_viewer_sees_the_videos_but_cannot_change_them(as_role, session, shop):  # noqa: F811
    editor, path = as_role("editor"), edit_page(session, shop)
    post(editor, path, video_count="1", **form_of(VIDEO))
    page = as_role("viewer").get(path).text
    assert 'value="Making bread"' in page and '<fieldset class="videos" disabled>' in page
    assert "Add a video" not in page
