"""Many URLs at once, as a content system sends them: upsert and delete by loc.

Every item is checked on its own before anything is written: the valid ones are stored, each
invalid one is reported with its index, field and rule. The caller commits once, so a request
is stored whole (its valid items) or, when the database fails, not at all.
"""

from __future__ import annotations

from collections.abc import Sequence
from collections import Counter
from dataclasses import dataclass, field
from numbers import Real

from sqlalchemy.orm import Session

from webapp.errors import InvalidValue, InvalidValues, Note, each_error
from webapp.models import Site, Url
from webapp.protocol import FIELD_RULES, normalize_url_noting
from webapp.protocol.news import NewsData
from webapp.urls.by_loc import stored_by_loc
from webapp.urls.children import IN_CHUNK, Children
from webapp.urls.edit import CheckedUrl, check_url, delete_urls
from webapp.urls.exclusions import Excluded
from webapp.urls.importing import COLUMNS, ImportReport, write_batch, write_extensions
from webapp.urls.news import item_news, news_notes, store_news
from webapp.urls.video_json import api_field, check_videos_json

ITEM_FIELDS = ("loc", *FIELD_RULES, "images", "alternates", "videos", "news")
ITEM_NAMES = {"image": "images", "alternate": "alternates"}  # the rules' names: the item's plural
MAX_ITEMS = 10_000


@dataclass
class ItemError:
    index: int
    field: str
    rule: str
    message: str

    def as_dict(self) -> dict:
        return {"index": self.index, "field": self.field, "rule": self.rule,
                "message": self.message}


@dataclass
class ItemNote:
    index: int
    field: str
    message: str

    def as_dict(self) -> dict:
        return {"index": self.index, "field": self.field, "message": self.message}


@dataclass
class SyncReport:
    created: int = 0
    updated: int = 0
    unchanged: int = 0
    deleted: int = 0
    not_found: list[str] = field(default_factory=list)
    errors: list[ItemError] = field(default_factory=list)
    notes: list[ItemNote] = field(default_factory=list)
    excluded: Counter[str] = field(default_factory=Counter)  # exclusion rule -> items refused

    def reject(self, index: int, exc: InvalidValue) -> None:
        """Each field's error of the item."""
        self.errors.extend(ItemError(index, error.field, error.rule, str(error))
                           for error in each_error(exc))

    def note(self, index: int, notes: tuple[Note, ...] | list[Note]) -> None:
        self.notes.extend(ItemNote(index, api_field(ITEM_NAMES.get(note.field, note.field)),
                                   str(note))
                          for note in notes)


def _text(name: str, value: object) -> str | None:
    """A field's JSON value as the text the protocol rules read."""
    if value is None:
        return None
    if name == "priority":
        rule = "must be a number from 0.0 to 1.0, or null"
        if isinstance(value, bool) or not isinstance(value, Real):
            raise InvalidValue(name, value, rule)
        try:
            return repr(float(value))
        except OverflowError:  # an integer with hundreds of digits
            raise InvalidValue(name, "a number too large", rule) from None
    if not isinstance(value, str):
        raise InvalidValue(name, value, "must be a string or null")
    return value


def check_item(site: Site, item: object) -> CheckedUrl:
    """One item of an upsert as a checked URL, or InvalidValue naming the field and the rule."""
    if not isinstance(item, dict):
        raise InvalidValue("item", type(item).__name__, "must be an object with at least a loc")
    unknown = sorted(set(item) - set(ITEM_FIELDS))
    if unknown:
        raise InvalidValue(unknown[0], unknown[0], f"is not a URL field; the fields are "
                           f"{', '.join(ITEM_FIELDS)}")
    loc = item.get("loc")
    if not isinstance(loc, str):
        raise InvalidValue("loc", loc, "is required: the page's absolute URL, as a string")
    images, alternates = item.get("images"), item.get("alternates")
    if images is not None and not (isinstance(images, list)
                                   and all(isinstance(image, str) for image in images)):
        raise InvalidValue("images", images, "must be a list of image URLs (strings)")
    if alternates is not None and not (isinstance(alternates, dict)
                                       and all(isinstance(v, str) for v in alternates.values())):
        raise InvalidValue("alternates", alternates,
                           'must be an object of language: URL, e.g. {"de": "https://..."}')
    videos = check_videos_json(item.get("videos"))
    fields = {name: _text(name, item[name]) for name in FIELD_RULES if name in item}
    try:
        return check_url(site, loc, fields, images, alternates, videos)
    except Excluded:
        raise
    except InvalidValue as exc:
        errors = [InvalidValue(api_field(ITEM_NAMES.get(error.field, error.field)), error.value,
                               error.said)
                  for error in each_error(exc)]
        raise (errors[0] if len(errors) == 1 else InvalidValues(errors)) from None


def upsert_urls(session: Session, site: Site, items: Sequence[object]) -> SyncReport:
    """Add or update every valid item by its loc (fields an item leaves out keep their values)."""
    report = SyncReport()
    checked: dict[str, tuple[int, CheckedUrl, tuple[str, ...]]] = {}
    news: dict[str, NewsData | None] = {}  # of the items that say it; None removes it
    for index, item in enumerate(items):
        try:
            url = check_item(site, item)
        except InvalidValue as exc:
            report.reject(index, exc)
            if isinstance(exc, Excluded):
                report.excluded[exc.pattern] += 1
            continue
        if url.loc in checked:
            report.reject(index, InvalidValue("loc", url.loc, "appears more than once in this "
                                              f"request (first at index {checked[url.loc][0]})"))
            continue
        try:
            article = item_news(item)
        except InvalidValue as exc:
            report.reject(index, exc)
            continue
        report.note(index, (*url.notes, *(news_notes(article) if "news" in item else ())))
        given = tuple(name for name in COLUMNS if name in item)  # loc is always given
        checked[url.loc] = (index, url, given)
        if "news" in item:
            news[url.loc] = article
    # Written in batches, one per set of fields given; then the images and alternates of the
    # items that carry them, all at once, in rows of their own.
    batches: dict[tuple[str, ...], dict[str, tuple]] = {}
    for _, url, given in checked.values():
        batches.setdefault(given, {})[url.loc] = (url.loc, *(url.values[n] for n in given[1:]))
    counts = ImportReport(unchanged_locs=set())
    for columns, batch in batches.items():
        write_batch(session, site, columns, batch, counts)
    write_extensions(session, site, [
        Children(url.loc, None if url.images is None else [(image, None, None)
                                                           for image in url.images],
                 url.alternates, url.videos)
        for _, url, _ in checked.values()
        if url.images is not None or url.alternates is not None or url.videos is not None
    ], counts, frozenset({"title", "caption"}))  # images named by loc keep their titles
    store_news(session, site, news, counts)
    report.created, report.updated = counts.added, counts.updated
    report.unchanged = counts.unchanged
    return report


def delete_locs(session: Session, site: Site, locs: Sequence[object]) -> SyncReport:
    """Mark the site's live URLs with these locs deleted; the others are listed as not found."""
    report = SyncReport()
    wanted: dict[str, int] = {}
    for index, loc in enumerate(locs):
        try:
            if not isinstance(loc, str):
                raise InvalidValue("loc", loc, "must be a URL, as a string")
            url, note = normalize_url_noting(loc, site.encoding)
            wanted.setdefault(url, index)
            report.note(index, [note] if note else [])
        except InvalidValue as exc:
            report.reject(index, exc)
    found: dict[str, int] = {}
    names = list(wanted)
    for start in range(0, len(names), IN_CHUNK):
        found.update(stored_by_loc(session, site.id, names[start:start + IN_CHUNK],
                                   (Url.loc, Url.id), (Url.deleted_at.is_(None),)))
    report.deleted = delete_urls(session, site, found.values())
    report.not_found = [loc for loc in wanted if loc not in found]
    return report
