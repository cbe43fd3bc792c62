"""This node's cache of published bodies, under its own folder (SITEMAPS_DIR): `bodies/<digest>`
(the content) and `bodies/<digest>.gz`, each written whole under another name first. Bodies
never change, so a cached one is always right; one that is missing is fetched from the database
(`file_body_parts`, streamed) when first needed, and one that no kept generation names is
dropped by `trim`. `known/<site key>.json` holds the last set this node read for a site, served
while the database does not answer.
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
import secrets
import threading
import time
import zlib
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path

from sqlalchemy import select
from sqlalchemy.orm import Session
from werkzeug.http import http_date

from webapp import many_rows
from webapp.errors import NotFound
from webapp.models import FileBodyPart, StoredFile

log = logging.getLogger(__name__)

BODIES = "bodies"
KNOWN = "known"  # per site, the last set this node read: served while the database is down
PART_BYTES = 1 << 20  # a body is stored and read in slices of this many gzip bytes
TRIM_GRACE = 60  # a cached body younger than this is left alone: it may be about to be named


class MissingBody(NotFound):
    """A body a file list names is not in the database (its generation was pruned meanwhile)."""


@dataclass(frozen=True)
class PublishedFile:
    """One servable file of a published set, with what HTTP caching needs to know of it.

    `path` is the content in this node's cache, `gzip_path` its gzip bytes: either may be
    missing until `NodeCache.local` fetched them."""

    name: str
    kind: str  # "urlset", "index" or "stylesheet"
    path: Path
    sha256: str
    size: int
    lastmod: datetime | None
    gzip_size: int | None = None  # the size of the `.gz` twin, when one is served

    last_modified: str | None = None  # lastmod as an HTTP date, made once per generation
    gzip_path: Path | None = None  # beside `path`; made once, as serving asks for it often

    def __post_init__(self) -> None:
        if self.gzip_path is None:
            object.__setattr__(self, "gzip_path", self.path.with_name(self.path.name + ".gz"))


@dataclass(frozen=True)
class PublishedSet:
    generation: int
    files: dict[str, PublishedFile]


class NodeCache:
    """Bodies by digest under `root`; `sessions()` opens a session to fetch a missing one."""

    def __init__(self, root: Path, sessions: Callable[[], Session]):
        self.root, self._sessions = root, sessions
        self.bodies = root / BODIES
        self._fetching: dict[str, threading.Lock] = {}
        self._fetching_lock = threading.Lock()

    def place(self, digest: str, plain: Path, packed: Path) -> None:
        """Move a body just stored (its content and gzip bytes, on this file system) in."""
        self.bodies.mkdir(parents=True, exist_ok=True)
        os.replace(packed, self.bodies / f"{digest}.gz")
        os.replace(plain, self.bodies / digest)

    def local(self, file: PublishedFile) -> Path:
        """The file's content in this node's cache (and its gzip bytes beside it), fetched
        from the database first if missing; MissingBody if the database has it no more."""
        if file.path.exists() and file.gzip_path.exists():
            return file.path
        with self._fetching_lock:
            lock = self._fetching.setdefault(file.sha256, threading.Lock())
        with lock:  # one fetch per body in this process; other processes write alike
            if not (file.path.exists() and file.gzip_path.exists()):
                self._fetch(file.sha256)
        with self._fetching_lock:
            self._fetching.pop(file.sha256, None)
        return file.path

    def _fetch(self, digest: str) -> None:
        self.bodies.mkdir(parents=True, exist_ok=True)
        token = secrets.token_hex(8)
        plain_draft = self.bodies / f".{digest}.{token}"
        packed_draft = self.bodies / f".{digest}.gz.{token}"
        check = hashlib.sha256()
        unpack = zlib.decompressobj(wbits=31)
        try:
            with self._sessions() as session, open(plain_draft, "xb") as plain, \
                    open(packed_draft, "xb") as packed:
                parts = session.execute(
                    select(FileBodyPart.data).where(FileBodyPart.digest == digest)
                    .order_by(FileBodyPart.position).execution_options(yield_per=1)).scalars()
                found = False
                for data in parts:
                    found = True
                    packed.write(data)
                    while data:  # bounded: a slice of sitemap XML unpacks to 20 times its size
                        chunk = unpack.decompress(data, PART_BYTES)
                        check.update(chunk)
                        plain.write(chunk)
                        data = unpack.unconsumed_tail
                chunk = unpack.flush()
                check.update(chunk)
                plain.write(chunk)
            if not found:
                raise MissingBody(f"the body {digest} is not stored (pruned meanwhile?)")
            if check.hexdigest() != digest:
                raise MissingBody(f"the stored body {digest} does not have that digest")
            os.replace(packed_draft, self.bodies / f"{digest}.gz")
            os.replace(plain_draft, self.bodies / digest)
        finally:
            plain_draft.unlink(missing_ok=True)
            packed_draft.unlink(missing_ok=True)

    def view_path(self, file: PublishedFile, variant: str) -> Path:
        """Where this node keeps a rendering of a file (`variant` says for which links)."""
        tag = hashlib.sha256(variant.encode()).hexdigest()[:16]
        return self.bodies / f"{file.sha256}.view-{tag}.html"

    def trim(self, grace: float = TRIM_GRACE) -> int:
        """Drop from this node's cache the bodies (and renderings) that no kept generation
        names; how many files went."""
        with self._sessions() as session:
            named = set(session.scalars(select(StoredFile.digest).distinct()))
        removed = 0
        limit = time.time() - grace
        try:
            entries = list(os.scandir(self.bodies))
        except FileNotFoundError:
            return 0
        for entry in entries:
            if entry.name.lstrip(".")[:64] not in named and _remove_if_older(entry.path, limit):
                removed += 1
        return removed

    def drop(self, digests: set[str], grace: float = TRIM_GRACE) -> int:
        """Drop from this node's cache those of the bodies of `digests` that no kept generation
        names any more: a prune's, which looks at the bodies it stopped naming alone, not at
        every site's (`trim`, which a serving node runs every TRIM_SECONDS, removes the
        renderings and what other nodes cached). How many files went."""
        if not digests:
            return 0
        with self._sessions() as session:
            named = set(session.scalars(select(StoredFile.digest).where(
                many_rows.among(session, StoredFile.digest, digests))))
        removed = 0
        limit = time.time() - grace
        for digest in digests - named:
            for path in (self.bodies / digest, self.bodies / f"{digest}.gz"):
                removed += _remove_if_older(path, limit)
        return removed

    def remember(self, key: str, published: PublishedSet) -> None:
        """Keep on this node's disk the set just read, for a process that starts (or has not
        served the site yet) while the database does not answer."""
        folder = self.root / KNOWN
        data = {"generation": published.generation, "files": {
            f.name: [f.kind, f.sha256, f.size, f.gzip_size,
                     f.lastmod.isoformat() if f.lastmod else None]
            for f in published.files.values()}}
        draft = folder / f".{key}.{secrets.token_hex(8)}"
        try:
            folder.mkdir(parents=True, exist_ok=True)
            draft.write_text(json.dumps(data))
            os.replace(draft, folder / f"{key}.json")
        except OSError:
            log.exception("cannot keep the published set of %s on disk", key)
            draft.unlink(missing_ok=True)

    def recall(self, key: str) -> PublishedSet | None:
        try:
            data = json.loads((self.root / KNOWN / f"{key}.json").read_text())
        except (OSError, ValueError):
            return None
        files = {}
        for name, (kind, digest, size, gzip_size, lastmod) in data["files"].items():
            moment = datetime.fromisoformat(lastmod) if lastmod else None
            files[name] = PublishedFile(
                name=name, kind=kind, path=self.bodies / digest, sha256=digest, size=size,
                gzip_size=gzip_size, lastmod=moment,
                last_modified=http_date(moment) if moment else None)
        return PublishedSet(data["generation"], files)

    def forget(self, key: str) -> None:
        """Forget the last set read of a deleted site."""
        (self.root / KNOWN / f"{key}.json").unlink(missing_ok=True)


def _remove_if_older(path: str | os.PathLike, limit: float) -> bool:
    """Remove a cached file last written before `limit` (a time); whether it went (one that
    another process removed meanwhile did not)."""
    try:
        if os.stat(path).st_mtime < limit:
            os.unlink(path)
            return True
    except FileNotFoundError:
        pass
    return False
