"""A site's stored URLs named by loc, read through the unique (site_id, loc) index whatever
the planner's statistics say.

A large import writes a site's rows inside one transaction, so the statistics still describe
the site as it was before it (often empty). PostgreSQL then planned `site_id = :site AND loc =
ANY(:locs)`, and a join on the array as well, as a read of every row of the site through an
index on site_id alone: about 1 s for each batch of 2,000 locs once the site had 100,000 rows,
slower as it grew. Here each loc is looked up on its own (a LATERAL subquery with LIMIT 1,
which the planner cannot turn into a scan of the site) and the site is a value the planner
does not see (an InitPlan), so it estimates a site's rows from the number of sites rather
than from what it believes of this one; the unique index, which finds at most one row, is
then the cheaper plan. Elsewhere (SQLite) an IN list, which SQLite looks up in that index.
"""

from __future__ import annotations

from collections.abc import Collection

from sqlalchemy import ColumnElement, Row, bindparam, func, select, true
from sqlalchemy.dialects.postgresql import ARRAY
from sqlalchemy.orm import Session

from webapp.many_rows import on_postgresql
from webapp.models import Url


def stored_by_loc(session: Session, site_id: int, locs: Collection[str],
                  columns: tuple[ColumnElement, ...],
                  where: tuple[ColumnElement[bool], ...] = ()) -> list[Row]:
    """`columns` of the site's URLs whose loc is among `locs` (and that meet `where`)."""
    if not locs:
        return []
    if not on_postgresql(session):
        return session.execute(select(*columns).where(
            Url.site_id == site_id, Url.loc.in_(list(locs)), *where)).all()
    wanted = func.unnest(bindparam(None, list(locs), type_=ARRAY(Url.loc.type))) \
        .table_valued("loc").render_derived()
    site = select(bindparam(None, site_id, type_=Url.site_id.type)).scalar_subquery()
    found = select(*columns).where(Url.site_id == site, Url.loc == wanted.c.loc, *where) \
        .limit(1).lateral()
    return session.execute(select(*found.c).select_from(wanted).join(found, true())).all()
