"""Reading a `video:video` element of an existing sitemap into the fields `normalize_video`
checks: what the app publishes of a video is kept; the rest (a category, a gallery, prices, a
TV show, ids, the player's allow_embed and autoplay, which Google no longer reads) is counted
by name as not kept, as is a second element where a video has one."""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable

from webapp.protocol import VIDEO_NS

VIDEO = f"{{{VIDEO_NS}}}"
LINE = "line"  # not a field of a video: where it is in the file
TEXTS = ("thumbnail_loc", "title", "description", "content_loc", "player_loc", "duration",
         "expiration_date", "rating", "view_count", "publication_date", "family_friendly",
         "requires_subscription", "live")
# element: (the field its text goes to, the attribute kept, the field the attribute goes to)
WITH_ATTRIBUTE = {"restriction": ("restriction_countries", "relationship",
                                  "restriction_relationship"),
                  "platform": ("platforms", "relationship", "platform_relationship"),
                  "uploader": ("uploader", "info", "uploader_info")}


def read_video(element, name_of: Callable[[object], str], not_kept: Counter) -> dict[str, object]:
    """The fields of a `video:video` element as written (text stripped; tags a list), and
    its line under LINE; `name_of(element)` names what is counted in `not_kept`."""
    video: dict[str, object] = {LINE: element.sourceline or 0}
    tags: list[str] = []
    for part in element:
        if not isinstance(part.tag, str):  # a processing instruction
            continue
        local = part.tag[len(VIDEO):] if part.tag.startswith(VIDEO) else None
        text = (part.text or "").strip()
        if local == "tag":
            tags.append(text)
            continue
        if local in TEXTS or local in WITH_ATTRIBUTE:
            field, attribute, attribute_field = WITH_ATTRIBUTE.get(local, (local, None, None))
            if field in video:
                not_kept[f"{name_of(part)} (a second one)"] += 1
                continue
            video[field] = text
            if attribute is not None and part.get(attribute) is not None:
                video[attribute_field] = part.get(attribute).strip()
            for other in sorted(set(part.attrib) - {attribute}):
                not_kept[f"{name_of(part)} {other}"] += 1
            continue
        not_kept[name_of(part)] += 1
    if tags:
        video["tags"] = tags
    return video
