"""When a site is due: its schedule, or URL changes quiet for long enough (or waiting too
long), or a news article ageing out; read from a Site or from the few columns it needs."""

from __future__ import annotations

from datetime import datetime, timedelta

from sqlalchemy import or_, select
from sqlalchemy.orm import Session

from webapp.models import Site, utcnow


def max_wait(site: Site) -> timedelta:
    """The longest that changes wait while edits keep coming: ten delays, at least a minute."""
    return timedelta(seconds=max(10 * site.change_delay, 60))


def due(site, now: datetime) -> tuple[bool, bool]:
    """(its schedule is due, URL changes are ready: quiet for change_delay since the last one,
    or waiting for max_wait since the first; not while a failed run's retry time is ahead).

    `site` is a Site or a row with the same columns."""
    scheduled = site.schedule != "off" and (site.next_run_at is None or site.next_run_at <= now)
    quiet = site.changed_at is None or site.changed_at + timedelta(seconds=site.change_delay) <= now
    overdue = site.pending_since is not None and site.pending_since + max_wait(site) <= now
    retry_passed = site.retry_at is None or site.retry_at <= now
    changed = site.change_seq > site.generated_seq and (quiet or overdue) and retry_passed
    # A news article of the published files turned two days old (sitemaps.news).
    aged = site.news_due_at is not None and site.news_due_at <= now and retry_passed
    return scheduled, changed or aged


def due_site_ids(session: Session, now: datetime, *where) -> list[int]:
    """Ids of the sites due at `now` (of those matching `where`), read from the few columns
    `due` needs, with no object per site."""
    rows = session.execute(select(
        Site.id, Site.schedule, Site.next_run_at, Site.changed_at, Site.change_delay,
        Site.pending_since, Site.change_seq, Site.generated_seq, Site.retry_at,
        Site.news_due_at).where(
        or_(Site.schedule != "off", Site.change_seq > Site.generated_seq,
            Site.news_due_at <= now), *where)
        .order_by(Site.id)).all()
    return [row.id for row in rows if any(due(row, now))]


def changes_ready_at(site: Site) -> datetime | None:
    """When the site's waiting changes will be ready to generate (None: none wait)."""
    if site.change_seq <= site.generated_seq:
        return None
    ready = site.changed_at + timedelta(seconds=site.change_delay) if site.changed_at else utcnow()
    if site.pending_since is not None:
        ready = min(ready, site.pending_since + max_wait(site))
    return max(ready, site.retry_at) if site.retry_at else ready


