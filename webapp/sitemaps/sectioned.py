"""Writing a site with sections (sections.py): each URL's section stored, and the files
written section by section, reusing the last set's unchanged files.

- Each URL's section is stored (`urls.section`, "" for none) so that a section is read with
  one indexed query (site, section, id). `assign_sections` computes it for URLs new since the last
  run, and for every URL when the definition changed (`sites.sections_assigned` remembers
  which one the column holds). A URL's loc never changes, so its section changes only with
  the definition, and the definition is part of a set's layout: a new one is a full run.
- Incremental runs plan per section: the files of the last set are grouped by section, and a
  changed URL dirties only the file of its own section that holds its id. A rewritten file
  that no longer fits its place (emptied, or grown past a file) rewrites its section whole.
"""

from __future__ import annotations

import bisect
import re
from collections.abc import Callable, Iterator
from contextlib import closing
from pathlib import Path

from sqlalchemy import func, select, update
from sqlalchemy.orm import Session

from webapp import many_rows
from webapp.models import GenerationFile, Site, Url
from webapp.sitemaps import incremental
from webapp.sitemaps.build import BuiltFile, Limits, UrlsetWriter, check_index_size
from webapp.sitemaps.sections import definitions, file_stem, group_of, groups, section_of

ASSIGN_BATCH = 10_000


def assign_sections(session: Session, site: Site, upto_seq: int | None = None) -> bool:
    """Store the section of each URL of the site that needs one: every URL when the
    definition changed since the column was computed, else those without one (new URLs, and
    with `upto_seq` only those changed at or before it). True when anything was written."""
    sections = definitions(site.sections)
    if not sections:
        if site.sections_assigned is None:
            return False
        site.sections_assigned = None  # the column is recomputed when sections come back
        return True
    everything = site.sections_assigned != site.sections
    wrote = False
    if everything:
        # Deleted URLs are in no file: they get a section again if they come back.
        wrote = bool(session.execute(update(Url).where(
            Url.site_id == site.id, Url.deleted_at.is_not(None), Url.section.is_not(None))
            .values(section=None).execution_options(synchronize_session=False)).rowcount)
        conditions = [Url.site_id == site.id, Url.deleted_at.is_(None)]
    else:
        conditions = [Url.site_id == site.id, Url.section.is_(None)]
        if upto_seq is not None:
            conditions.append(Url.change_seq <= upto_seq)
    encoding, after = site.encoding or "utf-8", 0
    while True:  # in batches by id: memory stays bounded, and no cursor is read while updating
        # Rows as tuples, without the ORM's work on each.
        rows = session.connection().execute(select(Url.id, Url.loc, Url.section).where(
            *conditions, Url.id > after).order_by(Url.id).limit(ASSIGN_BATCH)).all()
        if not rows:
            break
        after = rows[-1][0]
        moved: dict[str, list[int]] = {}
        for url_id, loc, before in rows:
            name = section_of(sections, loc, encoding)
            if name != before:
                moved.setdefault(name, []).append(url_id)
        # A statement per section and 500 URLs (IN lists; arrays on PostgreSQL): on SQLite
        # a third faster than one executemany of (id, section) rows.
        for name, ids in moved.items():
            for start in range(0, len(ids), 500):
                session.connection().execute(update(Url).where(
                    many_rows.among(session, Url.id, ids[start:start + 500]))
                    .values(section=name))
            wrote = True
    if everything:
        site.sections_assigned = site.sections
        wrote = True
    return wrote


def counts(session: Session, site: Site) -> dict[str, int]:
    """Live URLs per section as assigned ("" for the default files)."""
    return dict(session.execute(
        select(Url.section, func.count()).where(Url.site_id == site.id,
                                                Url.deleted_at.is_(None))
        .group_by(Url.section)).all())


def matching_now(session: Session, site: Site, definition: str | None,
                 limit: int = 20_000) -> dict[str, int] | None:
    """How many live URLs each section of `definition` would hold now ("" the rest), or None
    when the site has more than `limit` URLs (too many to match while a page waits)."""
    sections = definitions(definition)
    if not sections or site.url_count > limit:
        return None
    found = {section.name: 0 for section in sections} | {"": 0}
    for loc in session.scalars(select(Url.loc).where(Url.site_id == site.id,
                                                     Url.deleted_at.is_(None))):
        found[section_of(sections, loc, site.encoding or "utf-8")] += 1
    return found


def plan(session: Session, site: Site, shape: str, kept: Callable[[int], bool],
         ) -> dict[str, incremental.Plan | None] | None:
    """Per group (section, "" the default), what the last set left that can be reused (None:
    write the group whole); None for a full run."""
    source = incremental.last_source(session, site, shape, kept)
    if source is None:
        return None
    stem, names = site.sitemap_url.rsplit("/", 1)[-1].removesuffix(".xml"), groups(site)
    files: dict[str, list[tuple[int, GenerationFile]]] = {name: [] for name in names}
    for file in source.files:
        if file.kind != "urlset":
            continue
        found = group_of(file.name, stem, names)
        if found is None or file.first_url_id is None or file.last_url_id is None:
            return None
        files[found[0]].append((found[1], file))
    changed = session.execute(select(Url.id, Url.section).where(
        Url.site_id == site.id, Url.change_seq > source.change_seq)
        .limit(incremental.MAX_CHANGED + 1)).all()
    if len(changed) > incremental.MAX_CHANGED:
        return None
    plans: dict[str, incremental.Plan | None] = {}
    for name in names:
        ordered = [file for _, file in sorted(files[name], key=lambda pair: pair[0])]
        bounds = [f.last_url_id for f in ordered[:-1]]
        dirty = [False] * len(ordered)
        touched = False
        for url_id, section in changed:
            if section == name:  # None: not assigned yet, in no file and not written now
                touched = True
                if ordered:
                    dirty[bisect.bisect_left(bounds, url_id)] = True
        whole = touched and (not ordered or all(dirty))
        plans[name] = None if whole else incremental.Plan(source, ordered, dirty)
    return plans


def write_files(session: Session, site: Site, shape: str, kept: Callable[[int], bool],
                folder: Path, header: str, limits: Limits,
                entries: Callable[[str, int | None, int | None], Iterator[tuple[int, str]]],
                upto_seq: int | None = None,
                progress: Callable[[int, int], None] | None = None) -> list[BuiltFile]:
    """Write the site's files group by group, reusing the last set's unchanged files;
    `entries(section, after, upto)` gives a section's URLs in an id range. URLs changed
    after `upto_seq` (the run's change number) and not assigned yet wait for the next run."""
    assign_sections(session, site, upto_seq)
    per_group = counts(session, site)
    stem = site.sitemap_url.rsplit("/", 1)[-1].removesuffix(".xml")
    check_index_size(sum(-(-n // limits.max_urls) for n in per_group.values()), limits)
    plans = plan(session, site, shape, kept) or {}
    total, done = sum(per_group.values()), [0]

    def counted(urls: Iterator[tuple[int, str]]) -> Iterator[tuple[int, str]]:
        for entry in urls:
            done[0] += 1
            if progress and done[0] % 10_000 == 0:
                progress(done[0], total)
            yield entry

    files: list[BuiltFile] = []
    for name in groups(site):
        group_stem = file_stem(stem, name)

        def writer(first: int, group_stem: str = group_stem) -> UrlsetWriter:
            return UrlsetWriter(folder, group_stem, header, limits, first_number=first)

        def urls(after, upto, name: str = name) -> Iterator[tuple[int, str]]:
            return counted(entries(name, after, upto))

        written = None
        if plans.get(name) is not None:
            written = incremental.write_changed(plans[name], writer, urls, at_least=0)
            if written is None:  # a rewritten file no longer fits its place: the group again
                _remove_group(folder, group_stem)
        if written is None:
            with closing(urls(None, None)) as stream:
                written = writer(1).write(stream)
        files.extend(written)
    check_index_size(len(files), limits)
    if progress:
        progress(total, total)
    return files


def _remove_group(folder: Path, group_stem: str) -> None:
    pattern = re.compile(re.escape(group_stem) + r"-\d+\.xml(\.gz)?")
    for path in folder.iterdir():
        if pattern.fullmatch(path.name):
            path.unlink()
