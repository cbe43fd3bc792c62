"""kombu's filesystem transport (the embedded broker of `make run`), with every file it writes
readable by its owner only: a message carries a task's arguments, such as an import's source
URL. kombu opens its files with the process's umask; these are made 0600 from the start.
A file in the queue that is not a message is dropped (malformed_messages)."""

from __future__ import annotations

import os
import secrets
import uuid
from time import monotonic

from kombu.exceptions import ChannelError
from kombu.transport import filesystem
from kombu.utils.json import dumps

from webapp.tasks.malformed_messages import ChannelDropsUnreadable, TransportDropsMalformed

OWNER_ONLY = 0o600


class Channel(ChannelDropsUnreadable, filesystem.Channel):
    def _put(self, queue, payload, **kwargs):
        """kombu's `_put` (the same name, so its readers find the message) with mode 0600.
        The file is written under another name and moved into place, so a reader never
        takes a half-written message."""
        name = f"{int(round(monotonic() * 1000))}_{uuid.uuid4()}.{queue}.msg"
        write_owner_only(os.path.join(self.data_folder_out, name), dumps(payload).encode())

    def _queue_bind(self, exchange, routing_key, pattern, queue):
        """The exchange's table is made 0600 (empty) before kombu adds the binding to it."""
        table = self._exchange_file(exchange)
        if not table.exists():
            try:
                write_owner_only(str(table), b"[]", replace=False)
            except FileExistsError:
                pass  # another process made it first: kombu adds to theirs
        super()._queue_bind(exchange, routing_key, pattern, queue)


class Transport(TransportDropsMalformed, filesystem.Transport):
    Channel = Channel


def write_owner_only(path: str, data: bytes, replace: bool = True) -> None:
    """`data` as the file at `path`, mode 0600, appearing whole; FileExistsError when
    `replace` is False and the file is there."""
    # A draft's name holds no queue's name: kombu's readers take any file whose name does.
    draft = os.path.join(os.path.dirname(path), f".draft-{secrets.token_hex(8)}")
    try:
        fd = os.open(draft, os.O_WRONLY | os.O_CREAT | os.O_EXCL, OWNER_ONLY)
        with os.fdopen(fd, "wb") as handle:
            handle.write(data)
        if replace:
            os.replace(draft, path)
        else:
            os.link(draft, path)
    except OSError as exc:
        if isinstance(exc, FileExistsError):
            raise
        raise ChannelError(f"Cannot add file {path!r} to directory") from exc
    finally:
        if os.path.exists(draft):
            os.unlink(draft)
