"""The sitemaps folder failing under a generation: a full disk, a read-only file system. The
previous set stays published and served, the failed run says why, and the next run after the
fault is gone succeeds. The faults are real: a small tmpfs mounted for the test (root only)."""

from __future__ import annotations

import errno
import subprocess

import pytest
from sqlalchemy import select

from tests.builders import make_site, make_urls
from webapp import create_app, jobs
from webapp.models import Site
from webapp.urls import save_url


@pytest.fixture
def small_disk(tmp_path):
    mount = tmp_path / "disk"
    mount.mkdir()
    done = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=4m", "tmpfs", str(mount)],
                          capture_output=True, text=True)
    if done.returncode:
        pytest.skip(f"cannot mount a tmpfs here ({done.stderr.strip()}); needs root")
    yield mount
    subprocess.run(["umount", "-l", str(mount)], check=True)


@pytest.fixture
def on_small_disk(app, small_disk):
    """The app with its sitemaps on the small disk."""
    moved = create_app({**app.config, "SITEMAPS_DIR": str(small_disk / "sitemaps")})
    yield moved
    moved.extensions["db_engine"].dispose()


def served(app, name="sitemap.xml") -> tuple[int, bytes]:
    answer = app.test_client().get(f"/sitemaps/shop/{name}")
    return answer.status_code, answer.data


def fill(disk) -> None:
    """Write until the file system is full."""
    with open(disk / "filler", "wb") as handle:
        try:
            while True:
                handle.write(b"\0" * 65536)
                handle.flush()
        except OSError as exc:
            assert exc.errno == errno.ENOSPC


def test_a_full_disk_fails_the_run_and_keeps_the_published_set(on_small_disk, session,
                                                              small_disk):
    site = make_site(session, max_urls_per_file=500)
    make_urls(session, site, 1200)
    good = jobs.regenerate(site.id, on_small_disk)
    before = {name: served(on_small_disk, name) for name in ("sitemap.xml", "sitemap-2.xml")}
    assert before["sitemap.xml"][0] == 200

    fill(small_disk)
    for n in range(1500):  # enough new URLs that the new files cannot fit
        save_url(session, site, f"{site.base_url}more/{n}-{'x' * 200}")
    session.commit()
    failed = jobs.regenerate(site.id, on_small_disk)

    assert failed.status == "failed" and "No space left on device" in failed.error
    assert {name: served(on_small_disk, name) for name in before} == before
    store = on_small_disk.extensions["sitemap_store"]
    assert store.current_generation(site.storage_key) == good.id
    leftovers = [p.name for p in store.site_folder(site.storage_key).iterdir()
                 if p.name.startswith(".staging")]
    assert leftovers == []

    (small_disk / "filler").unlink()
    again = jobs.regenerate(site.id, on_small_disk)
    assert again.status == "succeeded" and again.url_count == 2700
    assert served(on_small_disk)[1] != before["sitemap.xml"][1]


def test_a_read_only_file_system_fails_the_run_and_keeps_serving(on_small_disk, session,
                                                                small_disk):
    site = make_site(session, max_urls_per_file=500)
    make_urls(session, site, 1200)
    good = jobs.regenerate(site.id, on_small_disk)
    before = served(on_small_disk)
    save_url(session, site, f"{site.base_url}new")
    session.commit()

    subprocess.run(["mount", "-o", "remount,ro", str(small_disk)], check=True)
    try:
        failed = jobs.regenerate(site.id, on_small_disk)
        assert failed.status == "failed" and "Read-only file system" in failed.error
        assert served(on_small_disk) == before
        health = on_small_disk.test_client().get("/healthz")
        assert health.status_code == 503 and health.json["storage"] == "not writable"
    finally:
        subprocess.run(["mount", "-o", "remount,rw", str(small_disk)], check=True)

    again = jobs.regenerate(site.id, on_small_disk)
    assert again.status == "succeeded" and again.id > good.id
    session.expire_all()
    assert session.scalar(select(Site.generated_seq).where(Site.id == site.id)) \
        == session.scalar(select(Site.change_seq).where(Site.id == site.id))
