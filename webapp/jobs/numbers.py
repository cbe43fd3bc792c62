"""What people call a generation: its number within its site, the site's first run being 1
(`Generation.number`). The id is the installation's: it stays in URLs and the ledger."""

from __future__ import annotations

from collections.abc import Iterable

from sqlalchemy import select
from sqlalchemy.orm import Session

from webapp import many_rows
from webapp.errors import NotFound
from webapp.models import Generation, Site


def next_numbers(session: Session, site_ids: Iterable[int]) -> dict[int, int]:
    """{site id: the number its next generation takes}, in one query. The caller holds the
    sites' leases, so no other run of theirs takes a number meanwhile (and the unique index
    on (site_id, number) would refuse it)."""
    wanted = sorted(set(site_ids))
    # Each site's newest number by one probe of the (site_id, number) index: as many rows
    # read after forty runs as after six (a MAX over a GROUP BY would read every run).
    newest = (select(Generation.number).where(Generation.site_id == Site.id)
              .order_by(Generation.number.desc()).limit(1).scalar_subquery())
    last = dict(session.execute(select(Site.id, newest)
                                .where(many_rows.among(session, Site.id, wanted))).all())
    return {site_id: (last.get(site_id) or 0) + 1 for site_id in wanted}


def site_numbers(session: Session, site_id: int, ids: Iterable[int | None]) -> dict[int, int]:
    """{generation id: its number within the site} for these ids, in one query."""
    wanted = sorted({i for i in ids if i is not None})
    if not wanted:
        return {}
    return dict(session.execute(select(Generation.id, Generation.number).where(
        Generation.site_id == site_id, Generation.id.in_(wanted))).all())


def by_number(session: Session, site: Site, number: int) -> Generation:
    """The site's generation with this number; NotFound naming the number otherwise."""
    found = session.scalar(select(Generation).where(Generation.site_id == site.id,
                                                    Generation.number == number))
    if found is None:
        raise NotFound(f"site {site.slug} has no generation {number} (`flask --app webapp "
                       f"sitemaps history {site.slug}` lists them)")
    return found
