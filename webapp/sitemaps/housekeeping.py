"""What leaves the store: a deleted site's files, the sets of generations older than a site
keeps (pruning, with the bodies no set names any more), and a copy of the published set in a
folder a static server reads (export). `SitemapStore` (publish.py) is made of this and the
publishing it does itself."""

from __future__ import annotations

import json
import logging
import os
import shutil
import tempfile
from collections.abc import Sequence
from pathlib import Path

from sqlalchemy import and_, delete, exists, select, true
from sqlalchemy.exc import SQLAlchemyError
from sqlalchemy.orm import Session

from webapp import many_rows
from webapp.models import SUCCEEDED_RUN, FileBody, Generation, Site, StoredFile

log = logging.getLogger("webapp.sitemaps.publish")  # as when this was part of publish.py

EXPORT_MARKER = ".sitemap-export-{key}.json"
# What export gives the files it writes: a static server of another user reads them.
PUBLIC_MODE = 0o644
# A prune looks at a site's newest PRUNE_WINDOW x keep successful runs for sets to drop.
PRUNE_WINDOW = 2


class Housekeeping:
    """The store's removing, pruning and export; `SitemapStore` provides the rest (its
    sessions, cache, file lists and folders)."""

    # Removing ------------------------------------------------------------------------------

    def remove(self, key: str) -> None:
        """Stop serving a deleted site (its rows went with it) and drop the bodies no other
        site's generation names."""
        self.forget(key)
        shutil.rmtree(self.site_folder(key), ignore_errors=True)
        self.cache.forget(key)
        try:
            with self._sessions() as session:
                self._drop_unnamed_bodies(session)
        except SQLAlchemyError:
            log.exception("cannot remove the bodies of a deleted site; the next prune will")

    def prune(self, key: str, keep: int) -> list[int]:
        """Drop the file lists of all but the newest `keep` generations of the site (never the
        published one), then the bodies no generation names any more; the generations dropped."""
        return self.prune_many([key], keep)

    def prune_many(self, keys: Sequence[str], keep: int) -> list[int]:
        """`prune` for many sites, with a few statements for all of them."""
        with self._sessions() as session:
            published = dict(session.execute(select(Site.id, Site.published_generation_id)
                                              .where(Site.storage_key.in_(keys))).all())
            removed = self.stale_generations(session, published, keep)
        if removed:  # the common case: nothing to drop, nothing to look for
            self.drop_generations(removed)
        return removed

    @staticmethod
    def stale_generations(session: Session, published: dict[int, int | None],
                          keep: int) -> list[int]:
        """Of the sites of `published` (site id: its published generation), the generations
        whose files are kept beyond the newest `keep` (never the published one).

        Sets are kept of successful runs alone, and each run prunes: only a site's newest
        `PRUNE_WINDOW * keep` successful runs are looked at, through an index of those, so a
        prune reads as many rows whatever the number of runs the site has had. (A set left
        by more failed prunes in a row than that stays, as it would were it not found.)"""
        if not published:
            return []
        recent = (select(Generation.id).where(Generation.site_id == Site.id, SUCCEEDED_RUN)
                  .order_by(Generation.id.desc()).limit(PRUNE_WINDOW * keep))
        if many_rows.on_postgresql(session):
            window = recent.lateral("recent")
            rows = select(Site.id, window.c.id).select_from(Site).join(window, true())
        else:  # no LATERAL: the window as a list each generation of the site is looked up in
            rows = select(Site.id, Generation.id).join(Generation, and_(
                Generation.site_id == Site.id, SUCCEEDED_RUN,
                Generation.id.in_(recent.correlate(Site))))
        generation = rows.selected_columns[1]
        # Asked row by row, an index probe each: an EXISTS may be planned as a hash of the
        # whole table (of every site's sets), a LIMIT 1 is not.
        stored = (select(StoredFile.generation_id).where(StoredFile.generation_id == generation)
                  .limit(1).correlate_except(StoredFile).scalar_subquery())
        kept: dict[int, list[int]] = {}
        for site_id, generation_id, files in session.execute(rows.add_columns(stored).where(
                many_rows.among(session, Site.id, published))):
            if files is not None:
                kept.setdefault(site_id, []).append(generation_id)
        return [generation for site_id, generations in kept.items()
                for generation in sorted(generations, reverse=True)[keep:]
                if generation != published[site_id]]

    def drop_generations(self, removed: list[int]) -> None:
        """Drop the file lists of generations `removed`, then the bodies no list names."""
        with self._sessions() as session:
            named = set(session.scalars(
                delete(StoredFile).where(many_rows.among(session, StoredFile.generation_id,
                                                         removed))
                .returning(StoredFile.digest).execution_options(synchronize_session=False)))
            session.commit()
            self._drop_unnamed_bodies(session, named)
        try:
            self.cache.drop(named)
        except (SQLAlchemyError, OSError):
            log.exception("cannot drop pruned bodies from the cache")

    @staticmethod
    def _drop_unnamed_bodies(session: Session, among: set[str] | None = None) -> None:
        """Delete bodies no file list names (of `among`, the bodies the dropped lists named:
        a prune looks at those only, not at every body of every site).

        One statement deletes the bodies, and their parts go with them (ON DELETE CASCADE):
        a body a run names again meanwhile (the same content as a pruned file) is either kept
        whole or its delete fails on the foreign key, as that run's insert does if it comes
        second; never a list naming a body without its parts. Left for the next prune then
        (a site's removal looks at every body)."""
        if among is None:  # every body: one pass over both tables
            unnamed = ~exists().where(StoredFile.digest == FileBody.digest)
        elif not among:
            return
        else:  # an index probe a body: an EXISTS may be planned as a hash of every list
            unnamed = many_rows.among(session, FileBody.digest, among) & (
                select(StoredFile.digest).where(StoredFile.digest == FileBody.digest)
                .limit(1).scalar_subquery().is_(None))
        try:
            session.execute(delete(FileBody).where(unnamed)
                            .execution_options(synchronize_session=False))
            session.commit()
        except SQLAlchemyError:
            session.rollback()
            log.warning("bodies no longer named were left for the next prune", exc_info=True)

    # Export --------------------------------------------------------------------------------

    def export(self, key: str, destination: Path) -> list[str]:
        """Copy the published set, gzip twins and stylesheet included, into `destination`.

        A static server reading `destination` meanwhile sees each file old or new, never half
        written; the files an index lists are in place before the index; files that only an
        earlier export wrote (listed in EXPORT_MARKER) are removed, and nothing else is.
        """
        published = self.current_set(key)
        if published is None:
            return []
        destination.mkdir(parents=True, exist_ok=True)
        names = []
        for file in sorted(published.files.values(), key=lambda f: f.kind == "index"):
            self.local(file)
            copies = [(file.gzip_path, file.name + ".gz")] if file.gzip_size is not None else []
            for source, name in [*copies, (file.path, file.name)]:
                handle, draft = tempfile.mkstemp(prefix=f".{name}.", dir=destination)
                os.close(handle)
                shutil.copyfile(source, draft)
                os.chmod(draft, PUBLIC_MODE)
                os.replace(draft, destination / name)
                names.append(name)
        names.sort()
        marker = destination / EXPORT_MARKER.format(key=key)  # sites may share a folder
        try:
            earlier = json.loads(marker.read_text())
        except (FileNotFoundError, ValueError):
            earlier = []
        for name in set(earlier) - set(names):
            if "/" not in name:
                (destination / name).unlink(missing_ok=True)
        marker.write_text(json.dumps(names))
        return names
