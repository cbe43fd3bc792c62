"""The work of tasks on a real worker, started as production starts it (Celery's prefork pool,
whose processes are daemonic), on both deployments (tests/deployments.py): uploads above every
size threshold on the way to the worker, what a task keeps of its upload once it has ended, a
worker killed in the middle of an import, and messages whose arguments are not what the task
takes."""

from __future__ import annotations

import gzip
import io
import re
import secrets

import pytest

from tests.deployments import deployment  # noqa: F401 - a fixture
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
    task_id = _upload(deployment.signed_in(), site, data, name)
    state = deployment.finished(task_id)
    count = len(re.findall(rb"\n(?:<url><loc>)?https://", gzip.decompress(data)
                           if name.endswith(".gz") else data))
    assert state["status"] == "done", (state["message"], deployment.log())
    assert state["message"].startswith(f"added {count}, updated 0"), state["message"]
    assert not deployment.payload_kept(task_id)
    assert "daemonic" not in deployment.log()
