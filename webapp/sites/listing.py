"""Lists of thousands of sites: search, sort, a page at a time, and what a page shows.

Every figure a list sorts by is read per site from an index (the newest run, the newest
announcement per engine) or from the site's row (its live URL count, `Site.url_count`), so a
page costs the same with ten sites or ten thousand, and nothing counts every URL per view.
The checks that read a site's URLs (`urls.health`) run only for the sites of the page shown,
in a few queries for all of them.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field

from flask_babel import gettext as _
from sqlalchemy import Select, case, exists, func, literal_column, or_, select
from sqlalchemy.orm import Session

from webapp.models import Delivery, Generation, Site, Url, utcnow
from webapp.notify import ENGINES
from webapp.urls import health

# How a list of sites can be sorted: by name (A to Z), newest run first, most problems first.
SORTS = {"name": "Name", "last_run": "Last run", "problems": "Problems"}
MAX_SEARCH = 200  # characters: more than any name (200) or host a person types
ENGINE_NAMES = {"indexnow": "IndexNow", "gsc": "Search Console", "ping": "ping"}
FAILED = literal_column("'failed'")  # a literal, so that the partial indexes on failures apply


@dataclass
class Row:
    """A site of a page and what the list shows about it."""

    site: Site
    last_run: Generation | None = None
    announced: list[Delivery] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)


def matching(text: str):
    """Sites whose name or base URL contains `text`, ignoring case, taken literally (a % or _
    typed is looked for as such)."""
    text = text.strip()
    if not text:
        return True
    return or_(Site.name.icontains(text, autoescape=True),
               Site.base_url.icontains(text, autoescape=True))


def _newest(column, model=Generation, *where):
    """`column` of the site's newest `model` row: one probe of its (site_id, ..., id) index."""
    return (select(column).where(model.site_id == Site.id, *where)
            .order_by(model.id.desc()).limit(1).scalar_subquery())


def problem_score():
    """How many problems a site has that can be told without reading its URLs: a failed last
    run, each engine whose last announcement failed, no URLs, lastmods in the future.

    Most sites have never failed: one probe of the (tiny) index of failed runs, and one of
    failed announcements, tells so, and only the others have their newest rows looked at."""
    ever_failed = exists().where(Generation.site_id == Site.id, Generation.status == FAILED)
    run = case((ever_failed, case((_newest(Generation.status) == "failed", 1), else_=0)),
               else_=0)
    announcements_failed = exists().where(Delivery.site_id == Site.id, Delivery.status == FAILED)
    engines = sum(case((_newest(Delivery.status, Delivery, Delivery.engine == engine) == "failed",
                        1), else_=0) for engine in ENGINES)
    announcements = case((announcements_failed, engines), else_=0)
    now = utcnow().strftime("%Y-%m-%dT%H:%M:%S+00:00")
    future = exists().where(Url.site_id == Site.id, Url.lastmod > now, Url.deleted_at.is_(None))
    return run + announcements + case((Site.url_count == 0, 1), else_=0) + case((future, 1),
                                                                                  else_=0)


def _ordered(query: Select, sort: str) -> Select:
    if sort == "last_run":
        return query.order_by(_newest(Generation.started_at).desc().nulls_last(), Site.name,
                              Site.id)
    if sort == "problems":
        return query.order_by(problem_score().desc(), Site.name, Site.id)
    return query.order_by(Site.name, Site.id)


def page(session: Session, text: str = "", sort: str = "name", offset: int = 0,
         limit: int = 50) -> tuple[list[Row], int]:
    """The sites of one page of the list (search `text`, order `sort`), with what the list
    shows about each, and how many sites match in all."""
    where = matching(text)
    total = session.scalar(select(func.count()).select_from(Site).where(where)) or 0
    sites = session.scalars(_ordered(select(Site).where(where), sort)
                            .offset(offset).limit(limit)).all()
    return describe(session, sites), total


def latest_runs(session: Session, site_ids: Sequence[int]) -> dict[int, Generation]:
    """The newest run of each of these sites that has one: one query."""
    if not site_ids:
        return {}
    newest = (select(func.max(Generation.id)).where(Generation.site_id.in_(site_ids))
              .group_by(Generation.site_id))
    return {run.site_id: run for run in session.scalars(
        select(Generation).where(Generation.id.in_(newest)))}


def latest_announcements(session: Session, site_ids: Sequence[int]) -> dict[int, list[Delivery]]:
    """The newest announcement per engine of each of these sites: one query."""
    if not site_ids:
        return {}
    newest = (select(func.max(Delivery.id)).where(Delivery.site_id.in_(site_ids))
              .group_by(Delivery.site_id, Delivery.engine))
    found: dict[int, list[Delivery]] = {}
    for delivery in session.scalars(select(Delivery).where(Delivery.id.in_(newest))
                                    .order_by(Delivery.engine)):
        found.setdefault(delivery.site_id, []).append(delivery)
    return found


def describe(session: Session, sites: Iterable[Site]) -> list[Row]:
    """What a list shows about each site: its newest run and announcements, and its problems
    (the same the site's overview names: a failed run or announcement, health warnings)."""
    sites = list(sites)
    ids = [site.id for site in sites]
    runs, announced = latest_runs(session, ids), latest_announcements(session, ids)
    warnings = health.page_warnings(session, sites)
    rows = []
    for site in sites:
        row = Row(site, runs.get(site.id), announced.get(site.id, []))
        if row.last_run is not None and row.last_run.status == "failed":
            row.problems.append(_("The last generation failed"))
        row.problems += [_("The last %(engine)s announcement failed",
                           engine=ENGINE_NAMES.get(d.engine, d.engine))
                         for d in row.announced if d.status == "failed"]
        row.problems += [warning.title for warning in warnings[site.id]]
        rows.append(row)
    return rows
