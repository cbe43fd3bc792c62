"""The OpenAPI schemas of a URL's videos: `VideoIn` as an upsert item gives them, `Video` as
the API answers them (every field of `UrlVideo`, by name). The rules a schema cannot say (a
country code, a URL on the page's domain) answer the item's error naming the field and rule."""

from __future__ import annotations

from webapp.urls import videos


def _nullable(schema: dict) -> dict:
    return {"anyOf": [schema, {"type": "null"}]}


STRING = {"type": "string"}
RELATIONSHIP = {"type": "string", "enum": ["allow", "deny"]}
_WORDS = {"type": "string", "description": "separated by spaces"}

_COMMON = {
    "thumbnail_loc": {**STRING, "description": "the thumbnail image's URL (required)"},
    "title": {**STRING, "description": "at most 100 characters (required)"},
    "description": {**STRING, "description": "at most 2,048 characters (required)"},
    "content_loc": {**_nullable(STRING), "description": "the video file's URL; this or "
                    "player_loc is required, neither the page's own loc"},
    "player_loc": _nullable(STRING),
    "duration": {**_nullable({"type": "integer", "minimum": 1, "maximum": videos.MAX_DURATION}),
                 "description": "seconds"},
    "expiration_date": {**_nullable(STRING), "description": "W3C date or date-time"},
    "rating": _nullable({"type": "number", "minimum": 0, "maximum": videos.MAX_RATING}),
    "view_count": _nullable({"type": "integer", "minimum": 0, "maximum": videos.MAX_VIEW_COUNT}),
    "publication_date": {**_nullable(STRING), "description": "W3C date or date-time"},
    "family_friendly": _nullable({"type": "boolean"}),
    "restriction_relationship": {**_nullable(RELATIONSHIP),
                                 "description": "with restriction_countries"},
    "platform_relationship": {**_nullable(RELATIONSHIP), "description": "with platforms"},
    "requires_subscription": _nullable({"type": "boolean"}),
    "uploader": {**_nullable(STRING), "description": "at most 255 characters"},
    "uploader_info": {**_nullable(STRING), "description": "a page on the page's domain; needs "
                      "uploader"},
    "live": _nullable({"type": "boolean"}),
    "tags": {"type": "array", "items": STRING, "maxItems": videos.MAX_TAGS},
}
_IN_LISTS = {
    "restriction_countries": {**_nullable({"anyOf": [
        _WORDS, {"type": "array", "items": STRING}]}),
        "description": "ISO 3166 country codes: \"JP US\" or [\"JP\", \"US\"]"},
    "platforms": {**_nullable({"anyOf": [_WORDS, {"type": "array", "items": STRING}]}),
                  "description": f"of {', '.join(videos.PLATFORMS)}: \"web tv\" or [\"web\", \"tv\"]"},
}
_OUT_LISTS = {
    "restriction_countries": {**_nullable(_WORDS), "description": "\"JP US\""},
    "platforms": {**_nullable(_WORDS), "description": "\"web tv\""},
}

VIDEO_SCHEMAS = {
    "VideoIn": {
        "type": "object", "additionalProperties": False,
        "required": ["thumbnail_loc", "title", "description"],
        "description": "a video of the page (Google's video sitemap extension)",
        "properties": {**_COMMON, **_IN_LISTS},
    },
    "Video": {
        "type": "object", "required": [*_COMMON, *_OUT_LISTS],
        "properties": {**_COMMON, **_OUT_LISTS},
    },
}
