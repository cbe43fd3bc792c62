"""The URLs of a site: validating one, adding or updating it, and deleting it."""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from urllib.parse import quote

from sqlalchemy import select, update
from sqlalchemy.orm import Session

from webapp.errors import InvalidValue, Note, NotFound, collect, raise_all
from webapp.models import Site, Url, UrlAlternate, UrlImage, utcnow
from webapp.protocol import (
    FIELD_RULES,
    LANG_URL_RULE,
    MAX_IMAGES_PER_URL,
    Scope,
    lists_itself,
    normalize_hreflang,
    normalize_url,
    normalize_url_noting,
    one_url_per_language,
    too_many_images,
)
from webapp.urls.changes import count_live, next_change_seq
from webapp.urls.exclusions import Excluded, Rules
from webapp.urls.video_store import write_videos
from webapp.urls.videos import Video, normalize_video
from webapp.verify.publishing import counts_as_change


def scope_of(site: Site) -> Scope:
    return Scope(site.base_url, site.encoding)


def clean_fields(raw: dict[str, str | None]) -> dict[str, object]:
    """The optional fields given in `raw`, each normalised or rejected by its rule (every
    field's error at once)."""
    errors: list[InvalidValue] = []
    values = {name: collect(errors, FIELD_RULES[name], value) for name, value in raw.items()}
    raise_all(errors)
    return values


def _noted(notes: list[Note], normalized: tuple[str, Note | None]) -> str:
    url, note = normalized
    if note is not None:
        notes.append(note)
    return url


def clean_alternates(site: Site, pairs: Iterable[str],
                     notes: list[Note] | None = None) -> dict[str, str]:
    """`lang=URL` pairs as {hreflang: href}; the href may be on any host (other languages' sites),
    one per language (the same pair twice is one).
    One inside the site meets its rules as a loc does: parameters stripped (noted), and an
    excluded one refused naming the rule (Excluded)."""
    notes = [] if notes is None else notes
    rules, alternates = Rules.of(site), {}
    for pair in pairs:
        lang, sep, href = pair.partition("=")
        if not sep:
            raise InvalidValue("alternate", pair, LANG_URL_RULE)
        url = _noted(notes, normalize_url_noting(href, site.encoding, field="alternate"))
        if rules and url.startswith(site.base_url):
            url = _noted(notes, rules.apply(url, field="alternate"))
        lang = normalize_hreflang(lang)
        if alternates.setdefault(lang, url) != url:
            raise InvalidValue("alternate", pair, one_url_per_language(lang, alternates[lang],
                                                                       url))
    return alternates


def prefix_of(site: Site, text: str) -> str:
    """What a loc starts with when it starts with `text`: a path of the site, or a whole URL."""
    text = text.strip()
    return text if text.startswith(("http://", "https://")) else \
        site.base_url + quote(text.lstrip("/"), safe="/:?&=%#;,+@!$'()*~",
                              encoding=site.encoding, errors="replace")


def starting_with(site: Site, text: str) -> tuple:
    """Conditions for the URLs starting with `text`: a path of the site, or a whole URL.

    Written as a range as well, so that the (site, loc) index finds them at once.
    """
    prefix = prefix_of(site, text)
    return (Url.loc >= prefix, Url.loc < prefix + "\U0010ffff",
            Url.loc.startswith(prefix, autoescape=True))


def find_url(session: Session, site: Site, loc: str) -> Url:
    url = session.scalar(select(Url).where(Url.site_id == site.id, Url.loc == loc,
                                           Url.deleted_at.is_(None)))
    if url is None:
        raise NotFound(f"{loc} is not a URL of site {site.slug}")
    return url


@dataclass(frozen=True)
class CheckedUrl:
    """A URL's values after every rule: what `write_url` stores, and what the rules changed
    that the person should hear of (`notes`)."""

    loc: str
    values: dict[str, object]
    images: list[str] | None  # None: leave the stored images as they are
    alternates: dict[str, str] | None
    notes: tuple[Note, ...] = ()
    videos: tuple[Video, ...] | None = None  # None: leave the stored videos as they are


def check_url(site: Site, loc: str, fields: dict[str, str | None] | None = None,
              images: Iterable[str] | None = None,
              alternates: Iterable[str] | Mapping[str, str] | None = None,
              videos: Sequence[Mapping[str, object]] | None = None) -> CheckedUrl:
    """Normalise a URL's values or raise InvalidValue naming the field (InvalidValues when
    several fields break their rules); touches no data.

    `alternates` are `lang=URL` pairs as typed, or a {hreflang: URL} mapping; `videos` each
    video's fields by name (videos.normalize_video), an error naming it `video N <field>`.
    """
    errors: list[InvalidValue] = []
    notes: list[Note] = []
    loc = collect(errors, lambda: _noted(notes, Rules.of(site).apply(
        _noted(notes, scope_of(site).normalize_noting(loc)))))
    if any(isinstance(error, Excluded) for error in errors):
        raise errors[0]  # refused whole, whatever else the item says: counted by its rule
    values = collect(errors, clean_fields, fields or {})
    image_locs = None if images is None else collect(errors, lambda: [
        _noted(notes, normalize_url_noting(image, site.encoding, field="image"))
        for image in images])
    if image_locs is not None and len(image_locs) > MAX_IMAGES_PER_URL:
        errors.append(InvalidValue("image", f"{len(image_locs)} images", too_many_images()))
    if isinstance(alternates, Mapping):
        alternates = [f"{lang}={href}" for lang, href in alternates.items()]
    alternate_map = None if alternates is None else collect(
        errors, clean_alternates, site, alternates, notes)
    if alternate_map and loc is not None and loc not in alternate_map.values():
        # hreflang: every page of a cluster lists all its versions, itself included.
        errors.append(InvalidValue("alternate", ", ".join(alternate_map), lists_itself(loc)))
    checked_videos = None if videos is None else tuple(
        collect(errors, normalize_video, video, loc or "", site.encoding, f"video {n}", notes)
        for n, video in enumerate(videos, start=1))
    raise_all(errors)
    return CheckedUrl(loc, values, image_locs, alternate_map, tuple(notes), checked_videos)


@dataclass
class Saved:
    """What saving one URL did: whether it is new (or was deleted), each field it changed as
    (before, after), and the notes of its rules."""

    url: Url
    created: bool
    changes: dict[str, tuple[object, object]] = field(default_factory=dict)
    notes: tuple[Note, ...] = ()

    @property
    def changed(self) -> bool:
        return self.created or bool(self.changes)


def save_url(session: Session, site: Site, loc: str, fields: dict[str, str | None] | None = None,
             images: Iterable[str] | None = None,
             alternates: Iterable[str] | None = None) -> tuple[Url, bool]:
    """Add a URL, or update the one with the same loc; True when it is new (or was deleted).
    Fields not given (absent from `fields`, images or alternates None) keep their values."""
    saved = write_url(session, site, check_url(site, loc, fields, images, alternates))
    return saved.url, saved.created


def write_url(session: Session, site: Site, checked: CheckedUrl) -> Saved:
    """Store a checked URL; what it changed."""
    url = session.scalar(select(Url).where(Url.site_id == site.id, Url.loc == checked.loc))
    if url is not None and url.deleted_at is None:
        differing = {name: (old, new) for name, old, new
                     in zip(CONTENT, _content(url), _content_after(url, checked)) if old != new}
        if not differing:
            return Saved(url, False, notes=checked.notes)
        if not counts_as_change(site, differing):  # stored; what is published stays
            url.lastmod = checked.values["lastmod"]
            session.flush()
            return Saved(url, False, differing, checked.notes)
    # Every writer locks the site's row (its change number) before it writes URL rows, so two
    # writers cannot deadlock; what was read before the lock is read again after it (another
    # writer may have added this very loc meanwhile).
    seq = next_change_seq(session, site.id)
    if url is not None:
        session.expire(url)
    url = session.scalar(select(Url).where(Url.site_id == site.id, Url.loc == checked.loc))
    created = url is None or url.deleted_at is not None
    before = None if url is None else _content(url)
    if url is None:
        url = Url(site_id=site.id, loc=checked.loc)
        session.add(url)
    url.deleted_at = None
    for name, value in checked.values.items():
        setattr(url, name, value)
    # Old child rows go before new ones are added: (url, hreflang) is unique.
    images = None if checked.images is None else _images_after(url, checked)
    if images is not None and _images(url) != images:
        url.images.clear()
        session.flush()
        url.images = [UrlImage(loc=loc, title=title, caption=caption, position=n)
                      for n, (loc, title, caption) in enumerate(images)]
    if checked.alternates is not None and _alternates(url) != _alternates_after(checked):
        url.alternates.clear()
        session.flush()
        url.alternates = [UrlAlternate(hreflang=lang, href=href)
                          for lang, href in sorted(checked.alternates.items())]
    if checked.videos is not None:
        write_videos(session, url, checked.videos, seq)
    after = _content(url)
    changes = {} if before is None else {name: (old, new) for name, old, new
                                         in zip(CONTENT, before, after) if old != new}
    if created or changes:
        url.change_seq = seq
    session.flush()
    if created:
        count_live(session, site.id, 1)
    return Saved(url, created, changes, checked.notes)


CONTENT = ("lastmod", "changefreq", "priority", "images", "alternates", "videos")


def shown(name: str, value: object) -> str:
    """A value of one of the CONTENT fields as a person reads it in a message."""
    if value is None or value == []:
        return "none"
    if name == "images":
        return ", ".join(loc for loc, *_ in value)
    if name == "alternates":
        return ", ".join(f"{lang}={href}" for lang, href in value)
    if name == "videos":
        return ", ".join(video.title for video in value)
    return str(value)


def _content(url: Url) -> tuple:
    """Everything a sitemap says about a URL: a difference is a change worth announcing."""
    return (url.lastmod, url.changefreq, url.priority, _images(url), _alternates(url),
            _videos(url))


def _content_after(url: Url, checked: CheckedUrl) -> tuple:
    """What `_content` would say once `checked` is written over `url`."""
    values = {"lastmod": url.lastmod, "changefreq": url.changefreq, "priority": url.priority,
              **checked.values}
    return (values["lastmod"], values["changefreq"], values["priority"],
            _images(url) if checked.images is None else _images_after(url, checked),
            _alternates(url) if checked.alternates is None else _alternates_after(checked),
            _videos(url) if checked.videos is None else list(checked.videos))


def _images(url: Url) -> list[tuple]:
    return [(image.loc, image.title, image.caption) for image in url.images]


def _images_after(url: Url, checked: CheckedUrl) -> list[tuple]:
    """The images `checked` names (by their locs: a form, the command line and the API give
    no titles), each with the title and caption stored for the same image, if any."""
    stored: dict[str, tuple] = {}
    for image in url.images:
        stored.setdefault(image.loc, (image.title, image.caption))
    return [(loc, *stored.get(loc, (None, None))) for loc in checked.images or ()]


def _videos(url: Url) -> list[Video]:
    return [Video.from_row(video) for video in url.videos]


def _alternates(url: Url) -> list[tuple]:
    return [(alternate.hreflang, alternate.href) for alternate in url.alternates]


def _alternates_after(checked: CheckedUrl) -> list[tuple]:
    return sorted((checked.alternates or {}).items())


def delete_urls(session: Session, site: Site, ids: Iterable[int]) -> int:
    """Mark the site's live URLs with these ids deleted; how many were."""
    ids = list(ids)
    if not ids:
        return 0
    seq = next_change_seq(session, site.id)
    deleted = session.execute(update(Url).where(
        Url.site_id == site.id, Url.id.in_(ids), Url.deleted_at.is_(None),
    ).values(deleted_at=utcnow(), change_seq=seq).execution_options(
        synchronize_session=False)).rowcount
    count_live(session, site.id, -deleted)
    return deleted


def delete_url(session: Session, site: Site, loc: str) -> Url:
    """Mark a URL deleted: it leaves the sitemaps, and the row remains to announce the removal."""
    loc = normalize_url(loc, site.encoding)
    url = find_url(session, site, loc)
    seq = next_change_seq(session, site.id)  # the site's row first, as every writer
    session.expire(url)  # read again under the lock: another writer may have deleted it
    url = find_url(session, site, loc)
    url.change_seq, url.deleted_at = seq, utcnow()
    count_live(session, site.id, -1)
    return url
