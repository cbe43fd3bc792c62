"""A URL's videos written as `video:video` elements, and read for that from the database.

The children follow the order of sitemap-video.xsd's sequence (thumbnail_loc, title,
description, content_loc, player_loc, duration, expiration_date, rating, view_count,
publication_date, tag, family_friendly, restriction, requires_subscription, uploader, platform,
live); the values are stored normalised (webapp.urls.videos), so they are written as they are.
"""

from __future__ import annotations

import json
from collections.abc import Iterable

from sqlalchemy import Boolean, Integer, Select, Text, cast, select, type_coerce

from webapp.models import Url, UrlVideo
from webapp.protocol import escape
from webapp.urls import VIDEO_FIELDS, format_rating

VIDEO_COLUMNS = tuple(getattr(UrlVideo, name) for name in VIDEO_FIELDS)


def _as_read(column):
    """A column as video_rows reads it: without SQLAlchemy's work on each value, which for a
    large site's videos costs as much as writing them. Booleans come as stored (1 and 0 on
    SQLite, which _YES_NO reads as True and False) and the tags as their JSON text, decoded
    only for a video that has any (row_fragment)."""
    if column.key == "tags":
        return cast(column, Text)
    if isinstance(column.type, Boolean):
        return type_coerce(column, Integer)
    return column


VIDEO_READ_COLUMNS = tuple(_as_read(column) for column in VIDEO_COLUMNS)
# A URL's videos in the order it lists them.
VIDEO_ORDER = (UrlVideo.position, UrlVideo.id)
_YES_NO = {True: "yes", False: "no"}


def video_fragment(thumbnail_loc: str, title: str, description: str, content_loc: str | None,
                   player_loc: str | None, duration: int | None, expiration_date: str | None,
                   rating: float | None, view_count: int | None, publication_date: str | None,
                   family_friendly: bool | None, restriction_relationship: str | None,
                   restriction_countries: str | None, platform_relationship: str | None,
                   platforms: str | None, requires_subscription: bool | None,
                   uploader: str | None, uploader_info: str | None, live: bool | None,
                   tags: Iterable[str] | None) -> str:
    """One `video:video` element, its arguments in VIDEO_FIELDS' order (a row's columns)."""
    # One f-string per element, no helper calls: a tenth of a large site's URLs may carry one.
    parts = [(f"<video:video><video:thumbnail_loc>{escape(thumbnail_loc)}</video:thumbnail_loc>"
              f"<video:title>{escape(title)}</video:title>"
              f"<video:description>{escape(description)}</video:description>")]
    if content_loc:
        parts.append(f"<video:content_loc>{escape(content_loc)}</video:content_loc>")
    if player_loc:
        parts.append(f"<video:player_loc>{escape(player_loc)}</video:player_loc>")
    if duration is not None:
        parts.append(f"<video:duration>{duration}</video:duration>")
    if expiration_date:
        parts.append(f"<video:expiration_date>{expiration_date}</video:expiration_date>")
    if rating is not None:
        parts.append(f"<video:rating>{format_rating(rating)}</video:rating>")
    if view_count is not None:
        parts.append(f"<video:view_count>{view_count}</video:view_count>")
    if publication_date:
        parts.append(f"<video:publication_date>{publication_date}</video:publication_date>")
    if tags:
        parts.extend(f"<video:tag>{escape(tag)}</video:tag>" for tag in tags)
    if family_friendly is not None:
        parts.append(f"<video:family_friendly>{_YES_NO[family_friendly]}</video:family_friendly>")
    if restriction_relationship and restriction_countries:
        parts.append(f'<video:restriction relationship="{restriction_relationship}">'
                     f"{restriction_countries}</video:restriction>")
    if requires_subscription is not None:
        parts.append(f"<video:requires_subscription>{_YES_NO[requires_subscription]}"
                     "</video:requires_subscription>")
    if uploader:
        info = f' info="{escape(uploader_info)}"' if uploader_info else ""
        parts.append(f"<video:uploader{info}>{escape(uploader)}</video:uploader>")
    if platform_relationship and platforms:
        parts.append(f'<video:platform relationship="{platform_relationship}">{platforms}'
                     "</video:platform>")
    if live is not None:
        parts.append(f"<video:live>{_YES_NO[live]}</video:live>")
    parts.append("</video:video>")
    return "".join(parts)


def row_fragment(*row) -> str:
    """video_fragment of a row of video_rows' columns (after its url id and site id): the tags
    are their JSON text there."""
    tags = row[-1]
    return video_fragment(*row[:-1], None if tags is None or tags == "[]" else json.loads(tags))


def video_rows(*conditions, with_site: bool = True) -> Select:
    """([site id,] url id, the video's columns...) of the URLs the conditions choose, in the
    URLs' id order and each URL's video order; row_fragment writes the columns."""
    return (select(*([Url.site_id] if with_site else []), UrlVideo.url_id, *VIDEO_READ_COLUMNS)
            .join(Url, Url.id == UrlVideo.url_id).where(*conditions)
            .order_by(UrlVideo.url_id, *VIDEO_ORDER))


def site_video_rows(site_id: int, after_id: int | None = None,
                    upto_id: int | None = None, section: str | None = None) -> Select:
    """(url id, the video's columns...) of the site's live URLs with ids in
    (after_id, upto_id] and in `section` when given, in video_rows' order.

    Read from the videos' side, in their url_id index, each URL found by its key (as
    rows.uses does it): `site_id + 0` keeps SQLite from walking every URL of the site first
    (a million to find a few videos) and then sorting what it found."""
    conditions = [Url.site_id + 0 == site_id, Url.deleted_at.is_(None)]
    if after_id is not None:
        conditions.append(UrlVideo.url_id > after_id)
    if upto_id is not None:
        conditions.append(UrlVideo.url_id <= upto_id)
    if section is not None:
        conditions.append(Url.section == section)
    return video_rows(*conditions, with_site=False)
