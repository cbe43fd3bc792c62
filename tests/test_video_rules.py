"""A video's values by Google's rules: normalised, or refused naming the field and the rule."""

from __future__ import annotations

import pytest

from webapp.errors import InvalidValue, each_error
from webapp.urls.videos import Video, format_rating, normalize_video

PAGE = "https://shop.example.com/watch/1"
MINIMAL = {"thumbnail_loc": "https://shop.example.com/thumbs/1.jpg", "title": "Grilling",
           "description": "Steaks, every time", "content_loc": "https://cdn.example.net/1.mp4"}


def refusal(raw, field="video"):
    with pytest.raises(InvalidValue) as caught:
        normalize_video(raw, PAGE, field=field)
    return {error.field: error.rule for error in each_error(caught.value)}


def test_a_video_with_every_field_is_normalised():
    video = normalize_video({
        **MINIMAL, "player_loc": "https://shop.example.com/player?v=1#start",
        "duration": "600", "expiration_date": "2027-11-05T19:20:30+08:00", "rating": "4.2",
        "view_count": 12345, "publication_date": "2026-11-05", "family_friendly": "Yes",
        "restriction_relationship": "Allow", "restriction_countries": "ie gb, US ca",
        "platform_relationship": "deny", "platforms": ["tv", "mobile"],
        "requires_subscription": False, "uploader": " GrillyMcGrillerson ",
        "uploader_info": "https://www.shop.example.com/users/grilly", "live": "no",
        "tags": ["steak", "meat"],
    }, PAGE)
    assert video == Video(
        "https://shop.example.com/thumbs/1.jpg", "Grilling", "Steaks, every time",
        "https://cdn.example.net/1.mp4", "https://shop.example.com/player?v=1", 600,
        "2027-11-05T11:20:30+00:00", 4.2, 12345, "2026-11-05", True, "allow", "IE GB US CA",
        "deny", "tv mobile", False, "GrillyMcGrillerson",
        "https://www.shop.example.com/users/grilly", False, ("steak", "meat"))


def test_the_fields_named_carry_the_given_name():
    assert refusal({**MINIMAL, "duration": 0}, field="video 2") == {
        "video 2 duration": "must be a whole number of seconds from 1 to 28800 (8 hours)"}


TOO_LONG = "x" * 101
NO_FILE = ("is required when there is no player_loc: a video needs the URL of its file "
           "(content_loc) or of its player (player_loc)")
ITSELF = "must not be the page's own URL (the loc): give the video file or the player"
SECONDS = "must be a whole number of seconds from 1 to 28800 (8 hours)"
COUNTRY = "must be ISO 3166 country codes (two letters, e.g. JP US GB), separated by spaces"

RULES = [
    ({"title": None}, "video title", "is required"),
    ({"title": "   "}, "video title", "is required"),
    ({"thumbnail_loc": ""}, "video thumbnail_loc", "is required"),
    ({"description": None}, "video description", "is required"),
    ({"thumbnail_loc": "thumbs/1.jpg"}, "video thumbnail_loc", None),
    ({"title": TOO_LONG}, "video title", "is longer than 100 characters"),
    ({"description": "d" * 2049}, "video description", "is longer than 2048 characters"),
    ({"title": "bell\x07"}, "video title", "contains a control character that XML cannot carry"),
    ({"title": 7}, "video title", "must be text"),
    ({"content_loc": None}, "video content_loc", NO_FILE),
    ({"content_loc": PAGE}, "video content_loc", ITSELF),
    ({"player_loc": PAGE + "#t"}, "video player_loc", ITSELF),
    ({"duration": 0}, "video duration", SECONDS),
    ({"duration": 28801}, "video duration", SECONDS),
    ({"duration": "1.5"}, "video duration", SECONDS),
    ({"duration": True}, "video duration", SECONDS),
    ({"rating": "5.1"}, "video rating", "must be a number from 0.0 to 5.0"),
    ({"rating": -0.5}, "video rating", "must be a number from 0.0 to 5.0"),
    ({"rating": float("nan")}, "video rating", "must be a number from 0.0 to 5.0"),
    ({"rating": "four"}, "video rating", "must be a number from 0.0 to 5.0"),
    ({"view_count": -1}, "video view_count", "must be a whole number from 0"),
    ({"view_count": "1e3"}, "video view_count", "must be a whole number from 0"),
    ({"expiration_date": "next week"}, "video expiration_date", None),
    ({"publication_date": "2026-02-30"}, "video publication_date",
     "is not a real date and time (month 01-12, a day that exists, hour 00-23)"),
    ({"family_friendly": "maybe"}, "video family_friendly", "must be yes or no"),
    ({"requires_subscription": 1}, "video requires_subscription", "must be yes or no"),
    ({"live": "y"}, "video live", "must be yes or no"),
    ({"restriction_relationship": "block", "restriction_countries": "JP"},
     "video restriction_relationship", "must be allow or deny"),
    ({"restriction_relationship": "allow", "restriction_countries": "JP XX"},
     "video restriction_countries", COUNTRY),
    ({"restriction_relationship": "allow", "restriction_countries": "JPN"},
     "video restriction_countries", COUNTRY),
    ({"restriction_countries": "JP"}, "video restriction_relationship",
     "is required with restriction_countries: allow or deny"),
    ({"restriction_relationship": "deny"}, "video restriction_countries",
     "is required with restriction_relationship"),
    ({"platform_relationship": "allow", "platforms": "web desktop"}, "video platforms",
     "must be one or more of web, mobile, tv, separated by spaces"),
    ({"platforms": "web"}, "video platform_relationship",
     "is required with platforms: allow or deny"),
    ({"platform_relationship": "allow"}, "video platforms", "is required with platform_relationship"),
    ({"uploader": "u" * 256}, "video uploader", "is longer than 255 characters"),
    ({"uploader_info": "https://shop.example.com/u/1"}, "video uploader",
     "is required with uploader_info: the info page is the uploader's"),
    ({"uploader": "me", "uploader_info": "https://elsewhere.example.org/u/1"},
     "video uploader_info", "must be on the same domain as the page (shop.example.com)"),
    ({"uploader": "me", "uploader_info": "not a url"}, "video uploader_info", None),
    ({"tags": [f"t{n}" for n in range(33)]}, "video tags", "a video may have at most 32"),
    ({"tags": ["ok", "  "]}, "video tags", "must not be empty"),
    ({"tags": 3}, "video tags", "must be a list of text"),
    ({"category": "cooking"}, "video category", None),
]


@pytest.mark.parametrize(("change", "field", "rule"), RULES,
                         ids=[f"{field}-{n}" for n, (_, field, _) in enumerate(RULES)])
def test_each_rule_refuses_naming_the_field_and_the_rule(change, field, rule):
    raw = {**MINIMAL, **change}
    found = refusal({name: value for name, value in raw.items() if value is not None})
    assert field in found, found
    if rule is not None:
        assert found[field] == rule


def test_every_broken_field_is_named_at_once():
    found = refusal({"title": "t", "duration": -3, "rating": 9})
    assert set(found) == {"video thumbnail_loc", "video description", "video content_loc",
                          "video duration", "video rating"}


def test_a_player_alone_is_enough_and_text_is_trimmed_and_line_ends_made_one():
    video = normalize_video({**MINIMAL, "content_loc": "", "player_loc":
                             "https://shop.example.com/player/1", "description": " a\r\nb\rc "},
                            PAGE)
    assert (video.content_loc, video.player_loc, video.description) == (
        None, "https://shop.example.com/player/1", "a\nb\nc")


@pytest.mark.parametrize(("value", "text"), [(4.2, "4.2"), (5.0, "5.0"), (0.0, "0.0"),
                                             (1e-05, "0.00001"), (3, "3.0")])
def test_a_rating_is_written_as_a_decimal_that_reads_back_the_same(value, text):
    assert format_rating(float(value)) == text
    assert float(format_rating(float(value))) == float(value)
