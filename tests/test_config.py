"""Settings: database URLs, typed environment helpers, precedence, and the kept secret key."""

from __future__ import annotations

import io
import os
import stat
from pathlib import Path

import pytest

from tests.builders import make_site
from tests.conftest import migrate
from tests.test_dashboard import as_role  # noqa: F401 - a fixture
from webapp import create_app
from webapp.config import ConfigError, env_int, load, normalize_database_url, persistent_secret_key
from webapp.urls import save_url


@pytest.mark.parametrize(("given", "expected"), [
    ("postgres://ann@db.internal/sitemaps", "postgresql+psycopg://ann@db.internal/sitemaps"),
    ("postgresql://ann:pw@db.internal:5433/sitemaps",
     "postgresql+psycopg://ann:pw@db.internal:5433/sitemaps"),
    ("postgresql+psycopg://ann@db.internal/sitemaps",
     "postgresql+psycopg://ann@db.internal/sitemaps"),
    ("sqlite:////var/lib/sitemaps/sitemaps.db", "sqlite:////var/lib/sitemaps/sitemaps.db"),
    ("sqlite://", "sqlite://"),
])
def test_database_urls_are_accepted_as_people_write_them(given, expected):
    assert normalize_database_url(given) == expected


@pytest.mark.parametrize("url", ["mysql://ann@db.internal/sitemaps", "/var/lib/sitemaps/db.sqlite"])
def test_an_unsupported_database_url_is_a_config_error_that_shows_it(url):
    with pytest.raises(ConfigError, match="is not supported") as caught:
        normalize_database_url(url)
    assert url in str(caught.value)


def test_env_int_uses_the_default_when_the_variable_is_missing_or_blank():
    assert env_int("WORKERS", 4, environ={}) == 4
    assert env_int("WORKERS", 4, environ={"WORKERS": "  "}) == 4


def test_env_int_reads_a_whole_number_within_its_bounds():
    assert env_int("WORKERS", 4, minimum=1, maximum=64, environ={"WORKERS": " 16 "}) == 16
    assert env_int("WORKERS", 4, minimum=1, maximum=64, environ={"WORKERS": "1"}) == 1
    assert env_int("WORKERS", 4, minimum=1, maximum=64, environ={"WORKERS": "64"}) == 64


@pytest.mark.parametrize(("raw", "message"), [
    ("sixteen", "WORKERS='sixteen' is not a whole number"),
    ("1.5", "WORKERS='1.5' is not a whole number"),
    ("0", "WORKERS=0 is below the minimum of 1"),
    ("65", "WORKERS=65 is above the maximum of 64"),
])
def test_env_int_refuses_nonsense_naming_the_variable(raw, message):
    with pytest.raises(ConfigError) as caught:
        env_int("WORKERS", 4, minimum=1, maximum=64, environ={"WORKERS": raw})
    assert str(caught.value) == message


def test_defaults_live_in_the_instance_folder(tmp_path):
    settings = load(environ={"INSTANCE_PATH": str(tmp_path)})

    assert settings["INSTANCE_PATH"] == str(tmp_path)
    assert settings["DATABASE_URL"] == f"sqlite:///{tmp_path / 'sitemaps.db'}"
    assert settings["SITEMAPS_DIR"] == str(tmp_path / "sitemaps")
    assert settings["SECRET_KEY"] == (tmp_path / "secret_key").read_text()
    assert settings["PORT"] == 5000
    assert settings["SITEMAP_KEEP_GENERATIONS"] == 5


def test_the_environment_replaces_defaults(tmp_path):
    environ = {"INSTANCE_PATH": str(tmp_path), "DATABASE_URL": "postgres://ann@db.internal/maps",
               "SECRET_KEY": "from-env", "SITEMAPS_DIR": "/srv/sitemaps", "PORT": "8080",
               "SITEMAP_KEEP_GENERATIONS": "2"}

    settings = load(environ=environ)

    assert settings["DATABASE_URL"] == "postgresql+psycopg://ann@db.internal/maps"
    assert settings["SECRET_KEY"] == "from-env"
    assert settings["SITEMAPS_DIR"] == "/srv/sitemaps"
    assert (settings["PORT"], settings["SITEMAP_KEEP_GENERATIONS"]) == (8080, 2)
    assert not (tmp_path / "secret_key").exists()


def test_overrides_replace_the_environment(tmp_path):
    environ = {"INSTANCE_PATH": str(tmp_path / "from-env"), "DATABASE_URL": "sqlite:////env.db",
               "SECRET_KEY": "from-env", "PORT": "8080", "SITEMAPS_DIR": "/srv/env"}
    overrides = {"INSTANCE_PATH": str(tmp_path / "given"), "DATABASE_URL": "postgres://ann@db/maps",
                 "SECRET_KEY": "given", "PORT": 9000, "SITEMAPS_DIR": "/srv/given", "TESTING": True}

    settings = load(overrides, environ=environ)

    assert settings["INSTANCE_PATH"] == str(tmp_path / "given")
    assert settings["DATABASE_URL"] == "postgresql+psycopg://ann@db/maps"
    assert (settings["SECRET_KEY"], settings["PORT"]) == ("given", 9000)
    assert (settings["SITEMAPS_DIR"], settings["TESTING"]) == ("/srv/given", True)


def test_an_overridden_instance_folder_moves_the_default_database(tmp_path):
    settings = load({"INSTANCE_PATH": str(tmp_path / "given"), "SECRET_KEY": "k"},
                    environ={"INSTANCE_PATH": str(tmp_path / "from-env")})

    assert settings["DATABASE_URL"] == f"sqlite:///{tmp_path / 'given' / 'sitemaps.db'}"
    assert settings["SITEMAPS_DIR"] == str(tmp_path / "given" / "sitemaps")


def test_a_bad_number_in_the_environment_stops_loading(tmp_path):
    with pytest.raises(ConfigError, match="PORT=0 is below the minimum of 1"):
        load(environ={"INSTANCE_PATH": str(tmp_path), "SECRET_KEY": "k", "PORT": "0"})


def test_the_secret_key_is_created_once_readable_by_its_owner_only(tmp_path):
    folder = tmp_path / "not" / "yet" / "there"

    first = persistent_secret_key(folder)

    assert len(first) == 64 and set(first) <= set("0123456789abcdef")
    assert stat.S_IMODE((folder / "secret_key").stat().st_mode) == 0o600
    assert persistent_secret_key(folder) == first
    assert persistent_secret_key(tmp_path / "elsewhere") != first


def test_an_unsupported_database_url_is_refused_without_echoing_its_password():
    with pytest.raises(ConfigError) as caught:
        normalize_database_url("mysql://ann:s3cret@db.example.com/sitemaps")
    assert "s3cret" not in str(caught.value) and "ann:***@" in str(caught.value)


def test_an_empty_secret_key_file_is_an_error_not_an_empty_key(tmp_path):
    (tmp_path / "secret_key").write_text("\n")
    with pytest.raises(ConfigError, match="is empty"):
        persistent_secret_key(tmp_path)


def test_making_the_secret_key_leaves_no_draft_behind(tmp_path):
    key = persistent_secret_key(tmp_path)
    assert [p.name for p in tmp_path.iterdir()] == ["secret_key"]
    assert persistent_secret_key(tmp_path) == key


def test_engine_settings_default_to_the_public_endpoints_and_read_the_environment(tmp_path):
    defaults = load({"INSTANCE_PATH": str(tmp_path)}, environ={"SECRET_KEY": "k"})
    assert defaults["INDEXNOW_ENDPOINT"] == "https://api.indexnow.org/indexnow"
    assert defaults["GSC_ENDPOINT"] == "https://www.googleapis.com/"
    assert (defaults["NOTIFY_TIMEOUT"], defaults["NOTIFY_MAX_ATTEMPTS"],
            defaults["NOTIFY_RETRY_SECONDS"]) == (10, 8, 60)
    settings = load({"INSTANCE_PATH": str(tmp_path)}, environ={
        "SECRET_KEY": "k", "INDEXNOW_ENDPOINT": "https://yandex.com/indexnow",
        "NOTIFY_TIMEOUT": "3"})
    assert settings["INDEXNOW_ENDPOINT"] == "https://yandex.com/indexnow"
    assert settings["NOTIFY_TIMEOUT"] == 3
    assert defaults["OUTBOUND_ALLOW"] == ()
    allowed = load({"INSTANCE_PATH": str(tmp_path)}, environ={
        "SECRET_KEY": "k", "OUTBOUND_ALLOW": " 127.0.0.1, 10.0.0.0/8,::1 "})["OUTBOUND_ALLOW"]
    assert [str(network) for network in allowed] == ["127.0.0.1/32", "10.0.0.0/8", "::1/128"]


@pytest.mark.parametrize(("name", "raw"), [("INDEXNOW_ENDPOINT", "api.indexnow.org/indexnow"),
                                           ("GSC_ENDPOINT", "ftp://googleapis.com/"),
                                           ("NOTIFY_TIMEOUT", "0"),
                                           ("NOTIFY_MAX_ATTEMPTS", "many"),
                                           ("OUTBOUND_ALLOW", "10.0.0.0/33"),
                                           ("OUTBOUND_ALLOW", "127.0.0.1,intranet")])
def test_bad_engine_settings_stop_loading_naming_the_variable(tmp_path, name, raw):
    with pytest.raises(ConfigError, match=name):
        load({"INSTANCE_PATH": str(tmp_path)}, environ={"SECRET_KEY": "k", name: raw})


def test_the_published_generation_ttl_is_a_few_seconds_at_most_an_hour(tmp_path):
    assert load(environ={"INSTANCE_PATH": str(tmp_path)})["PUBLISHED_TTL_SECONDS"] == 1
    assert load(environ={"INSTANCE_PATH": str(tmp_path),
                         "PUBLISHED_TTL_SECONDS": "0"})["PUBLISHED_TTL_SECONDS"] == 0
    with pytest.raises(ConfigError, match="PUBLISHED_TTL_SECONDS=3601 is above the maximum"):
        load(environ={"INSTANCE_PATH": str(tmp_path), "PUBLISHED_TTL_SECONDS": "3601"})


@pytest.fixture
def umask_022():
    """The umask of `make run` on most systems, whatever the test run's own."""
    before = os.umask(0o022)
    yield
    os.umask(before)


def exposed(folder: Path) -> list[tuple[str, str]]:
    """What in `folder`, the folder included, its group or other users can read or enter."""
    return [(str(path.relative_to(folder.parent)), oct(stat.S_IMODE(path.stat().st_mode)))
            for path in [folder, *sorted(folder.rglob("*"))] if path.stat().st_mode & 0o077]


def test_a_new_instance_and_its_queued_work_are_readable_by_their_owner_only(tmp_path,
                                                                              umask_022):
    instance = tmp_path / "instance"
    url = f"sqlite:///{instance / 'sitemaps.db'}"
    migrate(url)  # as `make run` starts: alembic upgrade head
    app = create_app({"INSTANCE_PATH": str(instance), "DATABASE_URL": url,
                      "CELERY_BROKER_URL": "", "CELERY_TASK_ALWAYS_EAGER": False,
                      "TESTING": True})
    try:
        with app.extensions["db_sessionmaker"]() as session:
            site = make_site(session, change_delay=2, schedule="off")
            save_url(session, site, f"{site.base_url}page")  # queues a run, on the embedded broker
            session.commit()
        # While the pool's connections are open, the database has its -wal and -shm files.
        assert {"secret_key", "sitemaps.db", "sitemaps.db-wal", "sitemaps.db-shm", "broker"} <= {
            path.name for path in instance.iterdir()}
        assert [path.name for path in (instance / "broker" / "queue").iterdir()] != []
        assert exposed(instance) == []
    finally:
        app.extensions["db_engine"].dispose()


def test_an_uploaded_import_waits_in_a_folder_of_its_owners_only(as_role, app, session,  # noqa: F811
                                                                    umask_022):
    make_site(session)
    editor = as_role("editor")
    answer = editor.post("/sites/shop/import", content_type="multipart/form-data", data={
        "csrf_token": editor.csrf, "file": (io.BytesIO(b"loc\nhttps://shop.example.com/a\n"),
                                            "urls.csv")})
    assert answer.status_code == 302
    instance = Path(app.config["INSTANCE_PATH"])
    assert (instance / "uploads").is_dir()
    assert exposed(instance) == []
