"""The URLs of a site: validating one, adding or updating it, and deleting it."""

from __future__ import annotations

from collections.abc import Iterable

from sqlalchemy import select, update
from sqlalchemy.orm import Session

from webapp.changes import next_change_seq
from webapp.errors import InvalidValue, NotFound
from webapp.models import Site, Url, UrlAlternate, UrlImage, utcnow
from webapp.protocol import (
    FIELD_RULES,
    MAX_IMAGES_PER_URL,
    Scope,
    normalize_hreflang,
    normalize_url,
)


def scope_of(site: Site) -> Scope:
    return Scope(site.base_url, site.encoding)


def clean_fields(raw: dict[str, str | None]) -> dict[str, object]:
    """The optional fields given in `raw`, each normalised or rejected by its rule."""
    return {name: FIELD_RULES[name](value) for name, value in raw.items()}


def clean_alternates(site: Site, pairs: Iterable[str]) -> dict[str, str]:
    """`lang=URL` pairs as {hreflang: href}; the href may be on any host (other languages' sites)."""
    alternates: dict[str, str] = {}
    for pair in pairs:
        lang, sep, href = pair.partition("=")
        if not sep:
            raise InvalidValue("alternate", pair, "must be written as LANG=URL, e.g. de=https://...")
        alternates[normalize_hreflang(lang)] = normalize_url(href, site.encoding, field="alternate")
    return alternates


def find_url(session: Session, site: Site, loc: str) -> Url:
    url = session.scalar(select(Url).where(Url.site_id == site.id, Url.loc == loc,
                                           Url.deleted_at.is_(None)))
    if url is None:
        raise NotFound(f"{loc} is not a URL of site {site.slug}")
    return url


def save_url(session: Session, site: Site, loc: str, fields: dict[str, str | None] | None = None,
             images: Iterable[str] | None = None,
             alternates: Iterable[str] | None = None) -> tuple[Url, bool]:
    """Add a URL, or update the one with the same loc; True when it is new (or was deleted)."""
    loc = scope_of(site).normalize(loc)
    values = clean_fields(fields or {})
    image_locs = None if images is None else [
        normalize_url(image, site.encoding, field="image") for image in images]
    if image_locs is not None and len(image_locs) > MAX_IMAGES_PER_URL:
        raise InvalidValue("image", f"{len(image_locs)} images",
                           f"a URL may have at most {MAX_IMAGES_PER_URL}")
    alternate_map = None if alternates is None else clean_alternates(site, alternates)
    if alternate_map and loc not in alternate_map.values():
        # hreflang: every page of a cluster lists all its versions, itself included.
        raise InvalidValue("alternate", ", ".join(alternate_map), f"must include {loc} itself "
                           "with its own language, e.g. en=" + loc)
    url = session.scalar(select(Url).where(Url.site_id == site.id, Url.loc == loc))
    created = url is None or url.deleted_at is not None
    # Nothing is written before the site's change number is taken: every writer locks the
    # site's row first and the URL rows after, so two writers cannot deadlock.
    with session.no_autoflush:
        before = None if created else _content(url)
        if url is None:
            url = Url(site_id=site.id, loc=loc)
            session.add(url)
        url.deleted_at = None
        for name, value in values.items():
            setattr(url, name, value)
        if image_locs is not None:
            url.images = [UrlImage(loc=image, position=n) for n, image in enumerate(image_locs)]
        if alternate_map is not None:
            url.alternates = [UrlAlternate(hreflang=lang, href=href)
                              for lang, href in sorted(alternate_map.items())]
        if created or _content(url) != before:
            url.change_seq = next_change_seq(session, site.id)
    session.flush()
    return url, created


def _content(url: Url) -> tuple:
    """Everything a sitemap says about a URL: a difference is a change worth announcing."""
    return (url.lastmod, url.changefreq, url.priority,
            [(image.loc, image.title, image.caption) for image in url.images],
            [(alternate.hreflang, alternate.href) for alternate in url.alternates])


def delete_urls(session: Session, site: Site, ids: Iterable[int]) -> int:
    """Mark the site's live URLs with these ids deleted; how many were."""
    ids = list(ids)
    if not ids:
        return 0
    seq = next_change_seq(session, site.id)
    return session.execute(update(Url).where(
        Url.site_id == site.id, Url.id.in_(ids), Url.deleted_at.is_(None),
    ).values(deleted_at=utcnow(), change_seq=seq).execution_options(
        synchronize_session=False)).rowcount


def delete_url(session: Session, site: Site, loc: str) -> Url:
    """Mark a URL deleted: it leaves the sitemaps, and the row remains to announce the removal."""
    url = find_url(session, site, normalize_url(loc, site.encoding))
    url.change_seq = next_change_seq(session, site.id)  # the site's row first, as every writer
    url.deleted_at = utcnow()
    return url
