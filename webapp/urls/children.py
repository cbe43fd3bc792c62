"""A URL's images, alternates and videos written for many URLs at once, in rows of their own:
what the API's upsert and a CSV import with such columns store after the URLs' own rows."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass

from sqlalchemy import delete, insert, select, update
from sqlalchemy.orm import Session

from webapp.models import Site, Url, UrlAlternate, UrlImage
from webapp.urls.by_loc import stored_by_loc
from webapp.urls.csv_rows import Image
from webapp.urls.video_store import write_videos_by_loc
from webapp.urls.videos import Video

IN_CHUNK = 500  # locs per IN (...) lookup


@dataclass(frozen=True)
class Children:
    """The images, alternates and videos to store for a loc; None leaves the stored ones as
    they are."""

    loc: str
    images: Sequence[Image] | None
    alternates: Mapping[str, str] | None
    videos: Sequence[Video] | None = None


def write_children(session: Session, site: Site, urls: Sequence[Children],
                   change_seq: Callable[[], int], keep: frozenset[str] = frozenset()) -> set[str]:
    """Replace the images and alternates that differ from what is stored (the URLs' own rows
    are written already); the locs whose images or alternates changed. `change_seq()` gives the
    change number the changed URLs carry. `keep` names what the images as given do not say
    ("title", "caption"): an image keeps the stored one of the same image URL."""
    changed: set[str] = set()
    for start in range(0, len(urls), IN_CHUNK):
        changed |= _write_some(session, site, urls[start:start + IN_CHUNK], change_seq, keep)
    videos = {url.loc: url.videos for url in urls if url.videos is not None}
    if videos:
        changed |= write_videos_by_loc(session, site, videos, change_seq)
    return changed


def _kept(given: Sequence[Image], stored: list[Image], keep: frozenset[str]) -> list[Image]:
    texts: dict[str, tuple[str | None, str | None]] = {}
    for loc, title, caption in stored:
        texts.setdefault(loc, (title, caption))
    return [(loc, texts.get(loc, (None, None))[0] if "title" in keep else title,
             texts.get(loc, (None, None))[1] if "caption" in keep else caption)
            for loc, title, caption in given]


def _write_some(session: Session, site: Site, urls: Sequence[Children],
                change_seq: Callable[[], int], keep: frozenset[str]) -> set[str]:
    ids = dict(stored_by_loc(session, site.id, [url.loc for url in urls], (Url.loc, Url.id)))
    images: dict[int, list[Image]] = defaultdict(list)
    for url_id, *image in session.execute(
            select(UrlImage.url_id, UrlImage.loc, UrlImage.title, UrlImage.caption)
            .where(UrlImage.url_id.in_(ids.values()))
            .order_by(UrlImage.url_id, UrlImage.position)):
        images[url_id].append(tuple(image))
    alternates: dict[int, dict[str, str]] = defaultdict(dict)
    for url_id, lang, href in session.execute(select(
            UrlAlternate.url_id, UrlAlternate.hreflang, UrlAlternate.href).where(
            UrlAlternate.url_id.in_(ids.values()))):
        alternates[url_id][lang] = href
    new_images, new_alternates, changed = {}, {}, set()
    for url in urls:
        url_id = ids[url.loc]
        given = url.images
        if given is not None:
            given = _kept(given, images[url_id], keep) if keep else list(given)
        if given is not None and given != images[url_id]:
            new_images[url_id] = given
            changed.add(url.loc)
        if url.alternates is not None and dict(url.alternates) != alternates[url_id]:
            new_alternates[url_id] = url.alternates
            changed.add(url.loc)
    if not changed:
        return changed
    seq = change_seq()
    # Old rows go before new ones are added: (url, hreflang) is unique.
    for model, replaced, rows in (
            (UrlImage, new_images, [{"url_id": url_id, "loc": loc, "title": title,
                                     "caption": caption, "position": n}
                                    for url_id, entries in new_images.items()
                                    for n, (loc, title, caption) in enumerate(entries)]),
            (UrlAlternate, new_alternates, [{"url_id": url_id, "hreflang": lang, "href": href}
                                            for url_id, pairs in new_alternates.items()
                                            for lang, href in sorted(pairs.items())])):
        if replaced:
            session.execute(delete(model).where(model.url_id.in_(replaced)))
        if rows:
            session.execute(insert(model), rows)
    session.execute(update(Url).where(Url.id.in_([ids[loc] for loc in changed]))
                    .values(change_seq=seq).execution_options(synchronize_session=False))
    return changed
