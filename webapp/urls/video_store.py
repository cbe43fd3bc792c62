"""Storing and reading a URL's videos (`UrlVideo` rows): a change to them is a change of the
URL, as a change to its images is, for incremental regeneration, change tracking and the
search engines' notices; writing the same videos again changes nothing."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable, Iterable, Mapping, Sequence

from sqlalchemy import delete, insert, select, update
from sqlalchemy.orm import Session

from webapp.models import Site, Url, UrlVideo
from webapp.urls.by_loc import stored_by_loc
from webapp.urls.changes import next_change_seq
from webapp.urls.videos import VIDEO_FIELDS, Video

IN_CHUNK = 500  # url ids per IN (...) lookup
_COLUMNS = tuple(getattr(UrlVideo, name) for name in VIDEO_FIELDS)


def videos_of(session: Session, url_ids: Iterable[int]) -> dict[int, list[Video]]:
    """The stored videos of each URL, in order; a URL without videos is not in the answer."""
    ids = list(url_ids)
    found: dict[int, list[Video]] = defaultdict(list)
    for start in range(0, len(ids), IN_CHUNK):
        for url_id, *values in session.execute(
                select(UrlVideo.url_id, *_COLUMNS)
                .where(UrlVideo.url_id.in_(ids[start:start + IN_CHUNK]))
                .order_by(UrlVideo.url_id, UrlVideo.position, UrlVideo.id)):
            found[url_id].append(Video.from_row(dict(zip(VIDEO_FIELDS, values))))
    return dict(found)


def write_videos(session: Session, url: Url, videos: Sequence[Video],
                 change_seq: int | None = None) -> bool:
    """Replace the videos of a stored URL with `videos`; True when they differ from the
    stored ones, and then the URL is stamped with a new change number (or `change_seq`, when
    the caller has taken one for this transaction already)."""
    session.flush()  # the URL has its id
    if videos_of(session, [url.id]).get(url.id, []) == list(videos):
        return False
    _replace(session, {url.id: videos})
    seq = next_change_seq(session, url.site_id) if change_seq is None else change_seq
    url.change_seq = seq
    session.flush()
    session.expire(url, ["videos"])
    return True


def write_videos_by_loc(session: Session, site: Site, videos: Mapping[str, Sequence[Video]],
                        change_seq: Callable[[], int]) -> set[str]:
    """Replace the videos of the site's stored URLs named by loc (each URL's row is written
    already); the locs whose videos changed. `change_seq()` gives the change number the
    changed URLs carry, taken only when one changed."""
    changed: set[str] = set()
    locs = list(videos)
    seq = None
    for start in range(0, len(locs), IN_CHUNK):
        some = locs[start:start + IN_CHUNK]
        ids = dict(stored_by_loc(session, site.id, some, (Url.loc, Url.id)))
        stored = videos_of(session, ids.values())
        replaced = {ids[loc]: videos[loc] for loc in some
                    if stored.get(ids[loc], []) != list(videos[loc])}
        if not replaced:
            continue
        _replace(session, replaced)
        seq = change_seq() if seq is None else seq
        session.execute(update(Url).where(Url.id.in_(replaced)).values(change_seq=seq)
                        .execution_options(synchronize_session=False))
        changed |= {loc for loc in some if ids[loc] in replaced}
    return changed


def _replace(session: Session, videos: Mapping[int, Sequence[Video]]) -> None:
    session.execute(delete(UrlVideo).where(UrlVideo.url_id.in_(list(videos)))
                    .execution_options(synchronize_session=False))
    rows = [{"url_id": url_id, "position": n, **video.as_row()}
            for url_id, entries in videos.items() for n, video in enumerate(entries)]
    if rows:
        session.execute(insert(UrlVideo), rows)
