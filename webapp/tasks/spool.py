"""A worker's copy of an import on disk, INSTANCE_PATH/uploads/<task id>.import, readable by
its owner only: the import reads it from there. It is removed when the task ends; a worker
killed mid-import (kill -9) cannot remove it, so whoever ends an import afterwards removes the
copies no live task owns: their task has finished, is gone (pruned), or has stopped (its
worker process is gone, or it has been silent past records.SILENT, as its page says)."""

from __future__ import annotations

import os
import re
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import BinaryIO

from flask import Flask

from webapp.config import private_folder
from webapp.db import new_session
from webapp.models import Task, utcnow
from webapp.tasks import records

SUFFIX = ".import"
_TASK_ID = re.compile(r"[0-9a-f]{32}")


def folder(app: Flask) -> Path:
    return private_folder(Path(app.config["INSTANCE_PATH"]) / "uploads")


@contextmanager
def spooled(app: Flask, task_id: str) -> Iterator[BinaryIO]:
    """The task's copy, open for writing (empty); removed at the end, with stale copies."""
    path = folder(app) / f"{task_id}{SUFFIX}"
    try:
        with open(path, "w+b", opener=lambda name, flags: os.open(name, flags, 0o600)) as handle:
            yield handle
    finally:
        path.unlink(missing_ok=True)
        sweep(app)


def sweep(app: Flask) -> int:
    """Remove the copies no live task owns; how many were removed."""
    owners = {path: path.name.removesuffix(SUFFIX) for path in folder(app).glob(f"*{SUFFIX}")}
    owners = {path: task_id for path, task_id in owners.items() if _TASK_ID.fullmatch(task_id)}
    if not owners:
        return 0
    removed, now = 0, utcnow()
    with new_session(app) as session:
        for path, task_id in owners.items():
            task = session.get(Task, task_id)
            if task is None or task.status in ("done", "failed") or records.stopped(task, now):
                path.unlink(missing_ok=True)
                removed += 1
    return removed
