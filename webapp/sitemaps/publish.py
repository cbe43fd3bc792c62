"""Published sitemap sets, shared by every node through the database.

A generation's files are rows of `stored_files` (name, kind, digest, sizes, lastmod), and each
file's content is stored once per digest in `file_bodies` (its gzip bytes, in parts), so a file
that did not change between generations is not stored again. Which generation a site serves is
`sites.published_generation_id`, moved by a compare-and-set that only goes forward, in the
transaction that records the run as succeeded: publishing is that commit. A reader sees the old
set or the new one, never a mix; a failed or killed run never commits, so it changes nothing;
an older generation never replaces a newer one.

Each node keeps a cache of bodies in its own folder (cache.py), fetched from the database when
first needed. A node reads which generation a site publishes at most once per `ttl` seconds,
and keeps each generation's file list in memory (it never changes). The staging folders where
a worker writes a generation are local scratch space under the same folder.
"""

from __future__ import annotations

import logging
import os
import shutil
import threading
import time
from collections import OrderedDict
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from datetime import datetime
from pathlib import Path
from typing import NamedTuple

from sqlalchemy import ColumnElement, bindparam, case, delete, insert, or_, select, update
from sqlalchemy.exc import SQLAlchemyError
from sqlalchemy.orm import Session
from werkzeug.http import http_date

from webapp import many_rows
from webapp.db import after_commit
from webapp.models import FileBody, FileBodyPart, Generation, Site, StoredFile, utcnow
from webapp.sitemaps.build import gzip_writer
from webapp.sitemaps.cache import (
    PART_BYTES,
    TRIM_GRACE,
    MissingBody,
    NodeCache,
    PublishedFile,
    PublishedSet,
)
from webapp.sitemaps.housekeeping import Housekeeping

log = logging.getLogger(__name__)

STAGING = "staging"
SETS_KEPT = 1024  # file lists kept in memory per process, the most recently used
TRIM_SECONDS = 600  # how often a serving node drops cached bodies no kept generation names


class Entry(NamedTuple):
    """A file of a set about to be published: its body is staged, or stored already."""

    name: str
    kind: str
    sha256: str
    size: int
    gzip_size: int | None  # None: no `.gz` twin is served (the stylesheet)
    lastmod: str | None


def same_as_published(published: PublishedSet | None, generation_id: int | None,
                      stylesheet: Entry | None) -> bool:
    """Whether generation `generation_id` is the set being served, with the same stylesheet
    (or none): the caller has checked that the sitemap files have that generation's digests."""
    if published is None or published.generation != generation_id:
        return False
    return same_stylesheet([(f.name, f.sha256) for f in published.files.values()
                            if f.kind == "stylesheet"], stylesheet)


def published_forward(generation: ColumnElement[int]) -> ColumnElement[int]:
    """A site's published generation moved to `generation` unless a newer one is published
    already (or `generation` is NULL: left as it is), as the value of an UPDATE of the site's
    row that sets others too: the compare-and-set of `publish_stored`, which only goes
    forward."""
    current = Site.published_generation_id
    return case((or_(current.is_(None), current < generation), generation), else_=current)


def same_stylesheet(served: list[tuple[str, str]], stylesheet: Entry | None) -> bool:
    """Whether the (name, digest) of the stylesheets served are those of `stylesheet`."""
    return served == ([(stylesheet.name, stylesheet.sha256)] if stylesheet else [])


class NewSet(NamedTuple):
    """A set to publish whose bodies are stored: a site's generation and its files."""

    key: str
    generation_id: int
    entries: Sequence[Entry]


def _insert_ignoring_conflicts(session: Session):
    """An INSERT into file_bodies in the session's dialect, which can skip rows that exist."""
    if session.get_bind().dialect.name == "postgresql":
        from sqlalchemy.dialects.postgresql import insert as dialect_insert
    else:
        from sqlalchemy.dialects.sqlite import insert as dialect_insert
    return dialect_insert(FileBody.__table__)


def _insert_ignoring_duplicates(session: Session, values: dict) -> bool:
    """Insert a body's row unless one exists (or another transaction is inserting it: then
    wait for that one); whether this call inserted it."""
    statement = _insert_ignoring_conflicts(session).values(**values).on_conflict_do_nothing(
        index_elements=["digest"]).returning(FileBody.__table__.c.digest)
    return session.execute(statement).first() is not None


class SitemapStore(Housekeeping):
    """Sets in the database, bodies cached under `root`; `sessions()` opens a session."""

    def __init__(self, root: str | os.PathLike[str], sessions: Callable[[], Session],
                 ttl: float = 1.0):
        self.root, self._sessions, self.ttl = Path(root), sessions, ttl
        self.cache = NodeCache(self.root, sessions)
        self.bodies = self.cache.bodies
        self._current: dict[str, tuple[float, int | None]] = {}  # key -> (read at, generation)
        # Immutable file lists by (storage key, generation id): SQLite gives a deleted row's id
        # to the next row, so an id alone may name another site's set cached before.
        self._sets: OrderedDict[tuple[str, int], PublishedSet] = OrderedDict()
        self._lock = threading.Lock()  # one reader of the database at a time refreshes
        self._trimmed_at = time.monotonic()

    # Reading what is published -------------------------------------------------------------

    def published(self, key: str, max_age: float | None = None) -> PublishedSet | None:
        """The set a site serves: which generation is read from the database at most once per
        `ttl` seconds (or `max_age`, when shorter), its file list once (it never changes).

        While the database does not answer, the last generation read goes on being served.
        """
        now = time.monotonic()
        seen = self._current.get(key)
        limit = self.ttl if max_age is None else min(self.ttl, max_age)
        if seen is None or now - seen[0] >= limit:
            # Another thread refreshing: serve what is known rather than queue behind it.
            if self._lock.acquire(blocking=seen is None):
                try:
                    seen = self._refresh(key, seen)
                finally:
                    self._lock.release()
            if now - self._trimmed_at >= TRIM_SECONDS:
                self._trimmed_at = now
                self._trim_quietly()
        if seen is None or seen[1] is None:
            return None
        cached = self._sets.get((key, seen[1]))
        if cached is not None:
            try:
                self._sets.move_to_end((key, seen[1]))
            except KeyError:  # crowded out by another thread a moment ago: it is still right
                pass
            return cached
        try:
            # No rows: a site without URLs published an empty set (the published generation
            # is never pruned), kept too, so asking for its files queries nothing.
            found = self.generation_set(key, seen[1]) or PublishedSet(seen[1], {})
        except SQLAlchemyError:
            log.exception("cannot read the files of generation %s", seen[1])
            return None
        self.cache.remember(key, found)
        self._sets[key, seen[1]] = found
        while len(self._sets) > SETS_KEPT:
            self._sets.popitem(last=False)
        return found

    def _refresh(self, key: str, seen: tuple[float, int | None] | None
                 ) -> tuple[float, int | None] | None:
        try:
            generation = self.current_generation(key)
        except SQLAlchemyError:
            log.exception("cannot read the published generation; serving the last one known")
            if seen is None:  # nothing read by this process yet: what this node read last
                recalled = self.cache.recall(key)
                if recalled is None:
                    return None
                self._sets[key, recalled.generation] = recalled
                seen = (0.0, recalled.generation)
            generation = seen[1]
        fresh = (time.monotonic(), generation)
        self._current[key] = fresh
        return fresh

    def forget(self, key: str) -> None:
        """Read the site's published generation again at its next request."""
        self._current.pop(key, None)

    def current_generation(self, key: str) -> int | None:
        """The id of the published generation, read now, or None when nothing is published."""
        with self._sessions() as session:
            return session.scalar(select(Site.published_generation_id)
                                  .where(Site.storage_key == key))

    def current_set(self, key: str) -> PublishedSet | None:
        """The published set as the database says it is now, for workers (no cache)."""
        generation = self.current_generation(key)
        return None if generation is None else self.generation_set(key, generation)

    def generation_set(self, key: str, generation: int) -> PublishedSet | None:
        """The files of any generation still kept, published or not; None once pruned."""
        with self._sessions() as session:
            rows = session.execute(
                select(StoredFile).join(Generation, Generation.id == StoredFile.generation_id)
                .join(Site, Site.id == Generation.site_id)
                .where(StoredFile.generation_id == generation, Site.storage_key == key)
            ).scalars().all()
        if not rows:
            return None
        files = {}
        for row in rows:
            lastmod = datetime.fromisoformat(row.lastmod) if row.lastmod else None
            files[row.name] = PublishedFile(
                name=row.name, kind=row.kind, path=self.bodies / row.digest, sha256=row.digest,
                size=row.size, gzip_size=row.gzip_size, lastmod=lastmod,
                last_modified=http_date(lastmod) if lastmod else None)
        return PublishedSet(generation, files)

    def local(self, file: PublishedFile) -> Path:
        """The file's content on this node (see NodeCache.local)."""
        return self.cache.local(file)

    def view_path(self, file: PublishedFile, variant: str) -> Path:
        return self.cache.view_path(file, variant)

    def trim_cache(self, grace: float = TRIM_GRACE) -> int:
        return self.cache.trim(grace)

    def _trim_quietly(self) -> None:
        try:
            self.cache.trim()
        except (SQLAlchemyError, OSError):
            log.exception("cannot trim the cache of published bodies")

    def kept_generations(self, key: str) -> set[int]:
        """The ids of the site's generations whose files are still kept."""
        with self._sessions() as session:
            return set(session.scalars(
                select(StoredFile.generation_id).distinct()
                .join(Generation, Generation.id == StoredFile.generation_id)
                .join(Site, Site.id == Generation.site_id).where(Site.storage_key == key)))

    # Writing a generation ------------------------------------------------------------------

    def site_folder(self, key: str) -> Path:
        """Where a site's generations are staged on this machine."""
        return self.root / STAGING / str(key)

    @contextmanager
    def staging(self, key: str, generation_id: int) -> Iterator[Path]:
        """A private folder to write a generation into; removed afterwards, whatever happens."""
        folder = self.site_folder(key) / str(generation_id)
        # The caller holds the site's lease, so any other staging folder is what a killed run
        # (SIGKILL, out of memory) left: its `finally` never ran.
        if self.site_folder(key).exists():
            for left in self.site_folder(key).iterdir():
                shutil.rmtree(left, ignore_errors=True)
        folder.mkdir(parents=True)
        try:
            yield folder
        finally:
            shutil.rmtree(folder, ignore_errors=True)

    def publish(self, session: Session, key: str, generation_id: int, staged: Path,
                entries: Sequence[Entry]) -> bool:
        """Store the set's bodies not stored yet and its file list, and move the site's
        published generation to it, in the session's transaction: the set goes live when the
        caller commits. False (and nothing changed) when a newer one is published already.

        A staged body is also moved into this node's cache, so the worker serves it warm.
        """
        for entry in entries:
            self._store_body(session, entry, staged)
        if not self.publish_stored(session, [NewSet(key, generation_id, entries)]):
            return False

        def live() -> None:  # this process serves it at once, and this node keeps it on disk
            self.forget(key)
            self.published(key)

        after_commit(session, live)
        return True

    def publish_stored(self, session: Session, sets: Sequence[NewSet],
                       gzip_sizes: dict[str, int] | None = None) -> set[str]:
        """Record the file lists of sets whose bodies are stored, and move each site's
        published generation to its set unless a newer one is published already, in the
        session's transaction; the keys of the sites whose set goes live at the commit.
        (`gzip_sizes`: of the stored bodies, when the caller knows them all.)

        A few statements for any number of sets: many small sites are published at once.
        """
        if not sets:
            return set()
        self.record_sets(session, sets, gzip_sizes)
        moved = self._move_published(session, sets)
        self.drop_sets(session, [s.generation_id for s in sets if s.key not in moved])
        return moved

    def record_sets(self, session: Session, sets: Sequence[NewSet],
                    gzip_sizes: dict[str, int] | None = None) -> None:
        """Record the file lists of sets whose bodies are stored, in the session's
        transaction, for the caller to publish in its own UPDATE of the sites' rows (with
        `published_forward`), and to drop (`drop_sets`) those it did not move to."""
        if gzip_sizes is None:
            gzip_sizes = self._gzip_sizes(session, {e.sha256 for s in sets for e in s.entries})
        rows = [{"generation_id": s.generation_id, "name": e.name, "kind": e.kind,
                 "digest": e.sha256, "size": e.size,
                 "gzip_size": None if e.gzip_size is None else gzip_sizes[e.sha256],
                 "lastmod": e.lastmod} for s in sets for e in s.entries]
        if rows:  # a site without URLs publishes an empty set: nothing is served
            many_rows.insert_rows(session, StoredFile.__table__, rows)

    @staticmethod
    def drop_sets(session: Session, generation_ids: list[int]) -> None:
        """Forget the file lists of generations that were not published after all."""
        if generation_ids:
            session.execute(delete(StoredFile).where(
                StoredFile.generation_id.in_(generation_ids)))

    @staticmethod
    def _move_published(session: Session, sets: Sequence[NewSet]) -> set[str]:
        """Move each site's published generation to its set's unless a newer one is published
        already; the keys of the sites moved."""
        if many_rows.on_postgresql(session):
            key = bindparam("key", type_=Site.storage_key.type)
            target = bindparam("generation", type_=Site.published_generation_id.type)
            return set(many_rows.update_rows(session, update(Site).where(
                Site.storage_key == key, or_(Site.published_generation_id.is_(None),
                                             Site.published_generation_id < target))
                .values(published_generation_id=target).returning(Site.storage_key),
                [{"key": s.key, "generation": s.generation_id} for s in sets]).scalars())
        target = case({s.key: s.generation_id for s in sets}, value=Site.storage_key)
        return set(session.scalars(
            update(Site).where(Site.storage_key.in_([s.key for s in sets]), or_(
                Site.published_generation_id.is_(None), Site.published_generation_id < target))
            .values(published_generation_id=target).returning(Site.storage_key)
            .execution_options(synchronize_session=False)))

    @staticmethod
    def _gzip_sizes(session: Session, digests: set[str]) -> dict[str, int]:
        """The gzip sizes of those of the bodies that are stored."""
        if not digests:
            return {}
        return dict(session.execute(select(FileBody.digest, FileBody.gzip_size)
                                    .where(many_rows.among(session, FileBody.digest, digests)))
                    .all())

    def store_bodies(self, session: Session, bodies: dict[str, tuple[int, bytes]],
                     ) -> dict[str, int]:
        """Store the bodies given in memory (digest: (size, gzip bytes)) that are not stored
        yet, in the session's transaction: small files, a few statements for all of them.
        The gzip size of each body as stored (an earlier copy's, if one was).

        The rows are inserted skipping those stored already, not looked up first: a batch's
        bodies are new as a rule (a set equal to the one served is not published again), and
        the lookup was a statement of its own that, before the table has statistics, scans it
        whole. Only the bodies found stored are read back, for their sizes.
        """
        if not bodies:
            return {}
        digests = sorted(bodies)  # one order for every run: two runs storing the same never deadlock
        now = utcnow()
        # One statement, many parameter sets: compiled once and cached, whatever the count.
        inserted = set(many_rows.insert_rows(
            session, FileBody.__table__,
            [{"digest": digest, "size": bodies[digest][0], "gzip_size": len(bodies[digest][1]),
              "created_at": now} for digest in digests],
            _insert_ignoring_conflicts(session).on_conflict_do_nothing(index_elements=["digest"])
            .returning(FileBody.__table__.c.digest)).scalars())
        parts = [{"digest": digest, "position": position,
                  "data": bodies[digest][1][start:start + PART_BYTES]}
                 for digest in digests if digest in inserted
                 for position, start in enumerate(range(0, len(bodies[digest][1]), PART_BYTES))]
        if parts:
            many_rows.insert_rows(session, FileBodyPart.__table__, parts)
        sizes = {digest: len(bodies[digest][1]) for digest in inserted}
        if len(inserted) < len(digests):  # stored before (by this run's site or another's)
            sizes.update(self._gzip_sizes(session, set(digests) - inserted))
        return sizes

    def _store_body(self, session: Session, entry: Entry, staged: Path) -> None:
        if session.get(FileBody, entry.sha256) is not None:
            return
        plain, packed = staged / entry.name, staged / f"{entry.name}.gz"
        if not plain.exists():
            raise MissingBody(f"the body of {entry.name} ({entry.sha256}) is neither stored "
                              "nor staged")
        if not packed.exists():  # the stylesheet is staged without a twin
            with open(plain, "rb") as source, open(packed, "xb") as raw, gzip_writer(raw) as out:
                shutil.copyfileobj(source, out, PART_BYTES)
        if not _insert_ignoring_duplicates(session, {
                "digest": entry.sha256, "size": entry.size, "gzip_size": packed.stat().st_size,
                "created_at": utcnow()}):
            return  # another run stored it a moment ago
        with open(packed, "rb") as handle:
            position = 0
            while data := handle.read(PART_BYTES):
                session.execute(insert(FileBodyPart).values(
                    digest=entry.sha256, position=position, data=data))
                position += 1
        # Content-addressed, so right in the cache even if this transaction rolls back; the
        # staging folder is dropped after publishing, so its files are moved, not copied.
        self.cache.place(entry.sha256, plain, packed)
