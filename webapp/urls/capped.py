"""A binary stream read through up to a limit: what an import reads from a file (a sitemap,
or a CSV or list unpacked from gzip) never runs past the most the server takes, whatever the
file unpacks to."""

from __future__ import annotations

import io
from collections.abc import Callable
from typing import BinaryIO


class CappedReader(io.RawIOBase):
    """`stream` read through; past `limit` bytes from its start, `too_large()` is raised.

    Seeking to the end (how an import learns a file's size before it writes) reads only as
    far as the limit, so a small file that unpacks to gigabytes is refused in the time it
    takes to unpack the limit.
    """

    def __init__(self, stream: BinaryIO, limit: int, too_large: Callable[[], Exception]):
        super().__init__()
        self.stream, self.limit, self._too_large = stream, limit, too_large

    def readable(self) -> bool:
        return True

    def seekable(self) -> bool:
        return self.stream.seekable()

    def readinto(self, buffer) -> int:
        count = self.stream.readinto(buffer)
        self._check()
        return count

    def seek(self, offset: int, whence: int = io.SEEK_SET) -> int:
        if whence == io.SEEK_END:
            while self.stream.read(1 << 20):
                self._check()
        return self.stream.seek(offset, whence)

    def tell(self) -> int:
        return self.stream.tell()

    def close(self) -> None:
        self.stream.close()
        super().close()

    def _check(self) -> None:
        if self.stream.tell() > self.limit:
            raise self._too_large()
