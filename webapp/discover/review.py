"""The review list a discovery crawl leaves: what it found (new, known, excluded), accepting
new URLs into the site (all, or those under a prefix) and ignoring those a pattern matches.

Accepted URLs go through the same upsert as the API's, so every rule of the site applies to
them again. The caller commits.
"""

from __future__ import annotations

from collections import Counter

from sqlalchemy import func, select, update
from sqlalchemy.orm import Session

from webapp.models import Discovery, Site
from webapp.urls import MAX_ITEMS, Rules, SyncReport, check_rule, prefix_of, upsert_urls

PAGE = 100


def counts(session: Session, site: Site) -> dict[str, int]:
    """Rows of the review list by verdict (new, known, excluded) and by state (what fetching
    found: redirected, left, duplicate, disallowed, failed, skipped...), and pending new."""
    found: Counter[str] = Counter()
    for verdict, state, review, n in session.execute(
            select(Discovery.verdict, Discovery.state, Discovery.review, func.count())
            .where(Discovery.site_id == site.id)
            .group_by(Discovery.verdict, Discovery.state, Discovery.review)):
        found[verdict or state] += n
        if verdict == "new" and review == "pending":
            found["pending"] += n
    return dict(found)


def rows(session: Session, site: Site, show: str,
         after: int = 0) -> tuple[list[Discovery], bool]:
    """A page of the list, and whether more follow: `show` is a verdict (new, known,
    excluded) or `other` (what was not found: redirects, failures...), in the order found."""
    query = select(Discovery).where(Discovery.site_id == site.id, Discovery.id > after)
    if show == "other":
        query = query.where(Discovery.verdict.is_(None))
    else:
        query = query.where(Discovery.verdict == show)
    found = list(session.scalars(query.order_by(Discovery.id).limit(PAGE + 1)))
    return found[:PAGE], len(found) > PAGE


def accept(session: Session, site: Site, prefix: str | None = None) -> SyncReport:
    """Add the pending new URLs (those starting with `prefix`, a path or a URL, when given) to
    the site; each is marked accepted, or keeps the reason it was refused."""
    query = select(Discovery).where(Discovery.site_id == site.id, Discovery.verdict == "new",
                                    Discovery.review == "pending")
    if prefix and prefix.strip():
        start = prefix_of(site, prefix)
        query = query.where(Discovery.loc >= start, Discovery.loc < start + "\U0010ffff")
    total = SyncReport()
    pending = list(session.scalars(query.order_by(Discovery.id)))
    for begin in range(0, len(pending), MAX_ITEMS):
        chunk = pending[begin:begin + MAX_ITEMS]
        report = upsert_urls(session, site, [{"loc": row.loc} for row in chunk])
        refused = {error.index: error.message for error in report.errors}
        for index, row in enumerate(chunk):
            if index in refused:
                row.note = refused[index]
            else:
                row.review = "accepted"
        total.created += report.created
        total.updated += report.updated
        total.unchanged += report.unchanged
        total.errors += report.errors
    session.flush()
    return total


def ignore(session: Session, site: Site, pattern: str) -> int:
    """Mark the pending new URLs whose path the pattern (a glob or `re:` expression, as in
    `exclude`) matches as ignored; how many were."""
    rule = check_rule(pattern.strip(), field="pattern")
    matcher = Rules(exclude=(rule,), encoding=site.encoding)
    ids = [row_id for row_id, loc in session.execute(select(Discovery.id, Discovery.loc).where(
        Discovery.site_id == site.id, Discovery.verdict == "new", Discovery.review == "pending"))
        if matcher.excluding(loc)]
    for begin in range(0, len(ids), 1000):
        session.execute(update(Discovery).where(Discovery.id.in_(ids[begin:begin + 1000]))
                        .values(review="ignored"))
    return len(ids)
