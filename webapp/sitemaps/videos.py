"""A URL's videos written as `video:video` elements, and read for that from the database.

The children follow the order of sitemap-video.xsd's sequence (thumbnail_loc, title,
description, content_loc, player_loc, duration, expiration_date, rating, view_count,
publication_date, tag, family_friendly, restriction, requires_subscription, uploader, platform,
live); the values are stored normalised (webapp.urls.videos), so they are written as they are.
"""

from __future__ import annotations

from collections.abc import Iterable

from sqlalchemy import Select, select

from webapp.models import Url, UrlVideo
from webapp.protocol import escape
from webapp.urls.videos import VIDEO_FIELDS, format_rating

VIDEO_COLUMNS = tuple(getattr(UrlVideo, name) for name in VIDEO_FIELDS)
_YES_NO = {True: "yes", False: "no"}


def _tag(name: str, value: object) -> str:
    return f"<video:{name}>{value}</video:{name}>"


def _yes_no(name: str, value: bool | None) -> str:
    return "" if value is None else f"<video:{name}>{_YES_NO[value]}</video:{name}>"


def video_fragment(thumbnail_loc: str, title: str, description: str, content_loc: str | None,
                   player_loc: str | None, duration: int | None, expiration_date: str | None,
                   rating: float | None, view_count: int | None, publication_date: str | None,
                   family_friendly: bool | None, restriction_relationship: str | None,
                   restriction_countries: str | None, platform_relationship: str | None,
                   platforms: str | None, requires_subscription: bool | None,
                   uploader: str | None, uploader_info: str | None, live: bool | None,
                   tags: Iterable[str] | None) -> str:
    """One `video:video` element, its arguments in VIDEO_FIELDS' order (a row's columns)."""
    parts = ["<video:video>", _tag("thumbnail_loc", escape(thumbnail_loc)),
             _tag("title", escape(title)), _tag("description", escape(description))]
    if content_loc:
        parts.append(_tag("content_loc", escape(content_loc)))
    if player_loc:
        parts.append(_tag("player_loc", escape(player_loc)))
    if duration is not None:
        parts.append(_tag("duration", duration))
    if expiration_date:
        parts.append(_tag("expiration_date", expiration_date))
    if rating is not None:
        parts.append(_tag("rating", format_rating(rating)))
    if view_count is not None:
        parts.append(_tag("view_count", view_count))
    if publication_date:
        parts.append(_tag("publication_date", publication_date))
    parts.extend(_tag("tag", escape(tag)) for tag in tags or ())
    parts.append(_yes_no("family_friendly", family_friendly))
    if restriction_relationship and restriction_countries:
        parts.append(f'<video:restriction relationship="{restriction_relationship}">'
                     f"{restriction_countries}</video:restriction>")
    parts.append(_yes_no("requires_subscription", requires_subscription))
    if uploader:
        info = f' info="{escape(uploader_info)}"' if uploader_info else ""
        parts.append(f"<video:uploader{info}>{escape(uploader)}</video:uploader>")
    if platform_relationship and platforms:
        parts.append(f'<video:platform relationship="{platform_relationship}">{platforms}'
                     "</video:platform>")
    parts.append(_yes_no("live", live))
    parts.append("</video:video>")
    return "".join(parts)


def video_rows(*conditions) -> Select:
    """(url id, the video's columns...) of the live URLs the conditions choose, in the URLs'
    id order and each URL's video order: `Url.site_id` is the first column, for batches."""
    return (select(Url.site_id, UrlVideo.url_id, *VIDEO_COLUMNS)
            .join(Url, Url.id == UrlVideo.url_id).where(*conditions)
            .order_by(UrlVideo.url_id, UrlVideo.position, UrlVideo.id))
