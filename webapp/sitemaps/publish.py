"""Atomic storage of published sitemap sets on the local file system.

Each generation is written into a folder of its own; publishing swaps the site's `current`
symlink to it with one rename, which POSIX makes atomic. A reader that resolves `current` sees
the previous complete set or the new complete set, never a mix, and a failed run never touches
`current`. A per-site lock file serialises publishers across processes so an older generation
never replaces a newer one.
"""

from __future__ import annotations

import fcntl
import os
import shutil
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

CURRENT = "current"
STAGING_PREFIX = ".staging-"


def _fsync_path(path: Path) -> None:
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


class SitemapStore:
    """`<root>/<site id>/g<generation id>/` folders and a `current` link to the published one."""

    def __init__(self, root: str | os.PathLike[str]):
        self.root = Path(root)

    def site_folder(self, site_id: int) -> Path:
        return self.root / str(site_id)

    @contextmanager
    def staging(self, site_id: int, generation_id: int) -> Iterator[Path]:
        """A private folder to write a generation into; removed if the block fails."""
        folder = self.site_folder(site_id) / f"{STAGING_PREFIX}{generation_id}"
        shutil.rmtree(folder, ignore_errors=True)
        folder.mkdir(parents=True)
        try:
            yield folder
        except BaseException:
            shutil.rmtree(folder, ignore_errors=True)
            raise

    @contextmanager
    def _lock(self, site_id: int) -> Iterator[None]:
        folder = self.site_folder(site_id)
        folder.mkdir(parents=True, exist_ok=True)
        with open(folder / ".lock", "a") as handle:
            fcntl.flock(handle, fcntl.LOCK_EX)
            try:
                yield
            finally:
                fcntl.flock(handle, fcntl.LOCK_UN)

    def publish(self, site_id: int, generation_id: int, staged: Path) -> bool:
        """Make a staged generation the published one; False if a newer one is already published."""
        for path in staged.iterdir():
            _fsync_path(path)
        _fsync_path(staged)
        site_folder = self.site_folder(site_id)
        final = site_folder / f"g{generation_id}"
        with self._lock(site_id):
            current = self.current_generation(site_id)
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

    def current_generation(self, site_id: int) -> int | None:
        """The id of the published generation, or None when nothing is published."""
        try:
            target = os.readlink(self.site_folder(site_id) / CURRENT)
        except FileNotFoundError:
            return None
        return int(target.lstrip("g"))

    def current_folder(self, site_id: int) -> Path | None:
        """The folder of the published set, resolved once so all reads come from one generation."""
        generation = self.current_generation(site_id)
        return None if generation is None else self.site_folder(site_id) / f"g{generation}"

    def prune(self, site_id: int, keep: int) -> list[int]:
        """Remove all but the newest `keep` generation folders (never the published one)."""
        current = self.current_generation(site_id)
        folder = self.site_folder(site_id)
        if not folder.exists():
            return []
        kept = sorted((int(p.name[1:]) for p in folder.iterdir()
                       if p.is_dir() and p.name[:1] == "g" and p.name[1:].isdigit()), reverse=True)
        removed = [gen for gen in kept[keep:] if gen != current]
        for generation in removed:
            shutil.rmtree(folder / f"g{generation}", ignore_errors=True)
        return removed

    def remove_site(self, site_id: int) -> None:
        shutil.rmtree(self.site_folder(site_id), ignore_errors=True)

    def export(self, site_id: int, destination: Path) -> list[str]:
        """Copy the published set, gzip twins included, into `destination`."""
        source = self.current_folder(site_id)
        if source is None:
            return []
        destination.mkdir(parents=True, exist_ok=True)
        names = sorted(p.name for p in source.iterdir())
        for name in names:
            shutil.copy2(source / name, destination / name)
        return names
