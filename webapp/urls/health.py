"""What a site owner should hear about a site's URLs, found with a few aggregate queries; the
URL list's filters that show exactly the URLs a warning counts; and the warnings people
dismissed, hidden until what they were about changes."""

from __future__ import annotations

import hashlib
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field

from flask_babel import gettext as _
from sqlalchemy import exists, func, or_, select
from sqlalchemy.orm import Session

from webapp.errors import InvalidValue, rule_text
from webapp.models import DismissedWarning, Site, Url, utcnow
from webapp.urls import hreflang
from webapp.urls.exclusions import Rules, program_size
from webapp.urls.rule_cost import MAX_RULE_WORK, searched

HIGH_PRIORITY = 0.8


@dataclass(frozen=True)
class Warning:
    title: str
    detail: str
    action: str | None = None  # the dashboard endpoint of a button that fixes it
    action_label: str | None = None
    kind: str | None = None  # what it is about, to dismiss it by; None: it cannot be dismissed
    # The condition as it is now (how many and which): a dismissed warning shows again as
    # soon as this differs from what was dismissed. Lists of sites (page_warnings) leave it
    # out, so two warnings that say the same are equal whether they carry it or not.
    fingerprint: str | None = field(default=None, compare=False)
    urls: dict[str, str] | None = None  # the URL list's query string that lists what it counts


def fingerprint(*parts: object) -> str:
    return hashlib.sha256("\x1f".join(str(part) for part in parts).encode()).hexdigest()


def live_count(session: Session, site: Site) -> int:
    return session.scalar(select(func.count()).select_from(Url).where(
        Url.site_id == site.id, Url.deleted_at.is_(None))) or 0


def _no_urls() -> Warning:
    return Warning(_("No URLs yet"), _("Add URLs or import a file: an empty site publishes no "
                                       "sitemap."))


def _all_high(count: int, ids: int) -> Warning:
    return Warning(_("Every URL has a high priority"),
                   _("Priority is relative to your other pages: when all are 0.8 or more, it "
                     "tells crawlers nothing."),
                   kind="high-priority", fingerprint=fingerprint(count, ids),
                   urls={"health": "high-priority"})


def _future(count: int, ids: int | None = None) -> Warning:
    return Warning(_("%(count)s URLs have a lastmod in the future", count=f"{count:,}"),
                   _("Crawlers distrust lastmod values that cannot be true; fix the dates at "
                     "the source."),
                   kind="future-lastmod", fingerprint=fingerprint(count, ids),
                   urls={"health": "future-lastmod"})


def _shared(lastmod: str, count: int, total: int, ids: int | None = None) -> Warning:
    return Warning(_("%(count)s of %(total)s URLs share the lastmod %(lastmod)s",
                     count=f"{count:,}", total=f"{total:,}", lastmod=lastmod),
                   _("A lastmod that says when the page content last changed helps crawlers; "
                     "one date for everything (a deploy date) does not."),
                   kind="shared-lastmod", fingerprint=fingerprint(lastmod, count, ids),
                   urls={"lastmod": lastmod})


def _now() -> str:
    return utcnow().strftime("%Y-%m-%dT%H:%M:%S+00:00")


def _live(site: Site) -> tuple:
    return Url.site_id == site.id, Url.deleted_at.is_(None)


def _high(site: Site):
    priority = func.coalesce(Url.priority, site.default_priority)
    return priority >= HIGH_PRIORITY


# The URL list's `health` filter: the URLs each warning counts, by the warning's kind.
FILTERS = {
    "high-priority": _high,
    "future-lastmod": lambda site: Url.lastmod > _now(),
    "unreturned-hreflang": lambda site: Url.id.in_(hreflang.unreturned_pages(site)),
}


def url_filter(site: Site, args) -> list:
    """Conditions on Url for the URL list's `health` (a key of FILTERS) and `lastmod` (one
    exact value) parameters; InvalidValue naming the parameter for anything else."""
    conditions = []
    name = args.get("health", "")
    if name:
        if name not in FILTERS:
            raise InvalidValue("health", name, rule_text("must be one of %(choices)s",
                                                          choices=", ".join(FILTERS)))
        conditions.append(FILTERS[name](site))
    lastmod = args.get("lastmod", "")
    if lastmod:
        if len(lastmod) > 25:
            raise InvalidValue("lastmod", lastmod, rule_text(
                "must be a lastmod of at most 25 characters"))
        conditions.append(Url.lastmod == lastmod)
    return conditions


def warnings(session: Session, site: Site, total: int | None = None) -> list[Warning]:
    """The warnings for a site with `total` live URLs (counted when not given)."""
    live = _live(site)
    total = live_count(session, site) if total is None else total
    found: list[Warning] = []
    if not total:
        return [_no_urls()]
    priority = func.coalesce(Url.priority, site.default_priority)
    # "All high" is "none below": the first URL below 0.8 (or without one) ends the search.
    below = select(Url.id).where(*live, or_(priority < HIGH_PRIORITY, priority.is_(None))).limit(1)
    if total >= 10 and session.scalar(below) is None:
        found.append(_all_high(total, session.scalar(select(func.sum(Url.id)).where(*live))))
    future, future_ids = session.execute(select(func.count(), func.sum(Url.id)).where(
        *live, Url.lastmod > _now())).one()
    if future:
        found.append(_future(future, future_ids))
    shared = _majority_lastmod(session, live, total)
    if shared and total >= 10:
        found.append(_shared(shared[0], shared[1], total, shared[2]))
    unreturned = hreflang.unreturned(session, site)
    if unreturned.count:
        found.append(_unreturned(unreturned))
    return found


def _unreturned(unreturned: hreflang.Unreturned) -> Warning:
    return Warning(_("%(count)s hreflang alternates do not list their page back",
                     count=f"{unreturned.count:,}"),
                   _("Search engines ignore an alternate that does not list the page back. "
                     "%(pairs)s Completing the clusters adds the missing links wherever every "
                     "page of a cluster is a URL of this site.", pairs=unreturned.describe()),
                   "dashboard.urls_complete_hreflang", _("Complete hreflang clusters"),
                   kind="unreturned-hreflang",
                   fingerprint=fingerprint(unreturned.count, unreturned.pairs),
                   urls={"health": "unreturned-hreflang"})


def page_warnings(session: Session, sites: Sequence[Site]) -> dict[int, list[Warning]]:
    """`warnings` for each of these sites (a page of a list), in three queries for them all,
    with each site's kept live URL count (`Site.url_count`) as its total."""
    ids = [site.id for site in sites if site.url_count]
    high, future, shared = set(), {}, {}
    if ids:
        live = (Url.site_id == Site.id, Url.deleted_at.is_(None))
        priority = func.coalesce(Url.priority, Site.default_priority)
        below = exists().where(*live, or_(priority < HIGH_PRIORITY, priority.is_(None)))
        high = set(session.scalars(select(Site.id).where(Site.id.in_(ids), Site.url_count >= 10,
                                                         ~below)))
        future = dict(session.execute(
            select(Url.site_id, func.count()).where(Url.site_id.in_(ids), Url.deleted_at.is_(None),
                                                    Url.lastmod > _now())
            .group_by(Url.site_id)).all())
        # A lastmod more than half the live URLs share; grouping reads the (site_id, lastmod,
        # id, deleted_at) index of these sites once.
        count = func.count()
        shared = {site_id: (lastmod, n) for site_id, lastmod, n in session.execute(
            select(Url.site_id, Url.lastmod, count).join(Site, Site.id == Url.site_id)
            .where(Url.site_id.in_(ids), Url.deleted_at.is_(None), Url.lastmod.is_not(None),
                   Site.url_count >= 10)
            .group_by(Url.site_id, Url.lastmod, Site.url_count)
            .having(count * 2 > Site.url_count))}
    found: dict[int, list[Warning]] = {}
    for site in sites:
        if not site.url_count:
            found[site.id] = [_no_urls()]
            continue
        found[site.id] = ([_all_high(site.url_count, 0)] if site.id in high else []) + \
            ([_future(future[site.id])] if site.id in future else []) + \
            ([_shared(*shared[site.id], site.url_count)] if site.id in shared else [])
    return found


def _majority_lastmod(session: Session, live: tuple, total: int) -> tuple[str, int, int] | None:
    """The lastmod more than half of the `total` live URLs share, how many share it, and the
    sum of their ids (which of them, for the warning's fingerprint).

    Sorted by lastmod, such a value fills a run longer than half the list, so it stands in the
    middle: read the middle row, then count its value. Both read only the (site_id, lastmod,
    id, deleted_at) index, where grouping by lastmod would look up every row of a large site.
    """
    middle = session.scalar(select(Url.lastmod).where(*live).order_by(Url.lastmod)
                            .offset(total // 2).limit(1))
    if middle is None:
        return None
    shared, ids = session.execute(select(func.count(), func.sum(Url.id)).where(
        *live, Url.lastmod == middle)).one()
    return (middle, shared, ids) if shared > total / 2 else None


# Stored URLs a page reads to count those the exclusion rules match: a few seconds at most.
EXCLUDED_SCAN = 100_000


def excluded_stored(session: Session, site: Site, rules: Rules | None = None,
                    scan: int | None = None) -> tuple[Counter[str], list[int]]:
    """Live URLs stored before the exclusion rules (the site's, or `rules` to try) refused
    them: how many by each rule, and their ids. The rules apply to URLs as they come in;
    these stay published until deleted. Reads the site's locs once (the first `scan` of
    them when given, and then no more than a web thread may check: MAX_RULE_WORK), a
    thousand at a time."""
    rules = Rules.of(site) if rules is None else rules
    counts: Counter[str] = Counter()
    ids: list[int] = []
    if not rules.exclude:
        return counts, ids
    query = select(Url.id, Url.loc).where(Url.site_id == site.id, Url.deleted_at.is_(None))
    if scan is not None:
        query = query.order_by(Url.id).limit(scan)
    rows = session.execute(query.execution_options(yield_per=1000))
    chars, size = 0, program_size(rules.exclude) or 0
    for url_id, loc in rows:
        chars += searched(loc)
        if scan is not None and chars * size > MAX_RULE_WORK:
            break
        rule = rules.excluding(loc)
        if rule is not None:
            counts[rule] += 1
            ids.append(url_id)
    return counts, ids


def dismiss(session: Session, site: Site, kind: str, print_: str, user_id: int | None) -> None:
    """Hide the site's warning of `kind` while its condition has the fingerprint `print_`
    (the one shown when it was dismissed); the caller commits."""
    if not (len(print_) == 64 and all(c in "0123456789abcdef" for c in print_)):
        raise InvalidValue("fingerprint", print_, rule_text(
            "must be the 64 hex digits the page gave"))
    if not (0 < len(kind) <= 32):
        raise InvalidValue("kind", kind, rule_text("must be the kind of a warning of this site"))
    row = session.get(DismissedWarning, (site.id, kind))
    if row is None:
        row = DismissedWarning(site_id=site.id, kind=kind)
        session.add(row)
    row.fingerprint, row.dismissed_at, row.dismissed_by = print_, utcnow(), user_id


def split_dismissed(session: Session, site: Site,
                    found: list[Warning]) -> tuple[list[Warning], list[Warning]]:
    """(the warnings to show, those dismissed while their condition stays as it was)."""
    dismissed = dict(session.execute(select(DismissedWarning.kind, DismissedWarning.fingerprint)
                                     .where(DismissedWarning.site_id == site.id)).all())
    shown: list[Warning] = []
    hidden: list[Warning] = []
    for warning in found:
        gone = warning.fingerprint is not None and \
            dismissed.get(warning.kind) == warning.fingerprint
        (hidden if gone else shown).append(warning)
    return shown, hidden
