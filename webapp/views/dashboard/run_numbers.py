"""What people call a generation: its number within its site (the site's first run is 1),
while URLs keep the global id. Generations are never deleted, so a number never changes."""

from __future__ import annotations

from collections.abc import Iterable

from sqlalchemy import func, select
from sqlalchemy.orm import Session, aliased

from webapp.models import Generation


def site_numbers(session: Session, site_id: int, ids: Iterable[int | None]) -> dict[int, int]:
    """{generation id: its number within the site} for these ids, in one query."""
    wanted = sorted({i for i in ids if i is not None})
    if not wanted:
        return {}
    earlier = aliased(Generation)
    count = (select(func.count()).select_from(earlier)
             .where(earlier.site_id == site_id, earlier.id <= Generation.id)
             .scalar_subquery())
    return dict(session.execute(select(Generation.id, count).where(
        Generation.site_id == site_id, Generation.id.in_(wanted))).all())
