"""Sites: creating them, finding them, and changing their settings one validated field at a
time. Settings that belong to a search engine are checked by that engine (`notify.SETTINGS`);
the file names a site publishes, and that two sites in one folder share none, are `files`'.
The dashboard's side of sites lives beside this door and is imported by name: `listing` (the
site list), `setting_fields` (each setting's control) and `publish_guide` (proxy snippets)."""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Callable, Mapping
from datetime import datetime
from urllib.parse import urlsplit

from sqlalchemy import delete, func, or_, select
from sqlalchemy.orm import Session

from webapp import notify
from webapp.db import after_commit
from webapp.errors import (
    Conflict,
    InvalidValue,
    NotAllowed,
    NotFound,
    RuleText,
    check_storable,
    collect,
    raise_all,
    rule_text,
)
from webapp.leases import gone
from webapp.models import MAX_ID, Site, Url, new_indexnow_key, utcnow
from webapp.protocol import (
    MAX_URLS_PER_FILE,
    check_encoding,
    check_site_scope,
    normalize_base_url,
    normalize_changefreq,
    normalize_priority,
    normalize_sitemap_url,
)
from webapp.protocol import news
from webapp.schedules import DEFAULT_SCHEDULE, check_schedule, check_timezone, next_run
from webapp.sitemaps import SitemapStore
from webapp.sitemaps import sections as site_sections
from webapp.sites import files as site_files
from webapp.urls import next_change_seq, parse_exclude, parse_strip_params, show_exclude
from webapp.verify import settings as verification

_SLUG = re.compile(r"[a-z0-9][a-z0-9-]{0,63}")


def find_site(session: Session, ref: str | int) -> Site:
    """A site by slug or numeric id."""
    text = str(ref).strip()
    site = session.scalar(select(Site).where(Site.slug == text))
    # ASCII digits within the id column's range: int() refuses superscripts isdigit() takes.
    if site is None and text.isascii() and text.isdigit() and int(text) <= MAX_ID:
        site = session.get(Site, int(text))
    if site is None:
        raise NotFound(f"no site with slug or id {text!r}")
    return site


def _check_name(value: str) -> str:
    value = check_storable("name", value).strip()
    if not value or len(value) > 200:
        raise InvalidValue("name", value, rule_text("must be 1 to 200 characters"))
    return value


def _check_slug(value: str) -> str:
    value = value.strip()
    if not _SLUG.fullmatch(value) or value.isdigit():
        raise InvalidValue("slug", value, rule_text(
            "must be 1 to 64 lower-case letters, digits or '-', starting with a letter or digit, "
            "and not only digits (those are ids)"))
    return value


def _check_max_urls(value: str) -> int:
    try:
        number = int(str(value).strip())
    except ValueError:
        number = 0
    if not 1 <= number <= MAX_URLS_PER_FILE:
        raise InvalidValue("max_urls_per_file", value, rule_text(
            "must be a whole number from 1 to %(limit)s", limit=MAX_URLS_PER_FILE))
    return number


def _slug_from(session: Session, name: str, base_url: str | None = None) -> str:
    """A free slug from the name: accents folded (Café -> cafe), other characters as '-'. A
    name without ASCII letters (日本のお店) takes the base URL's host instead, without `www.`
    (shop.example.co.jp -> shop-example-co-jp; an internationalised name in its xn-- form:
    例え.jp -> xn--r8jz45g-jp); a number is kept after `site-`; -2, -3... when taken."""
    folded = unicodedata.normalize("NFKD", name).encode("ascii", "ignore").decode()
    base = re.sub(r"[^a-z0-9]+", "-", folded.lower()).strip("-")[:56]
    if not re.search("[a-z]", base) and base_url:
        host = (urlsplit(base_url).hostname or "").removeprefix("www.")
        base = re.sub(r"[^a-z0-9-]+", "-", host).strip("-")[:56] or base
    base = base or "site"
    if base.isdigit():
        base = f"site-{base}"
    slug, n = base, 1
    while session.scalar(select(Site.id).where(Site.slug == slug)) is not None:
        n += 1
        slug = f"{base}-{n}"
    return slug


def _check_flag(name: str) -> Callable[[str], bool]:
    def check(value: str) -> bool:
        text = str(value).strip().lower()
        if text in ("on", "true", "yes", "1"):
            return True
        if text in ("off", "false", "no", "0"):
            return False
        raise InvalidValue(name, value, rule_text("must be on or off"))

    return check


def _check_robots_txt(value: str) -> str | None:
    """robots.txt as typed on one line: `\\n` stands for a line break; empty means the default."""
    text = value.replace("\r\n", "\n")
    text = re.sub(r"\\(\\|n)", lambda m: "\n" if m.group(1) == "n" else "\\", text)
    if len(text) > 100_000 or "\x00" in text:
        raise InvalidValue("robots_txt", value[:40], rule_text(
            "must be text of at most 100,000 characters"))
    return text if text.strip() else None


def _show_robots_txt(value: str | None) -> str:
    return (value or "").replace("\\", "\\\\").replace("\n", "\\n")


def _check_choice(name: str, choices: tuple[str, ...]) -> Callable[[str], str]:
    def check(value: str) -> str:
        if value.strip() not in choices:
            raise InvalidValue(name, value, rule_text("must be one of %(choices)s",
                                                       choices=", ".join(choices)))
        return value.strip()

    return check


def _check_change_delay(value: str) -> int:
    text = str(value).strip().removesuffix("s")
    if not (text.isascii() and text.isdigit()) or int(text) > 86_400:
        raise InvalidValue("change_delay", value, rule_text(
            "must be a number of seconds from 0 to 86400"))
    return int(text)


def _optional(value: object) -> str:
    return "" if value is None else str(value)


# Each setting: how to read it from text, and how to show it as text.
SETTINGS: dict[str, tuple[Callable[[str], object], Callable[[object], str]]] = {
    "name": (_check_name, str),
    "slug": (_check_slug, str),
    "base_url": (str, str),  # normalised with the encoding, in update_site
    "sitemap_url": (str, str),
    "encoding": (check_encoding, str),
    "default_changefreq": (normalize_changefreq, lambda v: v or ""),
    "default_priority": (normalize_priority, lambda v: "" if v is None else str(v)),
    "max_urls_per_file": (_check_max_urls, str),
    "stylesheet": (_check_flag("stylesheet"), lambda v: "on" if v else "off"),
    "robots_txt": (_check_robots_txt, _show_robots_txt),
    "indexnow_enabled": (_check_flag("indexnow_enabled"), lambda v: "on" if v else "off"),
    "indexnow_key": (notify.SETTINGS["indexnow_key"], str),
    "indexnow_key_location": (_check_choice("indexnow_key_location", ("root", "sitemap")), str),
    "indexnow_endpoint": (notify.SETTINGS["indexnow_endpoint"], _optional),
    "gsc_property": (notify.SETTINGS["gsc_property"], _optional),
    "gsc_credentials": (notify.SETTINGS["gsc_credentials"], _optional),
    "gsc_endpoint": (notify.SETTINGS["gsc_endpoint"], _optional),
    "ping_urls": (notify.SETTINGS["ping_urls"], lambda v: ",".join((v or "").split("\n"))),
    "schedule": (check_schedule, str),
    "change_delay": (_check_change_delay, str),
    "timezone": (check_timezone, str),
    "exclude": (parse_exclude, show_exclude),
    "strip_params": (parse_strip_params, _optional),
    "sections": (site_sections.parse_sections, show_exclude),  # lines, shown on one line as exclude is
    "discover_mode": (_check_choice("discover_mode", ("review", "add")), str),
    **verification.SETTINGS,
    **news.SETTINGS,
}


# Settings that decide where a secret goes or which server file is read: the Search Console
# access token is valid for every property of its service account. Only an operator (an
# admin, the command line) changes them.
OPERATOR_SETTINGS = ("gsc_credentials", "gsc_endpoint")
# What the published files are made of besides the URLs: a change to one is a change of the
# site, generated soon (after change_delay, as a URL's change is) and not at the next
# scheduled run; the layout it changes (sitemaps.incremental) rewrites every file.
PUBLISHED_SETTINGS = ("sitemap_url", "default_changefreq", "default_priority",
                      "max_urls_per_file", "stylesheet", "sections", "news_name",
                      "news_language", "lastmod_source", "leave_out")


def _check_operator_settings(site: Site, changes: Mapping[str, object]) -> None:
    for name in OPERATOR_SETTINGS:
        if name in changes and changes[name] != SETTINGS[name][1](getattr(site, name)):
            raise NotAllowed(name, str(changes[name]), rule_text(
                "only an admin may change it: it decides where the Search Console access token "
                "is sent, or which file is read"))


def _at_most(limit: int) -> RuleText:
    return rule_text("must be at most %(limit)s characters", limit=limit)


def _parse_setting(name: str, raw: str | list[str]) -> object:
    texts = (raw if isinstance(raw, list) else [str(raw)]) or [""]  # a list: the API's ping_urls
    for text in texts:
        check_storable(name, text)
    limit = getattr(Site.__table__.c[name].type, "length", None)
    if limit and len(texts[0]) > 2 * limit:  # far beyond what any rule below could accept
        raise InvalidValue(name, texts[0][:40], _at_most(limit))
    try:
        value = SETTINGS[name][0](raw)
    except InvalidValue as exc:  # the URL rules name URL fields; say which setting it was
        raise InvalidValue(name, exc.value, exc.said) from None
    if limit and isinstance(value, str) and len(value) > limit:
        raise InvalidValue(name, value[:40], _at_most(limit))
    return value


def site_settings(site: Site) -> dict[str, str]:
    """Every setting as text, in the form `sites set` accepts back."""
    return {name: show(getattr(site, name)) for name, (_, show) in SETTINGS.items()}


def update_site(session: Session, site: Site, changes: Mapping[str, str],
                operator: bool = False) -> RuleText | None:
    """Validate every change first, then apply them all; return a warning worth showing.

    Every setting's error is raised at once (InvalidValues when there are several).
    `operator` (an admin, or the command line) may change OPERATOR_SETTINGS too.
    """
    unknown = sorted(set(changes) - set(SETTINGS))
    if unknown:
        raise InvalidValue("setting", unknown[0], f"is not a site setting; settings are "
                           f"{', '.join(SETTINGS)}")
    if not operator:
        _check_operator_settings(site, changes)  # before a path is read or a URL checked
    errors: list[InvalidValue] = []
    values = {}
    for name, raw in changes.items():
        try:
            values[name] = _parse_setting(name, raw)
        except InvalidValue as exc:
            errors.append(exc)
    encoding = values.get("encoding") or site.encoding or "utf-8"
    base_url = collect(errors, normalize_base_url, changes.get("base_url", site.base_url),
                       encoding)
    sitemap_url = collect(errors, normalize_sitemap_url,
                          changes.get("sitemap_url", site.sitemap_url), encoding)
    if "slug" in values and values["slug"] != site.slug:
        taken = session.scalar(select(Site.id).where(Site.slug == values["slug"]))
        if taken is not None:
            errors.append(Conflict("slug", values["slug"], "is already used by another site"))
    if not errors:
        errors += news.check_settings(site, values)
    raise_all(errors)
    warning = check_site_scope(base_url, sitemap_url)
    sections, news_name = (values.get("sections", site.sections),
                           values.get("news_name", site.news_name))
    site_files.check_free(session, site, sitemap_url, sections, news_name, {
        name for name, changes_it in (
            ("sitemap_url", sitemap_url != site.sitemap_url),
            ("sections", sections != site.sections),
            ("news_name", bool(news_name) != bool(site.news_name))) if changes_it})
    site_sections.check_names(sections, site_files.file_stem(sitemap_url)[1])
    if base_url != site.base_url and site.id is not None:
        outside = session.scalar(select(func.count()).select_from(Url).where(
            Url.site_id == site.id, Url.deleted_at.is_(None),
            ~Url.loc.startswith(base_url, autoescape=True)))
        if outside:
            raise InvalidValue("base_url", base_url, f"would leave {outside} stored URLs outside "
                               "the site; delete them first or choose a wider base URL")
    notify.apply_settings(session, site, values, base_url, sitemap_url)
    values["base_url"], values["sitemap_url"] = base_url, sitemap_url
    if {"schedule", "timezone"} & set(values) or site.id is None:
        values["next_run_at"] = next_run(values.get("schedule", site.schedule or DEFAULT_SCHEDULE),
                                         values.get("timezone", site.timezone or "UTC"), utcnow())
    if {"verify_schedule", "timezone"} & set(values) or site.id is None:
        values["verify_next_run_at"] = next_run(
            values.get("verify_schedule", site.verify_schedule or "off"),
            values.get("timezone", site.timezone or "UTC"), utcnow())
    republish = site.id is not None and any(
        name in values and values[name] != getattr(site, name) for name in PUBLISHED_SETTINGS)
    for name, value in values.items():
        setattr(site, name, value)
    if republish:
        next_change_seq(session, site.id)
        session.expire(site, ["change_seq", "changed_at", "pending_since"])  # as it wrote them
    return warning if {"base_url", "sitemap_url"} & set(changes) else None


def delete_site(session: Session, site: Site, now: datetime, store: SitemapStore) -> None:
    """Delete a site with its URLs, history and ledger; its published files go from `store`
    once the deletion is committed.

    Refused while a live process holds the site's lease: the check and the delete are one
    statement, so a run cannot start in between.
    """
    owner = session.scalar(select(Site.run_owner).where(Site.id == site.id))
    free = or_(Site.run_owner.is_(None), Site.run_lease_until <= now)
    if owner is not None and gone(owner):
        free = or_(free, Site.run_owner == owner)
    deleted = session.execute(delete(Site).where(Site.id == site.id, free)
                              .execution_options(synchronize_session=False)).rowcount
    if deleted != 1:
        raise InvalidValue("site", site.slug, f"is being generated by {owner}; delete it when "
                           "that run has finished")
    storage_key = site.storage_key
    session.expunge(site)
    after_commit(session, lambda: store.remove(storage_key))


def create_site(session: Session, name: str, base_url: str, sitemap_url: str | None = None,
                encoding: str = "utf-8", settings: Mapping[str, str | list[str]] | None = None,
                operator: bool = False) -> tuple[Site, str | None]:
    """A new site; its sitemap defaults to `<base_url>sitemap.xml`. `settings` are further
    settings to give it; every field's error is raised at once."""
    errors: list[InvalidValue] = []
    encoding = collect(errors, lambda: check_encoding(check_storable("encoding", encoding)))
    base = collect(errors, normalize_base_url, base_url, encoding or "utf-8")
    checked_name = collect(errors, _check_name, name)
    site = Site(name=checked_name, slug=_slug_from(session, checked_name or "site", base),
                base_url=base, sitemap_url=base and base + "sitemap.xml",
                encoding=encoding or "utf-8", max_urls_per_file=MAX_URLS_PER_FILE,
                stylesheet=False, indexnow_key=new_indexnow_key(), schedule=DEFAULT_SCHEDULE,
                timezone="UTC", change_delay=60, lastmod_source="given",
                leave_out=verification.DEFAULT_LEAVE_OUT, verify_schedule="off")
    changes = {**(settings or {})}
    if sitemap_url or base:
        changes["sitemap_url"] = sitemap_url or base + "sitemap.xml"
    if base is None:  # no scope to check the sitemap against: each setting on its own
        for setting, raw in changes.items():
            collect(errors, _parse_setting, setting, raw)
        if "sitemap_url" in changes:
            collect(errors, normalize_sitemap_url, changes["sitemap_url"], encoding or "utf-8")
        raise_all(errors)
    try:
        warning = update_site(session, site, changes, operator=operator)
    except InvalidValue as exc:
        raise_all([*errors, exc])
    raise_all(errors)
    session.add(site)
    session.flush()
    return site, warning
