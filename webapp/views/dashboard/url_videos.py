"""A URL's videos on its edit page: a fieldset per video with a labelled input per field, read
back from the form as typed. Works without JavaScript: "Add a video" posts the form and shows
it again with one more empty fieldset (nothing saved), a checked "Remove" drops that video when
saving, and a fieldset left wholly empty is no video."""

from __future__ import annotations

import re
from collections.abc import Mapping

from flask_babel import lazy_gettext as _l

from webapp.models import Url
from webapp.urls import videos as video_rules
from webapp.views.display import readable_url

MAX_SHOWN = 100  # fieldsets a form may post back; more is not a person typing
BOOLEANS = ("family_friendly", "requires_subscription", "live")
RELATIONSHIPS = ("restriction_relationship", "platform_relationship")
REQUIRED = ("thumbnail_loc", "title", "description", "content_loc", "player_loc")
OPTIONAL = tuple(name for name in video_rules.VIDEO_FIELDS if name not in REQUIRED)
LABELS = {
    "thumbnail_loc": _l("Thumbnail URL"), "title": _l("Title"),
    "description": _l("Description"), "content_loc": _l("Video file URL"),
    "player_loc": _l("Player URL"), "duration": _l("Duration (seconds)"),
    "expiration_date": _l("Expiration date"), "rating": _l("Rating (0.0 to 5.0)"),
    "view_count": _l("View count"), "publication_date": _l("Publication date"),
    "family_friendly": _l("Family friendly"),
    "restriction_relationship": _l("Country restriction"),
    "restriction_countries": _l("Country codes"),
    "platform_relationship": _l("Platform restriction"), "platforms": _l("Platforms"),
    "requires_subscription": _l("Requires a subscription"), "uploader": _l("Uploader"),
    "uploader_info": _l("Uploader's page URL"), "live": _l("Live stream"),
    "tags": _l("Tags"),
}
HELP = {
    "content_loc": _l("The video file's URL, or the player's below: at least one of the two"),
    "expiration_date": _l("2026-05-01 or 2026-05-01T10:00:00+09:00; empty for none"),
    "publication_date": _l("2026-05-01 or 2026-05-01T10:00:00+09:00; empty for none"),
    "restriction_countries": _l("ISO 3166 codes separated by spaces, e.g. JP US"),
    "platforms": _l("web, mobile or tv, separated by spaces"),
    "uploader_info": _l("A page on this URL's domain; needs an uploader"),
    "tags": _l("One tag per line, at most 32"),
}
_ERROR = re.compile(r"video (\d+)(?: (\w+))?")


def typed_from_url(url: Url, encoding: str) -> list[dict[str, str]]:
    """The stored videos as the form shows them: every field as text, URLs decoded (saving
    normalises them back to the same encoded URLs)."""
    return [_typed(video_rules.Video.from_row(video), encoding) for video in url.videos]


def _typed(video: video_rules.Video, encoding: str) -> dict[str, str]:
    typed = {}
    for name in video_rules.VIDEO_FIELDS:
        value = getattr(video, name)
        if name.endswith(("_loc", "_info")) and value:
            typed[name] = readable_url(value, encoding)
        elif name == "tags":
            typed[name] = "\n".join(value)
        elif isinstance(value, bool):
            typed[name] = "yes" if value else "no"
        else:
            typed[name] = "" if value is None else str(value)
    return typed


def typed_from_form(form: Mapping[str, str]) -> list[dict[str, str]]:
    """The videos as the form posted them, removed ones marked (`remove`), plus an empty one
    when the person asked to add one."""
    count = form.get("video_count", "0")
    count = min(int(count), MAX_SHOWN) if count.isascii() and count.isdigit() else 0
    videos = [{**{name: form.get(f"video-{n}-{name}", "") for name in video_rules.VIDEO_FIELDS},
               "remove": "on" if form.get(f"video-{n}-remove") else ""}
              for n in range(count)]
    if "add_video" in form and count < MAX_SHOWN:
        videos.append(blank())
    return videos


def blank() -> dict[str, str]:
    return {name: "" for name in (*video_rules.VIDEO_FIELDS, "remove")}


def to_check(typed: list[dict[str, str]]) -> tuple[list[dict], list[int]]:
    """The videos to store (for edit.check_url) and, for each, the number of its fieldset:
    removed ones and wholly empty ones are left out."""
    videos, positions = [], []
    for n, video in enumerate(typed):
        values = {name: video.get(name, "") for name in video_rules.VIDEO_FIELDS}
        if video.get("remove") or not any(value.strip() for value in values.values()):
            continue
        raw: dict[str, object] = {name: value for name, value in values.items()
                                  if value.strip() and name != "tags"}
        raw["tags"] = [tag.strip() for tag in values["tags"].splitlines() if tag.strip()]
        videos.append(raw)
        positions.append(n)
    return videos, positions


def form_key(field: str, positions: list[int]) -> str:
    """The form field an error of the rules names: `video 2 title` is the title input of the
    second video checked, whichever fieldset that is."""
    match = _ERROR.fullmatch(field)
    if match is None or not 0 < int(match[1]) <= len(positions):
        return field
    key = f"video-{positions[int(match[1]) - 1]}"
    return f"{key}-{match[2]}" if match[2] else key


def opened(video: dict[str, str], number: int, errors: Mapping[str, str]) -> bool:
    """Whether a fieldset shows its optional fields: when one holds a value or an error."""
    return any(video.get(name) or errors.get(f"video-{number}-{name}") for name in OPTIONAL)
