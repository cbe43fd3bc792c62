"""A URL's videos as JSON, the API's and `urls add --videos-json`: a list of objects with the
fields of `UrlVideo` (videos.VIDEO_FIELDS), read and written."""

from __future__ import annotations

import json
import re
from collections.abc import Iterable

from webapp.errors import InvalidValue, rule_text
from webapp.urls.videos import Video

_VIDEO_FIELD = re.compile(r"video (\d+)(?: (\w+))?")


def check_videos_json(value: object) -> list[dict] | None:
    """The videos of an item: None when it gives none (the stored ones stay), else a list of
    objects, each checked field by field later (edit.check_url)."""
    if value is None:
        return None
    if not (isinstance(value, list) and all(isinstance(video, dict) for video in value)):
        raise InvalidValue("videos", type(value).__name__, rule_text(
            "must be a list of video objects, each with at least thumbnail_loc, title, "
            "description and content_loc or player_loc"))
    return value


def api_field(field: str) -> str:
    """`video 2 title`, as the rules name a field, as a JSON path: `videos[1].title`."""
    match = _VIDEO_FIELD.fullmatch(field)
    if match is None:
        return field
    path = f"videos[{int(match[1]) - 1}]"
    return f"{path}.{match[2]}" if match[2] else path


def videos_json(videos: Iterable) -> list[dict]:
    """Stored videos (UrlVideo rows or Video) as the API gives them: every field, by name."""
    return [(video if isinstance(video, Video) else Video.from_row(video)).as_row()
            for video in videos]


def read_videos_file(text: str, name: str = "--videos-json") -> list[dict]:
    """The videos of a JSON file (`urls add --videos-json`): a list of video objects."""
    try:
        value = json.loads(text)
    except ValueError as exc:
        raise InvalidValue(name, text[:40], rule_text(
            "must be JSON: a list of video objects (%(reason)s)", reason=str(exc))) from None
    except RecursionError:  # arrays or objects nested deeper than the parser goes
        raise InvalidValue(name, text[:40], rule_text(
            "must be a list of video objects, not JSON nested this deeply")) from None
    videos = check_videos_json(value)
    if videos is None:
        raise InvalidValue(name, "null", rule_text(
            "must be a list of video objects; [] removes the page's videos"))
    return videos
