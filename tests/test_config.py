"""Settings: database URLs, typed environment helpers, precedence, and the kept secret key."""

from __future__ import annotations

import io
import os
import stat
import subprocess
import sys
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


# INSTANCE_PATH/settings.env: one file every process reads, beneath the environment.

def write_settings(folder: Path, text: str) -> Path:
    path = folder / "settings.env"
    path.write_text(text, encoding="utf-8")
    return path


def test_the_settings_file_is_read_and_the_environment_wins_over_it(tmp_path):
    from webapp.config import read
    write_settings(tmp_path, "# a comment\nOUTBOUND_ALLOW=127.0.0.1\nexport NOTIFY_TIMEOUT='20'\n"
                   "VERIFY_TIMEOUT=30\n")
    reading = read(environ={"INSTANCE_PATH": str(tmp_path), "VERIFY_TIMEOUT": "40",
                            "NOTIFY_TIMEOUT": "  "})
    assert [str(n) for n in reading.settings["OUTBOUND_ALLOW"]] == ["127.0.0.1/32"]
    assert reading.settings["NOTIFY_TIMEOUT"] == 20  # a blank variable is unset: the file's
    assert reading.settings["VERIFY_TIMEOUT"] == 40
    assert reading.sources["OUTBOUND_ALLOW"] == "settings file"
    assert reading.sources["VERIFY_TIMEOUT"] == "environment"
    assert reading.sources["API_RATE_LIMIT"] == "default"
    assert reading.said() == (f"settings: read {tmp_path / 'settings.env'} (2 set there: "
                              "NOTIFY_TIMEOUT, OUTBOUND_ALLOW); the environment wins over it")


def test_without_a_settings_file_the_environment_and_defaults_are_read(tmp_path):
    from webapp.config import read
    reading = read(environ={"INSTANCE_PATH": str(tmp_path)})
    assert not reading.found and reading.settings["OUTBOUND_ALLOW"] == ()
    assert reading.said() == f"settings: no {tmp_path / 'settings.env'}; the environment and the defaults"


@pytest.mark.parametrize(("text", "words"), [
    ("OUTBOUND_ALOW=127.0.0.1\n", "OUTBOUND_ALOW is not a setting of this app"),
    ("OUTBOUND_ALLOW\n", "OUTBOUND_ALLOW has no value: write NAME=value"),
    ("INSTANCE_PATH=/srv/other\n", "INSTANCE_PATH cannot be set in the file it locates"),
    ("PORT=8000\n", "PORT is read by make, before any file"),
    ("NOTIFY_TIMEOUT=forever\n", "NOTIFY_TIMEOUT='forever' is not a whole number"),
])
def test_a_settings_file_with_a_name_or_value_that_cannot_be_used_stops_loading(tmp_path, text,
                                                                                 words):
    path = write_settings(tmp_path, text)
    with pytest.raises(ConfigError) as caught:
        load(environ={"INSTANCE_PATH": str(tmp_path)})
    assert words in str(caught.value)
    assert str(path) in str(caught.value) or "NOTIFY_TIMEOUT" in str(caught.value)


def run_flask(tmp_path, *args, **environment):
    """`flask --app webapp ARGS` in a process whose environment names only the instance."""
    keep = {name: value for name, value in os.environ.items()
            if not name.isupper() or name in ("PATH", "HOME", "LANG", "PYTHONDONTWRITEBYTECODE")}
    return subprocess.run([str(Path(sys.executable).parent / "flask"), "--app", "webapp", *args],
                          env={**keep, "INSTANCE_PATH": str(tmp_path), **environment},
                          capture_output=True, text=True, timeout=120, cwd=Path(__file__).parents[1])


def test_config_show_says_where_each_setting_came_from_and_hides_secrets(tmp_path):
    write_settings(tmp_path, "OUTBOUND_ALLOW=127.0.0.1\nCREDENTIALS_KEY=a-key-of-sixteen-or-more\n"
                   "CELERY_BROKER_URL=redis://:hunter2hunter2@redis.internal:6379/0\n")
    done = run_flask(tmp_path, "config", "show", NOTIFY_TIMEOUT="25")
    assert done.returncode == 0, done.stderr
    lines = {line.split()[0]: line for line in done.stdout.splitlines()[1:]}
    assert lines["OUTBOUND_ALLOW"].split()[1:] == ["127.0.0.1/32", "[settings", "file]"]
    assert lines["NOTIFY_TIMEOUT"].split()[1:] == ["25", "[environment]"]
    assert lines["VERIFY_TIMEOUT"].split()[1:] == ["10", "[default]"]
    assert "(set, hidden)" in lines["CREDENTIALS_KEY"] and "(set, hidden)" in lines["SECRET_KEY"]
    assert "redis://:***@redis.internal:6379/0" in lines["CELERY_BROKER_URL"]
    assert "hunter2" not in done.stdout and "a-key-of-sixteen" not in done.stdout
    assert done.stdout.startswith(f"settings: read {tmp_path / 'settings.env'} (3 set there")


def test_config_init_writes_a_commented_file_once_for_its_owner(tmp_path):
    first = run_flask(tmp_path, "config", "init")
    path = tmp_path / "settings.env"
    assert first.returncode == 0 and f"wrote {path}" in first.stdout
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    text = path.read_text()
    assert "# OUTBOUND_ALLOW=127.0.0.1" in text
    assert all(not line.strip() or line.startswith("#") for line in text.splitlines())
    path.write_text(text + "OUTBOUND_ALLOW=127.0.0.1\n")
    second = run_flask(tmp_path, "config", "init")
    assert second.returncode == 0 and "is there already" in second.stdout
    assert path.read_text().endswith("OUTBOUND_ALLOW=127.0.0.1\n")  # kept as the owner wrote it


def test_migrations_and_commands_use_the_database_the_settings_file_names(tmp_path):
    database = tmp_path / "elsewhere.db"
    write_settings(tmp_path, f"DATABASE_URL=sqlite:///{database}\n")
    keep = {name: value for name, value in os.environ.items() if name != "DATABASE_URL"}
    done = subprocess.run([str(Path(sys.executable).parent / "alembic"), "upgrade", "head"],
                          env={**keep, "INSTANCE_PATH": str(tmp_path)}, capture_output=True,
                          text=True, timeout=120, cwd=Path(__file__).parents[1])
    assert done.returncode == 0, done.stderr
    created = run_flask(tmp_path, "sites", "create", "Shop", "https://shop.example.com/")
    assert created.returncode == 0, created.stderr
    assert not (tmp_path / "sitemaps.db").exists()  # the default database was never made
    listed = run_flask(tmp_path, "sites", "list", DATABASE_URL="")
    assert "shop" in listed.stdout, listed.stderr  # a blank variable leaves the file's
