"""What a site owner should hear of verification: how many live URLs each outcome holds now
(each a link to them on the URL list), the last run and the one under way, and a warning when
given lastmods move while the pages do not."""

from __future__ import annotations

from dataclasses import dataclass

from sqlalchemy import func, select
from sqlalchemy.orm import Session

from webapp.models import Site, Url, UrlCheck, VerifyRun

# The outcomes health counts, in the order the page shows them (ok last).
SHOWN = ("broken", "redirected", "noindex", "canonical", "unreachable", "blocked", "ok")
CHECKS = frozenset(SHOWN)


@dataclass(frozen=True)
class Health:
    counts: dict[str, int]  # live URLs by the outcome of their last check
    unchecked: int  # live URLs never checked
    last: VerifyRun | None  # the newest finished run
    running: VerifyRun | None  # a run under way (or stopped unfinished)


def health(session: Session, site: Site) -> Health:
    counts = dict(session.execute(
        select(UrlCheck.outcome, func.count()).join(Url, Url.id == UrlCheck.url_id)
        .where(UrlCheck.site_id == site.id, Url.deleted_at.is_(None))
        .group_by(UrlCheck.outcome)).all())
    checked = sum(counts.values())
    runs = session.scalars(select(VerifyRun).where(VerifyRun.site_id == site.id)
                           .order_by(VerifyRun.id.desc()).limit(5)).all()
    last = next((run for run in runs if run.status == "done"), None)
    running = runs[0] if runs and runs[0].status != "done" else None
    return Health(counts, max(site.url_count - checked, 0), last, running)


def dates_moved_warning(run: VerifyRun | None) -> int:
    """How many URLs the last run found with a new given lastmod and the same content."""
    return run.dates_moved if run is not None else 0


def with_check(query, check: str, site_id: int):
    """The URL list's `check=` filter: live URLs whose last check had this outcome."""
    return query.join(UrlCheck, UrlCheck.url_id == Url.id).where(
        UrlCheck.site_id == site_id, UrlCheck.outcome == check)
