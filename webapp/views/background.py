"""Long work started from the dashboard (generate, announce, import) runs in a background
thread of the web process, so the page never waits for it. Its progress is a small JSON file in
the instance folder: whichever worker process answers the page's poll can read it."""

from __future__ import annotations

import json
import logging
import os
import re
import threading
import time
import uuid
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from flask import Flask

from webapp.errors import InvalidValue, NotFound
from webapp.leases import SiteBusy
from webapp.outbound import OutboundError
from webapp.urls import ImportFormatError

log = logging.getLogger(__name__)

# What the work raises for input it refuses or a site that is busy: said to the person, and
# logged in one line, as any other expected answer.
EXPECTED = (InvalidValue, NotFound, ImportFormatError, SiteBusy, OutboundError)

_ID = re.compile(r"[0-9a-f]{32}")
_pool: ThreadPoolExecutor | None = None
_pool_lock = threading.Lock()


class Progress:
    """Called by the work with (done, total); writes the file at most five times a second."""

    def __init__(self, path: Path, state: dict):
        self.path, self.state, self.written = path, state, 0.0

    def __call__(self, done: int, total: int | None = None) -> None:
        self.state.update(done=done, total=total)
        if time.monotonic() - self.written > 0.2:
            self.save()

    def save(self) -> None:
        draft = self.path.with_name(f".{self.path.name}.{threading.get_ident()}")
        draft.write_text(json.dumps(self.state))
        os.replace(draft, self.path)
        self.written = time.monotonic()


def _folder(app: Flask) -> Path:
    folder = Path(app.config["INSTANCE_PATH"]) / "tasks"
    folder.mkdir(parents=True, exist_ok=True)
    return folder


def start(app: Flask, kind: str, site: str, work: Callable[[Progress], str],
          site_id: int) -> str:
    """Run `work(progress)` in the background; its return value is the task's closing message.

    `site` is the slug shown; `site_id` names the site for good (a slug can be renamed)."""
    global _pool
    task_id = uuid.uuid4().hex
    _prune(_folder(app))
    progress = Progress(_folder(app) / f"{task_id}.json", {
        "id": task_id, "kind": kind, "site": site, "site_id": site_id, "status": "running",
        "done": 0, "total": None, "message": "", "pid": os.getpid(), "started": time.time()})
    progress.save()

    def run() -> None:
        try:
            with app.app_context():
                message = work(progress)
            progress.state.update(status="done", message=message)
        except Exception as exc:  # shown on the page: the work's own errors say what to do
            if isinstance(exc, EXPECTED):  # bad input or a busy site: one line, no traceback
                log.warning("task %s (%s) of site %s refused: %s", task_id, kind, site, exc)
            else:
                log.exception("task %s (%s) failed", task_id, kind)
            progress.state.update(status="failed", message=str(exc) or type(exc).__name__)
        progress.state["finished"] = time.time()
        progress.save()

    with _pool_lock:
        if _pool is None:
            _pool = ThreadPoolExecutor(2, thread_name_prefix="task")
    _pool.submit(run)
    return task_id


def read(app: Flask, task_id: str) -> dict | None:
    """A task's state; a task whose process is gone without finishing is reported failed."""
    if not _ID.fullmatch(task_id):
        return None
    try:
        state = json.loads((_folder(app) / f"{task_id}.json").read_text())
    except (OSError, ValueError):
        return None
    if state["status"] == "running" and not _alive(state["pid"]):
        state.update(status="failed", message="the server process running it stopped")
    return state


def latest(app: Flask, kind: str, site_id: int) -> dict | None:
    """The newest finished task of this kind for this site (for the site's health)."""
    found = None
    for path in _folder(app).glob("*.json"):
        try:
            state = json.loads(path.read_text())
        except (OSError, ValueError):
            continue
        if state.get("kind") == kind and state.get("site_id") == site_id \
                and state.get("status") != "running" \
                and (found is None or state["started"] > found["started"]):
            found = state
    return found


def _prune(folder: Path, older_than: float = 7 * 86400) -> None:
    cutoff = time.time() - older_than
    for path in folder.glob("*.json"):
        try:
            if path.stat().st_mtime < cutoff:
                path.unlink()
        except OSError:
            pass


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True
