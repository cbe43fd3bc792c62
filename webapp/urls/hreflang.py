"""hreflang clusters: pages that list an alternate of this site which does not list them back
(search engines ignore such a pair), and completing every cluster whose pages are all URLs of
the site, so that each page lists every page of its cluster, itself included."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable
from dataclasses import dataclass, field

from sqlalchemy import and_, exists, func, or_, select
from sqlalchemy.orm import Session, aliased

from webapp.errors import InvalidValue
from webapp.models import Site, Url, UrlAlternate
from webapp.said import Line, said
from webapp.urls.bulk import upsert_urls
from webapp.urls.by_loc import stored_by_loc
from webapp.urls.edit import scope_of

SHOWN = 20  # pairs named in a warning
_IN_CHUNK = 500  # locs per IN (...) lookup


@dataclass(frozen=True)
class Unreturned:
    """Pairs (page, alternate of this site that does not list the page back)."""

    count: int
    pairs: list[tuple[str, str]]  # the first SHOWN, by page

    def describe(self) -> str:
        """The pairs named, one sentence each."""
        named = " ".join(f"{alternate} does not list {page}." for page, alternate in self.pairs)
        more = self.count - len(self.pairs)
        return named + (f" And {more} more." if more else "")

    def said_pairs(self) -> list[Line]:
        """`describe` as webapp.said items, for a report read later in the reader's language."""
        named: list[Line] = [said("%(alternate)s does not list %(page)s. ", alternate=alternate,
                                  page=page) for page, alternate in self.pairs]
        more = self.count - len(self.pairs)
        return named + ([said("And %(more)s more.", more=more)] if more else [])


def _unreturned_query(site: Site):
    page, other = aliased(Url), aliased(Url)
    link, back = aliased(UrlAlternate), aliased(UrlAlternate)
    query = select(page.loc, link.href).select_from(link).join(page, page.id == link.url_id).join(
        other, and_(other.site_id == site.id, other.loc == link.href, other.deleted_at.is_(None)),
    ).where(page.site_id == site.id, page.deleted_at.is_(None), link.href != page.loc,
            ~exists().where(back.url_id == other.id, back.href == page.loc))
    return query, page, other


def unreturned(session: Session, site: Site) -> Unreturned:
    """Every pair of the site whose alternate, a live URL of the site, does not list the page."""
    query, page, link = _unreturned_query(site)
    count = session.scalar(select(func.count()).select_from(query.subquery())) or 0
    pairs = session.execute(query.order_by(page.loc).limit(SHOWN)).all() if count else []
    return Unreturned(count, [tuple(pair) for pair in pairs])


def unreturned_pages(site: Site):
    """A query of the ids of the site's live pages that have an alternate not listing them
    back (the URLs the unreturned pairs count, each once)."""
    query, page, _ = _unreturned_query(site)
    return query.with_only_columns(page.id).distinct()


def unreturned_among(session: Session, site: Site, locs: Iterable[object]) -> Unreturned:
    """The pairs with a page or an alternate among `locs` (as sent; those that are not URLs of
    the site are passed over): what a write of these URLs leaves without a return link."""
    scope, wanted = scope_of(site), set()
    for loc in locs:
        try:
            wanted.add(scope.normalize(loc))
        except (InvalidValue, TypeError, AttributeError):
            continue
    query, page, other = _unreturned_query(site)
    names, found = sorted(wanted), set()
    for start in range(0, len(names), _IN_CHUNK):
        chunk = names[start:start + _IN_CHUNK]
        found.update(tuple(pair) for pair in session.execute(
            query.where(or_(page.loc.in_(chunk), other.loc.in_(chunk)))))
    return Unreturned(len(found), sorted(found)[:SHOWN])


@dataclass
class Completion:
    clusters: int = 0  # clusters completed
    urls: int = 0  # pages whose alternates were completed
    skipped: list[str] = field(default_factory=list)  # why a cluster was left as it is

    def summary(self) -> str:
        return (f"{self.clusters} hreflang clusters completed ({self.urls} pages changed); "
                f"{len(self.skipped)} left as they are.")


def complete(session: Session, site: Site) -> Completion:
    """Give every page of each cluster whose pages are all live URLs of the site the alternates
    of the whole cluster; clusters that cannot be completed are named with the reason."""
    listed: dict[str, dict[str, str]] = defaultdict(dict)  # page -> {hreflang: href}
    for loc, lang, href in session.execute(
            select(Url.loc, UrlAlternate.hreflang, UrlAlternate.href)
            .join(UrlAlternate, UrlAlternate.url_id == Url.id)
            .where(Url.site_id == site.id, Url.deleted_at.is_(None))):
        listed[loc][lang] = href
    hrefs = sorted({href for pairs in listed.values() for href in pairs.values()})
    live = set(listed)
    for start in range(0, len(hrefs), _IN_CHUNK):
        live.update(row.loc for row in stored_by_loc(
            session, site.id, hrefs[start:start + _IN_CHUNK], (Url.loc,),
            (Url.deleted_at.is_(None),)))
    clusters = _clusters(listed, live)
    report, items = Completion(), []
    for members in clusters:
        wanted, reason = _whole(members, listed, live)
        if reason:
            report.skipped.append(reason)
            continue
        changed = [loc for loc in sorted(members) if listed.get(loc, {}) != wanted]
        if changed:
            report.clusters += 1
            report.urls += len(changed)
            items += [{"loc": loc, "alternates": wanted} for loc in changed]
    written = upsert_urls(session, site, items)
    report.skipped += [error.message for error in written.errors]
    return report


def _clusters(listed: dict[str, dict[str, str]], live: set[str]) -> list[set[str]]:
    """Pages joined by their alternates, each cluster with every page it names."""
    parent: dict[str, str] = {}

    def root(loc: str) -> str:
        parent.setdefault(loc, loc)
        while parent[loc] != loc:
            parent[loc] = parent[parent[loc]]
            loc = parent[loc]
        return loc

    for loc, pairs in listed.items():
        for href in pairs.values():
            parent[root(href)] = root(loc)
    groups: dict[str, set[str]] = defaultdict(set)
    for loc in list(parent):
        groups[root(loc)].add(loc)
    return [members for members in groups.values() if len(members) > 1]


def _whole(members: set[str], listed: dict[str, dict[str, str]],
           live: set[str]) -> tuple[dict[str, str], str | None]:
    """The alternates every page of the cluster should list, or why there are none."""
    first = min(members)
    outside = sorted(loc for loc in members if loc not in live)
    if outside:
        return {}, (f"The cluster of {first} was left as it is: {outside[0]} is not a live URL "
                    "of this site.")
    wanted: dict[str, str] = {}
    for loc in sorted(members):
        for lang, href in listed.get(loc, {}).items():
            if wanted.setdefault(lang, href) != href:
                return {}, (f"The cluster of {first} was left as it is: it gives the language "
                            f"{lang} to both {wanted[lang]} and {href}.")
    unknown = sorted(members - set(wanted.values()))
    if unknown:
        return {}, (f"The cluster of {first} was left as it is: no page of it says the "
                    f"language of {unknown[0]}.")
    return wanted, None
