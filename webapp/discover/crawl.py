"""A discovery crawl: from a site's base URL (and the URLs its sitemap lists now), follow the
links of the site's pages, within its scope and its robots.txt, until a limit is reached.

The frontier is the site's `discoveries` rows, so memory does not grow with the site: the
crawl holds one page at a time and asks the database what comes next (breadth first: lowest
depth, then the order found). One request at a time, with a pause between two
(`DISCOVER_DELAY_MS`, or the robots.txt Crawl-delay when longer). Every request goes through
`webapp.outbound`; only URLs inside the site's base URL are fetched, a redirect elsewhere is
recorded and not followed. Each page is committed as it is done.

robots.txt is read before the last review list is replaced: when this server's own rules
refuse it (OUTBOUND_ALLOW), the crawl stops and the list stays as it was; a page refused so
later (its name now resolves elsewhere) stops the crawl there too, with what was found before.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, replace
from urllib.parse import urljoin

from flask import Flask
from sqlalchemy import delete, func, select, update
from sqlalchemy.dialects import postgresql, sqlite
from sqlalchemy.orm import Session

from webapp.db import new_session
from webapp.discover.pages import is_html, read_page
from webapp.discover.review import accept
from webapp.discover.robots import USER_AGENT, Robots, load_robots
from webapp.errors import InvalidValue, NotFound, raise_all, rule_text
from webapp.many_rows import among, on_postgresql
from webapp.models import Discovery, Site, Url
from webapp.outbound import OutboundError, Policy, StoppedByOwnRules, get_page, plain_reason
from webapp.protocol import Scope
from webapp.said import Line, said
from webapp.urls import Rules

MAX_PAGE_BYTES = 2 << 20  # the links of a page are in its first 2 MiB
MAX_FRONTIER = 100_000  # URLs waiting to be fetched or excluded: a limit on what a crawl writes
MAX_LINKS_PER_PAGE = 5_000  # the links of one page taken, after removing repeats
MAX_NOTE = 2048  # a redirect target or canonical kept as a row's note


@dataclass(frozen=True)
class Limits:
    """Where a crawl stops: pages fetched, links followed from the start, minutes."""

    max_pages: int = 100
    max_depth: int = 3
    max_minutes: float = 5.0


def check_limits(max_pages: object = 100, max_depth: object = 3,
                 max_minutes: object = 5) -> Limits:
    """Limits from text or numbers, or InvalidValue naming each one out of range."""
    errors: list[InvalidValue] = []

    def number(name: str, value: object, kind: type, low: float, high: float):
        try:
            result = kind(str(value).strip())
        except ValueError:
            result = None
        if result is None or not low <= result <= high:
            bounds = {"low": f"{low:g}", "high": f"{high:g}"}
            errors.append(InvalidValue(name, value, rule_text(
                "must be a whole number from %(low)s to %(high)s", **bounds) if kind is int
                else rule_text("must be a number from %(low)s to %(high)s", **bounds)))
        return result

    limits = Limits(number("max_pages", max_pages, int, 1, 10_000),
                    number("max_depth", max_depth, int, 0, 50),
                    number("max_minutes", max_minutes, float, 0.01, 120))
    raise_all(errors)
    return limits


@dataclass
class CrawlReport:
    fetched: int = 0
    new: int = 0
    known: int = 0
    excluded: int = 0
    accepted: int = 0
    stopped_by: str | None = None  # "pages" or "time" when a limit ended the crawl
    robots: Line | None = None  # why robots.txt forbids everything (webapp.said), when it does
    links_left: int = 0  # links beyond MAX_LINKS_PER_PAGE on a page, not followed

    @property
    def found(self) -> int:
        return self.new + self.known + self.excluded

    def line(self) -> str:
        """The one-line outcome the command ends with."""
        return (f"{self.found} found: {self.new} new, {self.known} known, "
                f"{self.excluded} excluded")

    def cut(self) -> str | None:
        """What MAX_LINKS_PER_PAGE left out, when it did."""
        if not self.links_left:
            return None
        return (f"{self.links_left} links not followed: a page's first {MAX_LINKS_PER_PAGE:,} "
                "distinct links are taken")


def _insert_new(session: Session):
    """INSERT into discoveries that leaves a (site, loc) already there as it is."""
    dialect = postgresql if on_postgresql(session) else sqlite
    return dialect.insert(Discovery).on_conflict_do_nothing(
        index_elements=["site_id", "loc"])


def _as_note(text: str) -> str:
    """A URL the site gave (a redirect target, a canonical) as a row's note: without NUL,
    which PostgreSQL refuses in text, and at most MAX_NOTE characters."""
    return text.replace("\x00", "")[:MAX_NOTE]


class _Crawl:
    def __init__(self, session: Session, site: Site, limits: Limits, policy: Policy,
                 delay: float, clock: Callable[[], float]):
        self.session, self.site, self.limits, self.policy = session, site, limits, policy
        self.clock = clock
        self.scope, self.rules = Scope(site.base_url, site.encoding), Rules.of(site)
        self.delay, self.report = delay, CrawlReport()
        self.ends = self.clock() + limits.max_minutes * 60
        self.robots = Robots(None)

    # --- the frontier ----------------------------------------------------------------------

    def place(self, raw: str) -> str | None:
        """A link as a loc of the site (parameters stripped), or None when it is outside."""
        try:
            loc, _ = self.scope.normalize_noting(raw)
        except InvalidValue:
            return None
        return self.rules.strip(loc)[0]

    def add(self, locs: list[str], depth: int) -> None:
        """Queue the locs the frontier does not have yet; one a rule excludes is recorded as
        found and excluded, and never fetched. Excluded rows count toward MAX_FRONTIER as
        queued ones do; at most MAX_LINKS_PER_PAGE locs of one page are taken (the others are
        counted in the report), written with one statement, and none once time is up."""
        locs = list(dict.fromkeys(locs))
        if not locs or depth > self.limits.max_depth or self.clock() >= self.ends:
            return
        if len(locs) > MAX_LINKS_PER_PAGE:
            self.report.links_left += len(locs) - MAX_LINKS_PER_PAGE
            locs = locs[:MAX_LINKS_PER_PAGE]
        have = set(self.session.scalars(select(Discovery.loc).where(
            Discovery.site_id == self.site.id, among(self.session, Discovery.loc, locs))))
        written = self.session.scalar(select(func.count()).select_from(Discovery).where(
            Discovery.site_id == self.site.id,
            Discovery.state.in_(("queued", "excluded")))) or 0
        rows = []
        for loc in locs:
            if loc in have:
                continue
            if written >= MAX_FRONTIER:
                break
            rule = self.rules.excluding(loc)
            if rule is not None:
                rows.append({"state": "excluded", "verdict": "excluded", "note": rule,
                             "loc": loc})
                self.report.excluded += 1
            else:
                rows.append({"state": "queued", "verdict": None, "note": None, "loc": loc})
            written += 1
        if rows:
            self.session.flush()
            self.session.execute(_insert_new(self.session), [
                {**row, "site_id": self.site.id, "depth": depth, "review": "pending"}
                for row in rows])  # a loc another crawl of the site added meanwhile is kept

    def next(self) -> Discovery | None:
        return self.session.scalar(select(Discovery).where(
            Discovery.site_id == self.site.id, Discovery.state == "queued")
            .order_by(Discovery.depth, Discovery.id).limit(1))

    # --- one page --------------------------------------------------------------------------

    def visit(self, row: Discovery) -> None:
        if not self.robots.allows(row.loc):
            row.state = "disallowed"  # robots.txt
            return
        seconds = min(self.policy.timeout, self.ends - self.clock())
        try:
            page = get_page(row.loc, replace(self.policy, timeout=max(seconds, 0.05)),
                            max_bytes=MAX_PAGE_BYTES, user_agent=USER_AGENT)
        except OutboundError as exc:
            if exc.by_own_rules:  # refused here: what the page holds is not known
                raise StoppedByOwnRules(said(
                    "the crawl stopped at %(url)s: %(reason)s; the review list holds what was "
                    "found before it", url=row.loc, reason=plain_reason(exc)),
                    exc.by_own_rules) from None
            row.state, row.note = "failed", exc.meaning
            return
        finally:
            self.report.fetched += 1
        if 300 <= page.status < 400 and page.location:
            target = urljoin(row.loc, page.location)
            inside = self.place(target)
            row.note = _as_note(target)
            if inside is None:
                row.state = "left"  # recorded, not followed
                return
            row.state = "redirected"
            self.add([inside], row.depth)
            return
        if page.status != 200:
            row.state, row.note = "failed", f"answered {page.status}"
            return
        if not is_html(page.content_type):
            self.found(row)
            return
        links = read_page(row.loc, page.content_type, page.body,
                          page.headers.get("x-robots-tag", ""))
        canonical = links.canonical and (self.place(links.canonical) or links.canonical)
        if canonical and canonical != row.loc:
            row.state, row.note = "duplicate", _as_note(canonical)  # the canonical is what is recorded
            if self.place(canonical):
                self.add([canonical], row.depth)
        elif links.noindex:
            row.state = "noindex"
        else:
            self.found(row)
        if not links.nofollow:
            self.add([loc for loc in map(self.place, links.links + links.alternates) if loc],
                     row.depth + 1)

    def found(self, row: Discovery) -> None:
        known = self.session.scalar(select(Url.id).where(
            Url.site_id == self.site.id, Url.loc == row.loc, Url.deleted_at.is_(None)))
        row.state, row.verdict = "found", "known" if known else "new"
        if known:
            self.report.known += 1
        else:
            self.report.new += 1

    # --- the whole crawl -------------------------------------------------------------------

    def start(self, seeds: list[str]) -> None:
        self.robots = load_robots(self.site.base_url, self.policy)  # before the list goes
        self.session.execute(delete(Discovery).where(Discovery.site_id == self.site.id))
        self.add([self.site.base_url], 0)
        self.add([loc for loc in map(self.place, seeds) if loc], min(1, self.limits.max_depth))
        self.session.commit()
        self.report.robots = self.robots.reason
        self.delay = max(self.delay, self.robots.delay())

    def run(self, progress: Callable[[int, int], None] | None) -> CrawlReport:
        while True:
            if self.report.fetched >= self.limits.max_pages:
                self.report.stopped_by = "pages" if self.next() else None
                break
            if self.clock() >= self.ends:
                self.report.stopped_by = "time"
                break
            row = self.next()
            if row is None:
                break
            if self.report.fetched and self.delay:
                time.sleep(min(self.delay, max(0.0, self.ends - self.clock())))
            try:
                self.visit(row)
            except StoppedByOwnRules:
                self.session.rollback()
                self.skip_queued()
                raise
            self.session.commit()
            if progress:
                progress(self.report.fetched, self.limits.max_pages)
        self.skip_queued()
        return self.report

    def skip_queued(self) -> None:
        """What is still queued was not fetched: a limit was reached, or the crawl stopped."""
        self.session.execute(update(Discovery).where(
            Discovery.site_id == self.site.id, Discovery.state == "queued")
            .values(state="skipped"))
        self.session.commit()


def sitemap_seeds(session: Session, site: Site, limit: int) -> list[str]:
    """The URLs the site's sitemap lists now (its live URLs), at most `limit` of them."""
    return list(session.scalars(select(Url.loc).where(
        Url.site_id == site.id, Url.deleted_at.is_(None)).order_by(Url.id).limit(limit)))


def crawl(app: Flask, site_id: int, limits: Limits,
          progress: Callable[[int, int], None] | None = None,
          clock: Callable[[], float] = time.monotonic) -> CrawlReport:
    """Crawl a site and leave what it found in its review list (replacing the last one); with
    the site's `discover_mode` `add`, the new URLs are added at once. Commits as it goes.
    The time limit is read from `clock`."""
    policy = Policy.of(app.config)
    with new_session(app) as session:
        site = session.get(Site, site_id)
        if site is None:
            raise NotFound("the site was deleted")
        work = _Crawl(session, site, limits, policy, app.config["DISCOVER_DELAY_MS"] / 1000,
                      clock)
        work.start(sitemap_seeds(session, site, limits.max_pages))
        report = work.run(progress)
        if site.discover_mode == "add":
            report.accepted = accept(session, site).created
            session.commit()
        return report
