"""A URL's videos in the cells of a CSV row, both ways: read (each video checked by the video
rules) and written by the export in the same form. Like csv_rows, it loads no database layer:
the worker process of a large import checks rows with it.

One column per field of a video, each cell one line per video in the same order (what a
spreadsheet shows as a cell of several lines), an empty line for a video without that field:
- `video_thumbnail_locs` gives the videos (one URL per line); every other video column needs it;
- `video_titles`, `video_descriptions`, `video_uploaders`: text; a line break inside is written
  `\\n`, a backslash `\\\\`;
- `video_content_locs`, `video_player_locs`, `video_uploader_infos`: URLs;
- `video_durations` (seconds), `video_view_counts`, `video_ratings` (0.0 to 5.0): numbers;
- `video_expiration_dates`, `video_publication_dates`: W3C dates;
- `video_family_friendly`, `video_requires_subscription`, `video_live`: yes or no;
- `video_restrictions`: `allow JP US` or `deny CN` (the relationship, then country codes);
- `video_platforms`: `allow web tv` or `deny mobile`;
- `video_tags`: the video's tags separated by commas (a comma inside a tag written `\\,`).
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence

from webapp.errors import InvalidValue, each_error, rule_text
from webapp.urls.videos import Video, format_rating, normalize_video

# column -> the Video field it holds (restrictions and platforms: two fields, see _split_pair)
TEXT_COLUMNS = {
    "video_thumbnail_locs": "thumbnail_loc", "video_titles": "title",
    "video_descriptions": "description", "video_content_locs": "content_loc",
    "video_player_locs": "player_loc", "video_durations": "duration",
    "video_expiration_dates": "expiration_date", "video_ratings": "rating",
    "video_view_counts": "view_count", "video_publication_dates": "publication_date",
    "video_family_friendly": "family_friendly",
    "video_requires_subscription": "requires_subscription", "video_uploaders": "uploader",
    "video_uploader_infos": "uploader_info", "video_live": "live",
}
PAIR_COLUMNS = {"video_restrictions": ("restriction_relationship", "restriction_countries"),
                "video_platforms": ("platform_relationship", "platforms")}
# In the order of a video's fields (the order an export writes them).
VIDEO_COLUMNS = (
    "video_thumbnail_locs", "video_titles", "video_descriptions", "video_content_locs",
    "video_player_locs", "video_durations", "video_expiration_dates", "video_ratings",
    "video_view_counts", "video_publication_dates", "video_family_friendly",
    "video_restrictions", "video_platforms", "video_requires_subscription", "video_uploaders",
    "video_uploader_infos", "video_live", "video_tags")
ANCHOR = "video_thumbnail_locs"
BOOLEANS = ("family_friendly", "requires_subscription", "live")
# The field each column's errors name, back to the column (an error names what the person wrote).
_COLUMN_OF = {field: column for column, field in TEXT_COLUMNS.items()} | {
    field: column for column, fields in PAIR_COLUMNS.items() for field in fields} | {
    "tags": "video_tags", "tag": "video_tags"}

_ESCAPED = re.compile(r"\\([\\nr,])")
_UNESCAPED = {"\\": "\\", "n": "\n", "r": "\r", ",": ","}


def _unescape(text: str) -> str:
    return _ESCAPED.sub(lambda m: _UNESCAPED[m[1]], text)


def _escape(text: str, comma: bool = False) -> str:
    text = text.replace("\\", "\\\\").replace("\n", "\\n").replace("\r", "\\r")
    return text.replace(",", "\\,") if comma else text


def _tags(line: str) -> list[str]:
    """A line of tags: split at commas not written `\\,`, each unescaped and stripped."""
    tags, current, escaped = [], [], False
    for char in line:
        if escaped:
            current.append("\\" + char)
            escaped = False
        elif char == "\\":
            escaped = True
        elif char == ",":
            tags.append("".join(current))
            current = []
        else:
            current.append(char)
    if escaped:
        current.append("\\")
    tags.append("".join(current))
    # An empty tag (`a,,b`) is kept, for the rules to refuse: nothing is dropped unsaid.
    return [_unescape(tag).strip() for tag in tags] if line.strip() else []


def _lines(column: str, cell: str, count: int) -> list[str]:
    """One line per video, or an empty cell for none of them."""
    if not cell.strip():
        return [""] * count
    lines = [line.removesuffix("\r") for line in cell.split("\n")]
    if len(lines) != count:
        raise InvalidValue(column, cell, rule_text(
            "has %(lines)s lines and there are %(videos)s videos: write one line per video, "
            "an empty line for a video without one", lines=len(lines), videos=count))
    return lines


def _split_pair(column: str, line: str) -> tuple[str | None, str | None]:
    """`allow JP US` as (relationship, the rest); an empty line as none."""
    relationship, _, rest = line.strip().partition(" ")
    if not relationship:
        return None, None
    if relationship.lower() not in ("allow", "deny"):
        raise InvalidValue(column, line, rule_text(
            "must start with allow or deny, then the values separated by spaces, e.g. "
            "allow JP US"))
    return relationship.lower(), rest.strip()


def read_videos(loc: str, cells: Mapping[str, str], encoding: str) -> tuple[Video, ...] | None:
    """The videos a row's video cells give, each checked by the video rules, or InvalidValue
    naming the column (and the video, counted from 1); None when the row has no video column."""
    given = {name: cell for name, cell in cells.items() if name in VIDEO_COLUMNS}
    if not given:
        return None
    thumbnails = given.get(ANCHOR, "").split()
    raws: list[dict[str, object]] = [{"thumbnail_loc": thumbnail} for thumbnail in thumbnails]
    for column, cell in given.items():
        if column == ANCHOR:
            continue
        for raw, line in zip(raws, _lines(column, cell, len(raws))):
            if column == "video_tags":
                raw["tags"] = _tags(line)
            elif column in PAIR_COLUMNS:
                relationship, values = _split_pair(column, line)
                names = PAIR_COLUMNS[column]
                raw[names[0]], raw[names[1]] = relationship, values
            else:
                raw[TEXT_COLUMNS[column]] = _unescape(line) if line.strip() else None
    videos = []
    for number, raw in enumerate(raws, start=1):
        try:
            videos.append(normalize_video(raw, loc, encoding, field="video"))
        except InvalidValue as exc:
            error = each_error(exc)[0]
            column = _COLUMN_OF.get(error.field.rpartition(" ")[2], error.field)
            raise InvalidValue(f"{column} (video {number})", error.value, error.said) from None
    return tuple(videos)


def _yes_no(value: bool | None) -> str:
    return "" if value is None else ("yes" if value else "no")


def _cell(lines: list[str]) -> str:
    return "\n".join(lines) if any(lines) else ""


def export_cells(videos: Sequence[Video]) -> list[str]:
    """The cells of a URL's videos in the order of VIDEO_COLUMNS, as read_videos reads them."""
    return [_cell([_line(column, video) for video in videos]) for column in VIDEO_COLUMNS]


def _line(column: str, video: Video) -> str:
    """A video's line of a column."""
    if column == "video_tags":
        return ", ".join(_escape(tag, comma=True) for tag in video.tags)
    if column in PAIR_COLUMNS:
        relationship, listed = (getattr(video, name) for name in PAIR_COLUMNS[column])
        return f"{relationship} {listed}" if relationship else ""
    name = TEXT_COLUMNS[column]
    value = getattr(video, name)
    if value is None:
        return ""
    if name in BOOLEANS:
        return _yes_no(value)
    return format_rating(value) if name == "rating" else _escape(str(value))


def without_anchor(header: Sequence[str]) -> str | None:
    """A video column of the header when it has no video_thumbnail_locs, which says the videos."""
    others = [name for name in header if name in VIDEO_COLUMNS and name != ANCHOR]
    return others[0] if others and ANCHOR not in header else None
