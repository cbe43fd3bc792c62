"""Atomic storage of published sitemap sets on the local file system.

Each generation is written into a folder of its own; publishing swaps the site's `current`
symlink to it with one rename, which POSIX makes atomic. A reader that resolves `current` sees
the previous complete set or the new complete set, never a mix, and a failed run never touches
`current`. A per-site lock file serialises publishers across processes so an older generation
never replaces a newer one.
"""

from __future__ import annotations

import fcntl
import hashlib
import json
import os
import shutil
import tempfile
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path

from werkzeug.http import http_date

CURRENT = "current"
STAGING_PREFIX = ".staging-"
MANIFEST = "manifest.json"
EXPORT_MARKER = ".sitemap-export-{key}.json"
# What export gives the files it writes: a static server of another user reads them.
PUBLIC_MODE = 0o644


@dataclass(frozen=True)
class PublishedFile:
    """One servable file of a published set, with what HTTP caching needs to know of it."""

    name: str
    kind: str  # "urlset", "index" or "stylesheet"
    path: Path
    sha256: str
    size: int
    lastmod: datetime | None
    gzip_size: int | None = None  # the size of the `.gz` twin, when there is one

    last_modified: str | None = None  # lastmod as an HTTP date, made once per generation


@dataclass(frozen=True)
class PublishedSet:
    generation: int
    files: dict[str, PublishedFile]


def served_stylesheet(published: PublishedSet | None, folder: Path,
                      stylesheet: str) -> PublishedFile | None:
    """The stylesheet being served, if the one in `folder` has the same bytes."""
    served = published.files.get(stylesheet) if published else None
    if served is not None and served.sha256 == hashlib.sha256(
            (folder / stylesheet).read_bytes()).hexdigest():
        return served
    return None


def same_as_published(published: PublishedSet | None, generation_id: int | None, folder: Path,
                      stylesheet: str | None) -> bool:
    """Whether generation `generation_id` is the set being served, with the same stylesheet as
    the one staged in `folder` (or none, when `stylesheet` is None): the caller has checked
    that the staged sitemap files have that generation's digests."""
    if published is None or published.generation != generation_id:
        return False  # the files on disk are not what the database remembers
    if stylesheet:
        return served_stylesheet(published, folder, stylesheet) is not None
    return not any(f.kind == "stylesheet" for f in published.files.values())


def _fsync_path(path: Path) -> None:
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


class SitemapStore:
    """`<root>/<site storage key>/g<generation id>/` folders and a `current` link to the
    published one."""

    def __init__(self, root: str | os.PathLike[str]):
        self.root = Path(root)
        self._sets: dict[str, PublishedSet] = {}  # per site, the last set read

    @staticmethod
    def write_manifest(folder: Path, generation_id: int, files: Sequence,
                       stylesheet: str | None, stylesheet_lastmod: str | None = None) -> None:
        """Record, beside the files, what serving needs: digests, sizes, lastmods."""
        entries = {f.name: {"kind": f.kind, "sha256": f.sha256, "size": f.bytes,
                            "gzip_size": f.gzip_bytes, "lastmod": f.lastmod} for f in files}
        if stylesheet:
            data = (folder / stylesheet).read_bytes()
            entries[stylesheet] = {"kind": "stylesheet", "sha256": hashlib.sha256(data).hexdigest(),
                                   "size": len(data), "gzip_size": None,
                                   "lastmod": stylesheet_lastmod}
        (folder / MANIFEST).write_text(json.dumps({"generation": generation_id, "files": entries}))

    def published(self, key: str) -> PublishedSet | None:
        """The published set of a site, read once per generation and then kept in memory.

        The `current` link is read on every call: several processes serve at once, and an
        index from one and its files from another must come from the same generation.
        """
        generation = self.current_generation(key)
        if generation is None:
            return None
        cached = self._sets.get(key)
        if cached is not None and cached.generation == generation:
            return cached
        published = self.generation_set(key, generation)
        if published is not None:
            self._sets[key] = published
        return published

    def generation_set(self, key: str, generation: int) -> PublishedSet | None:
        """The files of any generation still kept on disk, published or not."""
        folder = self.site_folder(key) / f"g{generation}"
        try:
            manifest = json.loads((folder / MANIFEST).read_text())
        except FileNotFoundError:
            return None
        files = {}
        for name, entry in manifest["files"].items():
            lastmod = datetime.fromisoformat(entry["lastmod"]) if entry["lastmod"] else None
            files[name] = PublishedFile(
                name=name, kind=entry["kind"], path=folder / name, sha256=entry["sha256"],
                size=entry["size"], gzip_size=entry["gzip_size"], lastmod=lastmod,
                last_modified=http_date(lastmod) if lastmod else None)
        return PublishedSet(generation, files)

    def link_files(self, key: str, source: int, folder: Path, names: Sequence[str]) -> None:
        """Put files of a kept generation into a staging folder, linked rather than copied.

        Published files are never written to again, so sharing them between folders is safe.
        """
        for name in names:
            path = self.site_folder(key) / f"g{source}" / name
            try:
                os.link(path, folder / name)
            except OSError:
                shutil.copy2(path, folder / name)

    def site_folder(self, key: str) -> Path:
        return self.root / str(key)

    @contextmanager
    def staging(self, key: str, generation_id: int) -> Iterator[Path]:
        """A private folder to write a generation into; whatever was not published is removed."""
        folder = self.site_folder(key) / f"{STAGING_PREFIX}{generation_id}"
        # The caller holds the site's lease, so any other staging folder is what a killed run
        # (SIGKILL, out of memory) left: its `finally` never ran.
        for left in self.site_folder(key).glob(f"{STAGING_PREFIX}*"):
            shutil.rmtree(left, ignore_errors=True)
        folder.mkdir(parents=True)
        try:
            yield folder
        finally:
            shutil.rmtree(folder, ignore_errors=True)

    @contextmanager
    def _lock(self, key: str) -> Iterator[None]:
        folder = self.site_folder(key)
        folder.mkdir(parents=True, exist_ok=True)
        with open(folder / ".lock", "a") as handle:
            fcntl.flock(handle, fcntl.LOCK_EX)
            try:
                yield
            finally:
                fcntl.flock(handle, fcntl.LOCK_UN)

    def publish(self, key: str, generation_id: int, staged: Path) -> bool:
        """Make a staged generation the published one; False if a newer one is already published."""
        for path in staged.iterdir():
            _fsync_path(path)
        _fsync_path(staged)
        site_folder = self.site_folder(key)
        final = site_folder / f"g{generation_id}"
        with self._lock(key):
            current = self.current_generation(key)
            if current is not None and current > generation_id:
                shutil.rmtree(staged, ignore_errors=True)
                return False
            os.replace(staged, final)
            link = site_folder / f".{CURRENT}-{generation_id}"
            link.unlink(missing_ok=True)
            link.symlink_to(final.name)
            os.replace(link, site_folder / CURRENT)
            _fsync_path(site_folder)
        return True

    def current_generation(self, key: str) -> int | None:
        """The id of the published generation, or None when nothing is published."""
        try:
            target = os.readlink(self.site_folder(key) / CURRENT)
        except FileNotFoundError:
            return None
        return int(target.lstrip("g"))

    def current_folder(self, key: str) -> Path | None:
        """The folder of the published set, resolved once so all reads come from one generation."""
        generation = self.current_generation(key)
        return None if generation is None else self.site_folder(key) / f"g{generation}"

    def remove(self, key: str) -> None:
        """Stop serving a site's files, then delete them all."""
        folder = self.site_folder(key)
        with self._lock(key):
            (folder / CURRENT).unlink(missing_ok=True)
        shutil.rmtree(folder, ignore_errors=True)

    def prune(self, key: str, keep: int) -> list[int]:
        """Remove all but the newest `keep` generation folders (never the published one)."""
        current = self.current_generation(key)
        folder = self.site_folder(key)
        if not folder.exists():
            return []
        kept = sorted((int(p.name[1:]) for p in folder.iterdir()
                       if p.is_dir() and p.name[:1] == "g" and p.name[1:].isdigit()), reverse=True)
        removed = [gen for gen in kept[keep:] if gen != current]
        for generation in removed:
            shutil.rmtree(folder / f"g{generation}", ignore_errors=True)
        return removed

    def export(self, key: str, destination: Path) -> list[str]:
        """Copy the published set, gzip twins and stylesheet included, into `destination`.

        A static server reading `destination` meanwhile sees each file old or new, never half
        written; the files an index lists are in place before the index; files that only an
        earlier export wrote (listed in EXPORT_MARKER) are removed, and nothing else is.
        """
        published = self.published(key)
        if published is None:
            return []
        destination.mkdir(parents=True, exist_ok=True)
        entry_last = sorted(published.files.values(), key=lambda f: f.kind == "index")
        sources = [path for f in entry_last for path in (
            [f.path.with_name(f.name + ".gz"), f.path] if f.gzip_size is not None else [f.path])]
        for source in sources:
            handle, draft = tempfile.mkstemp(prefix=f".{source.name}.", dir=destination)
            os.close(handle)
            shutil.copy2(source, draft)
            os.chmod(draft, PUBLIC_MODE)  # earlier generations wrote their index as 0600
            os.replace(draft, destination / source.name)
        names = sorted(source.name for source in sources)
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
