"""The work of tasks on a real worker, started as production starts it (Celery's prefork pool,
whose processes are daemonic), on both deployments (tests/deployments.py): uploads above every
size threshold on the way to the worker, what a task keeps of its upload once it has ended, a
worker killed in the middle of an import, messages whose arguments are not what the task
takes, and bytes on the broker that are not a message at all."""

from __future__ import annotations

import base64
import gzip
import io
import json
import os
import re
import secrets
import signal
import socket
import uuid
from pathlib import Path

import pytest
import redis
from sqlalchemy import select, update

from tests.deployments import deployment  # noqa: F401 - a fixture
from tests.probes import wait_for
from webapp import create_app, tasks
from webapp.models import Site, Task, utcnow
from webapp.tasks import records
from webapp.urls.importing import PARALLEL_FROM_BYTES
from webapp.urls.sitemap_reader import SPOOL_BYTES

DASHBOARD_SPOOL = 8 << 20  # the dashboard packs an upload in memory up to this, then on disk


def _locs(base: str, count: int, length: int) -> list[str]:
    """Locs with random paths of about `length` characters: text gzip can barely shrink."""
    return [f"{base}p/{secrets.token_urlsafe(length * 3 // 4)}" for _ in range(count)]


def _csv(locs: list[str]) -> bytes:
    return ("loc\n" + "\n".join(locs) + "\n").encode()


def _sitemap(locs: list[str]) -> bytes:
    return ('<?xml version="1.0" encoding="UTF-8"?>\n'
            '<urlset xmlns="http://www.sitemaps.org/schemas/sitemap/0.9">\n'
            + "".join(f"<url><loc>{loc}</loc></url>\n" for loc in locs) + "</urlset>\n").encode()


def _upload(client, site, data: bytes, name: str) -> str:
    """The dashboard's import form with the file; the task's id."""
    answer = client.post(f"/sites/{site.slug}/import", data={
        "csrf_token": client.csrf, "encoding": "utf-8", "file": (io.BytesIO(data), name)},
        content_type="multipart/form-data")
    answer.request.environ["wsgi.input"].close()  # the body the test client wrote to disk
    assert answer.status_code == 302, answer.text
    return answer.headers["Location"].rsplit("/", 1)[1]


# Each upload is past a size at which the way it is handled changes: a CSV is validated
# beside the writing past PARALLEL_FROM_BYTES (where a process may start another), the
# dashboard packs an upload on disk past its spool, a sitemap's entries go to a temporary
# file past SPOOL_BYTES.
UPLOADS = {
    "csv": (lambda base: _csv(_locs(base, 24_000, 200)), "urls.csv",
            lambda data: len(data) > PARALLEL_FROM_BYTES),
    "gzip-csv": (lambda base: gzip.compress(_csv(_locs(base, 40_000, 300)), 5), "urls.csv.gz",
                 lambda data: len(data) > DASHBOARD_SPOOL
                 and len(gzip.decompress(data)) > PARALLEL_FROM_BYTES),
    "sitemap": (lambda base: _sitemap(_locs(base, 36_000, 300)), "sitemap.xml",
                lambda data: len(data) > SPOOL_BYTES),
}


@pytest.mark.parametrize("upload", list(UPLOADS))
def test_an_upload_above_each_size_threshold_is_imported_on_a_prefork_worker(deployment,
                                                                            upload):
    make, name, above = UPLOADS[upload]
    site = deployment.site()
    data = make(site.base_url)
    assert above(data)
    start = len(deployment.log())
    task_id = _upload(deployment.signed_in(), site, data, name)
    state = deployment.finished(task_id)
    count = len(re.findall(rb"\n(?:<url><loc>)?https://", gzip.decompress(data)
                           if name.endswith(".gz") else data))
    assert state["status"] == "done", (state["message"], deployment.log())
    assert state["message"].startswith(f"added {count}, updated 0"), state["message"]
    assert not deployment.payload_kept(task_id)
    assert "daemonic" not in deployment.log()[start:]


def test_an_import_refused_on_the_worker_drops_its_upload(deployment):
    """A large file whose header is not one the import reads: the task fails with the
    reason, and what was uploaded for it is not kept."""
    site = deployment.site()
    data = ("loc,colour\n" + "\n".join(_locs(site.base_url, 24_000, 200)) + "\n").encode()
    assert len(data) > PARALLEL_FROM_BYTES
    task_id = _upload(deployment.signed_in(), site, data, "urls.csv")
    state = deployment.finished(task_id)
    assert state["status"] == "failed" and "unknown or repeated column 'colour'" in \
        state["message"], state
    assert not deployment.payload_kept(task_id)


def test_an_import_whose_worker_is_killed_keeps_its_upload_and_is_retried_with_one_click(
        deployment):
    """kill -9 of the whole worker importing a file: neither the embedded queue nor Redis
    (within hours) gives the task to another worker, and the page says so. The upload is kept,
    and Retry starts a new task from it, which the other worker runs; then nothing is kept,
    in the database or on disk (the dead worker's copy of the upload)."""
    site = deployment.site()
    uploads = Path(deployment.app.config["INSTANCE_PATH"]) / "uploads"
    data = _csv([f"{site.base_url}p/{n}" for n in range(300_000)])
    victim_queue = f"victim-{secrets.token_hex(4)}"
    config = deployment.app.config
    # A node queueing on the victim's queue only, on the same database and broker.
    asker = create_app({**{name: config[name] for name in (
        "DATABASE_URL", "SECRET_KEY", "INSTANCE_PATH", "SITEMAPS_DIR", "OUTBOUND_ALLOW",
        "CELERY_BROKER_URL")}, "TESTING": True, "CELERY_QUEUE": victim_queue,
        "CELERY_TASK_ALWAYS_EAGER": False})
    try:
        victim = deployment.processes.worker(env={"CELERY_QUEUE": victim_queue},
                                             new_session=True)
        with asker.extensions["db_sessionmaker"]() as session:
            task_id = tasks.start(session, asker, "import", session.get(Site, site.id),
                                  payload=gzip.compress(data, 1))
            session.commit()

        def spooling():  # on SQLite, the only sign: an import holds the one write lock
            with deployment.session() as session:
                return (session.get(Task, task_id).status == "running" and uploads.is_dir()
                        and any(uploads.iterdir()))
        wait_for(spooling, 300, "the import to start, with its upload on disk")
        os.killpg(victim.pid, signal.SIGKILL)
        victim.wait()
    finally:
        asker.extensions["db_engine"].dispose()

    client = deployment.signed_in("editor")
    # Its child process is gone once the system has reaped it: soon, not at once.
    page = wait_for(lambda: (answer := client.get(f"/tasks/{task_id}"))
                    and "will not run again" in answer.text and answer, 60,
                    "the page to see the worker gone")
    assert "given to another worker if its message is delivered again" not in page.text
    assert f'action="/tasks/{task_id}/retry"' in page.text and "hidden" not in \
        page.text.split('id="task-retry"')[1].split(">")[0]
    assert deployment.payload_kept(task_id)
    viewer = deployment.signed_in("viewer")
    assert 'id="task-retry"' not in viewer.get(f"/tasks/{task_id}").text
    assert viewer.post(f"/tasks/{task_id}/retry",
                       data={"csrf_token": viewer.csrf}).status_code == 403
    assert client.post(f"/tasks/{task_id}/retry").status_code == 400  # no CSRF token

    answer = client.post(f"/tasks/{task_id}/retry", data={"csrf_token": client.csrf})
    assert answer.status_code == 302, answer.text
    retried = answer.headers["Location"].rsplit("/", 1)[1]
    assert retried != task_id
    state = deployment.finished(retried)
    assert state["status"] == "done" and state["message"].startswith("added 300000"), state
    assert not deployment.payload_kept(retried) and not deployment.payload_kept(task_id)
    assert not list(uploads.iterdir())
    with deployment.app.app_context(), deployment.session() as session:
        old = tasks.read(session, task_id)
    assert old["status"] == "failed" and retried in old["message"] and not old["retriable"]
    # Twice is not twice the work: the old task has nothing left to start from.
    again = client.post(f"/tasks/{task_id}/retry", data={"csrf_token": client.csrf})
    assert again.headers["Location"].endswith(f"/tasks/{task_id}")


def test_an_import_cancelled_before_a_worker_ran_it_keeps_nothing_of_its_upload(deployment):
    """`celery control revoke` of an import's message: the worker skips it, and the task's
    record says it was cancelled, with nothing of its upload kept."""
    site = deployment.site()
    celery = tasks.celery_of(deployment.app)
    with deployment.session() as session:
        task_id = records.create(session, "import", session.get(Site, site.id),
                                 gzip.compress(b"https://x.example.com/\n")).id
        session.commit()
    message_id = str(uuid.uuid4())
    celery.control.revoke(message_id)  # no reply: the embedded queue routes none back
    wait_for(lambda: f"Tasks flagged as revoked: {message_id}" in deployment.log(), 120,
             "the worker to hear of the revoke")
    celery.tasks["webapp.import_urls"].apply_async((task_id, site.id), task_id=message_id)
    state = deployment.finished(task_id)
    assert state["status"] == "failed" and state["message"] == "cancelled before it finished"
    assert not deployment.payload_kept(task_id)


FORGED = [
    ("webapp.regenerate_now", ["not-a-task-id", "1"], {}, "task_id must be"),
    ("webapp.import_urls", [secrets.token_hex(16), {"id": 1}], {}, "site_id must be"),
    ("webapp.regenerate_due", [["1", 2]], {}, "site_ids"),
    ("webapp.deliver", [], {"only": "everything"}, "only must be"),
    ("webapp.discover", [secrets.token_hex(16), 1, 10], {}, "do not fit"),
    ("webapp.verify_now", [secrets.token_hex(16), 2 ** 40], {}, "site_id must be"),
]


def test_a_message_with_arguments_a_task_does_not_take_is_one_warning_line(deployment):
    """Messages put on the broker by hand (or by another version of the app), whose arguments
    are of the wrong types or shape: each task says in one WARNING line what was wrong, and
    does nothing; no traceback, no ERROR."""
    celery = tasks.celery_of(deployment.app)
    start = len(deployment.log())
    sent = [celery.send_task(name, args, kwargs, queue=deployment.app.config["CELERY_QUEUE"]).id
            for name, args, kwargs, _ in FORGED]
    # Each forged message's own line: the shared worker may still be finishing another test's.
    wait_for(lambda: all(f"[{task_id}] succeeded in " in deployment.log()[start:]
                         for task_id in sent), 300, "the worker to take every message")
    said = deployment.log()[start:]
    for name, _, _, what in FORGED:
        lines = [line for line in said.splitlines() if f"task {name} ignored" in line]
        assert len(lines) == 1 and " WARNING " in lines[0] and what in lines[0], (name, said)
    assert "Traceback" not in said and " ERROR " not in said, said


# The end of a task on this process (eager tasks: `app`), for the outcomes a test can cause
# with what a person sends: whatever the outcome, the record no longer keeps the upload.

def _start_import(session, app, payload: bytes) -> str:
    from tests.builders import make_site

    site = make_site(session)
    task_id = tasks.start(session, app, "import", site, payload=payload)
    session.commit()  # runs here, eagerly
    return task_id


@pytest.mark.parametrize("payload, status", [
    (gzip.compress(b"https://shop.example.com/a\n"), "done"),
    (gzip.compress(b"loc,colour\nhttps://shop.example.com/a,red\n"), "failed"),  # refused
    (b"not what the dashboard packs", "failed"),  # a fault of the work itself
], ids=["success", "refusal", "failure"])
def test_a_finished_import_keeps_nothing_of_its_upload(app, session, payload, status):
    task_id = _start_import(session, app, payload)
    assert tasks.read(session, task_id)["status"] == status
    session.expire_all()
    assert session.scalar(select(Task.payload).where(Task.id == task_id)) is None


def _stopped_import(session, app) -> str:
    """An import recorded as running on a process of this machine that is gone."""
    task_id = _start_import(session, app, gzip.compress(b"https://shop.example.com/b\n"))
    dead = os.fork()
    if dead == 0:
        os._exit(0)
    os.waitpid(dead, 0)
    session.execute(update(Task).where(Task.id == task_id).values(
        status="running", finished_at=None, worker=f"{socket.gethostname()}:{dead}:x",
        heartbeat_at=utcnow(), payload=gzip.compress(b"https://shop.example.com/b\n")))
    session.commit()
    return task_id


def test_a_stopped_task_says_what_happens_on_each_broker(app, session, tmp_path):
    """The embedded queue and Redis do not give a dead worker's task to another in time for
    it to run; RabbitMQ does at once, and then it runs again (within SILENT)."""
    from tests.deployments import node

    task_id = _stopped_import(session, app)
    state = tasks.read(session, task_id)
    assert state["status"] == "failed" and "will not run again" in state["message"]
    assert state["retriable"]
    rabbit = node(app, tmp_path / "rabbit", CELERY_BROKER_URL="amqp://127.0.0.1:9//")
    try:
        with rabbit.app_context(), rabbit.extensions["db_sessionmaker"]() as own:
            state = tasks.read(own, task_id)
    finally:
        rabbit.extensions["db_engine"].dispose()
    assert "runs it again if that is within 10 minutes" in state["message"]
    assert not state["retriable"]  # it may run again: a retry could import it twice


def _not_messages(queue: str) -> list[bytes]:
    """What a broker may hold that is not a message: the worker's read of each failed."""
    envelope = {"body": "not base64", "content-encoding": "utf-8",
                "content-type": "application/json", "headers": {"task": "webapp.deliver"},
                "properties": {"body_encoding": "base64", "delivery_tag": str(uuid.uuid4()),
                               "delivery_info": {"exchange": "", "routing_key": queue}}}
    not_json = {**envelope, "body": base64.b64encode(b"not json").decode()}
    return [b"not json at all", b"\xff\xfe not utf-8", b'{"not": "celery"}', b"[1, 2]",
            json.dumps(envelope).encode(), json.dumps(not_json).encode()]


def _put_raw(deployment, queue: str, data: bytes) -> None:
    """`data` put on the queue as it is, as `redis-cli lpush` or a file in the queue folder."""
    if deployment.kind == "production":
        client = redis.Redis.from_url(deployment.app.config["CELERY_BROKER_URL"])
        client.lpush(queue, data)
        client.close()
    else:
        folder = Path(deployment.app.config["INSTANCE_PATH"]) / "broker" / "queue"
        (folder / f"0_{uuid.uuid4()}.{queue}.msg").write_bytes(data)


def test_a_message_that_is_not_a_message_is_dropped_with_one_warning_line(deployment):
    """Bytes on the broker that are not JSON, not kombu's envelope, or whose body is not
    base64 or not JSON, and a task of a name no worker knows: each is dropped with one WARNING
    line naming the queue, and the worker goes on with the next message (it used to stop for
    good: "Unrecoverable error"; or log a traceback at CRITICAL or ERROR)."""
    queue = deployment.app.config["CELERY_QUEUE"]
    start = len(deployment.log())
    bad = _not_messages(queue)
    for data in bad:
        _put_raw(deployment, queue, data)
    celery = tasks.celery_of(deployment.app)
    celery.send_task("webapp.nonexistent", queue=queue)
    name, args, kwargs, _ = FORGED[3]
    celery.send_task(name, args, kwargs, queue=queue)
    # The embedded queue reads its files in no set order: wait for the two tasks' lines.
    wait_for(lambda: (" succeeded in " in deployment.log()[start:]
                      and "unknown name webapp.nonexistent" in deployment.log()[start:])
             or deployment.worker.poll() is not None, 300,
             "the worker to take the messages after the malformed ones")
    said = deployment.log()[start:]
    lines = [line for line in said.splitlines() if "a malformed message was dropped" in line]
    assert len(lines) == len(bad), said
    assert all(" WARNING " in line and f"queue {queue}:" in line for line in lines), said
    unknown = [line for line in said.splitlines() if "unknown name webapp.nonexistent" in line]
    assert len(unknown) == 1 and " WARNING " in unknown[0], said
    assert "Traceback" not in said and " ERROR " not in said and "CRITICAL" not in said, said
    assert deployment.worker.poll() is None
