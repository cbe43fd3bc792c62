"""Every setting, read by small typed helpers that fail loudly, from the environment and from
one file, `INSTANCE_PATH/settings.env`, that every process reads: the web server, workers, the
scheduler, gunicorn and each command. A variable set in the environment wins over the file.

`load()` returns a plain mapping (`read()` also says where each value came from);
`create_app(config)` passes overrides by argument, so tests never touch the process environment.
Every variable here is documented in docs/configuration.md.
"""

from __future__ import annotations

import ipaddress
import os
import re
import secrets
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path

import click

PROJECT_ROOT = Path(__file__).resolve().parent.parent
# The most a gzip CSV or list of URLs may unpack to, in MB, unless MAX_UNPACKED_MB says
# otherwise: about ten million plain URLs, or a million rows with images and alternates.
MAX_UNPACKED_MB = 1024


class ConfigError(click.ClickException):
    """A setting in the environment is present but makes no sense.

    A click exception, so `flask ...` commands print it as one line instead of a traceback.
    """


def env_str(name: str, default: str | None = None, environ: Mapping[str, str] = os.environ) -> str | None:
    value = environ.get(name, "").strip()
    return value or default


def env_int(
    name: str,
    default: int,
    *,
    minimum: int | None = None,
    maximum: int | None = None,
    environ: Mapping[str, str] = os.environ,
) -> int:
    raw = env_str(name, environ=environ)
    if raw is None:
        return default
    try:
        value = int(raw)
    except ValueError:
        raise ConfigError(f"{name}={raw!r} is not a whole number") from None
    if minimum is not None and value < minimum:
        raise ConfigError(f"{name}={value} is below the minimum of {minimum}")
    if maximum is not None and value > maximum:
        raise ConfigError(f"{name}={value} is above the maximum of {maximum}")
    return value


def env_flag(name: str, default: bool, environ: Mapping[str, str] = os.environ) -> bool:
    raw = (env_str(name, environ=environ) or "").lower()
    if not raw:
        return default
    if raw in ("1", "true", "yes", "on"):
        return True
    if raw in ("0", "false", "no", "off"):
        return False
    raise ConfigError(f"{name}={raw!r} is not on or off (1/0, true/false, yes/no)")


def env_url(name: str, default: str, environ: Mapping[str, str] = os.environ) -> str:
    """An absolute http(s) URL."""
    value = env_str(name, default, environ)
    if not re.fullmatch(r"https?://[^\s/?#]+(/\S*)?", value):
        raise ConfigError(f"{name}={value!r} is not an http:// or https:// URL")
    return value


def parse_networks(value: str | tuple | list) -> tuple:
    """`127.0.0.1,10.0.0.0/8,::1` as IP networks; ValueError names a part that is not one."""
    parts = value.split(",") if isinstance(value, str) else value
    found = []
    for part in parts:
        if isinstance(part, str) and not part.strip():
            continue
        try:
            found.append(ipaddress.ip_network(part.strip() if isinstance(part, str) else part,
                                              strict=False))
        except ValueError:
            raise ValueError(f"{part!r} is not an IP address or network") from None
    return tuple(found)


def env_networks(name: str, environ: Mapping[str, str] = os.environ) -> tuple:
    try:
        return parse_networks(env_str(name, "", environ))
    except ValueError as exc:
        raise ConfigError(f"{name}: {exc} (write addresses or networks separated by commas, "
                          "e.g. 127.0.0.1,10.0.0.0/8)") from None


def env_secret(name: str, environ: Mapping[str, str] = os.environ,
               value: str | None = None) -> str | None:
    """A key's secret text (or one of a list's): at least 16 characters, or unset."""
    value = env_str(name, environ=environ) if value is None else value.strip()
    if value is not None and len(value) < 16:
        raise ConfigError(f"{name}: a key must be at least 16 characters (make one with "
                          "python3 -c 'import secrets; print(secrets.token_urlsafe(32))')")
    return value


def normalize_database_url(url: str) -> str:
    """Accept database URLs as people write them and pick the driver this project installs."""
    for prefix in ("postgres://", "postgresql://"):
        if url.startswith(prefix):
            return "postgresql+psycopg://" + url[len(prefix):]
    if not url.startswith(("sqlite:", "postgresql+psycopg:")):
        shown = re.sub(r"://([^:/@]*):[^@/]*@", r"://\1:***@", url)  # never echo a password
        raise ConfigError(
            f"DATABASE_URL {shown!r} is not supported: use sqlite:///path or postgresql://user@host/db"
        )
    return url


def instance_path(environ: Mapping[str, str] = os.environ) -> Path:
    return Path(env_str("INSTANCE_PATH", str(PROJECT_ROOT / "instance"), environ)).resolve()


def database_url(environ: Mapping[str, str] | None = None) -> str:
    """The database URL from DATABASE_URL, else a SQLite file in the instance folder. Without
    `environ`, the process's environment over the settings file (Alembic's migrations)."""
    environ = environment() if environ is None else environ
    raw = env_str("DATABASE_URL", environ=environ)
    if raw is None:
        return f"sqlite:///{instance_path(environ) / 'sitemaps.db'}"
    return normalize_database_url(raw)


def private_folder(path: Path) -> Path:
    """`path` as a folder, made mode 0700 when it is not there: what the app keeps in its
    instance folder (the database, the queue, uploads) is for its own user alone, whatever the
    umask. A folder already there keeps the mode it has."""
    path.parent.mkdir(parents=True, exist_ok=True)
    try:
        path.mkdir(mode=0o700)
    except FileExistsError:
        pass
    return path


def private_file(path: Path) -> None:
    """An empty file at `path`, mode 0600, unless one is there: a file another program then
    fills (SQLite's database, whose -wal and -shm files take its mode) is its owner's alone."""
    try:
        os.close(os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600))
    except FileExistsError:
        pass


def persistent_secret_key(folder: Path) -> str:
    """A random key generated once and kept in the instance folder, readable by its owner only.

    Several processes may start at once (gunicorn workers): the key is written whole to a
    private file and linked into place, so every process reads the one key that won.
    """
    path = folder / "secret_key"
    if not path.exists():
        private_folder(folder)
        draft = folder / f".secret_key.{os.getpid()}.{secrets.token_hex(4)}"
        fd = os.open(draft, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        with os.fdopen(fd, "w") as handle:
            handle.write(secrets.token_hex(32))
            handle.flush()
            os.fsync(handle.fileno())
        try:
            os.link(draft, path)
        except FileExistsError:
            pass  # another process was first; use its key
        finally:
            draft.unlink()
    key = path.read_text().strip()
    if not key:
        raise ConfigError(f"{path} is empty: delete it to have a new key made, or set SECRET_KEY")
    return key


SETTINGS_FILE = "settings.env"
# What `make run` writes on its first run (`flask --app webapp config init`).
SETTINGS_TEMPLATE = """\
# Settings of this instance, read by every process it runs: the web server, the workers, the
# scheduler and each `flask --app webapp` command. One KEY=value a line; a variable set in the
# environment wins over this file. Every setting: docs/configuration.md.
# `flask --app webapp config show` prints each value and where it came from.

# To try the dashboard against a site on this machine (http://127.0.0.1:8000/, say), let the
# server send requests to it: imports, verification, discovery and announcements go only
# to public addresses unless they are listed here.
# OUTBOUND_ALLOW=127.0.0.1

# Production: PostgreSQL and a broker every machine reaches (see docs/deployment.md).
# DATABASE_URL=postgresql://sitemaps:password@db.internal:5432/sitemaps
# CELERY_BROKER_URL=redis://redis.internal:6379/0
"""


MAKE_SETTINGS = ("PORT", "WORKERS", "BIND")  # the Makefile's: the port and gunicorn's workers


class _Asked(dict):
    """The environment as settings read it, remembering each name asked for."""

    def __init__(self, values: Mapping[str, str]):
        super().__init__(values)
        self.asked: set[str] = set()

    def get(self, name, default=None):
        self.asked.add(name)
        return super().get(name, default)


def file_settings(path: Path) -> dict[str, str]:
    """The KEY=value lines of a settings file (python-dotenv: comments, quotes and `export`
    as in a shell); empty when there is no file. A line without a value is refused."""
    if not path.is_file():
        return {}
    from dotenv import dotenv_values  # loaded by the processes that read a file

    values = dotenv_values(path, interpolate=False, encoding="utf-8")
    unset = sorted(name for name, value in values.items() if value is None)
    if unset:
        raise ConfigError(f"{path}: {', '.join(unset)} has no value: write NAME=value")
    if "INSTANCE_PATH" in values:
        raise ConfigError(f"{path}: INSTANCE_PATH cannot be set in the file it locates; set it "
                          "in the environment")
    made = sorted(set(values) & set(MAKE_SETTINGS))
    if made:
        raise ConfigError(f"{path}: {', '.join(made)} is read by make, before any file: set it "
                          f"in the environment or on make's command line (make run PORT=8000)")
    return dict(values)


def _merged(environ: Mapping[str, str], from_file: Mapping[str, str]) -> dict[str, str]:
    """The file's values under the environment's: a variable set (not blank) wins."""
    return {**from_file, **{name: value for name, value in environ.items() if value.strip()}}


def environment(environ: Mapping[str, str] = os.environ) -> dict[str, str]:
    """The environment with the instance's settings file beneath it (what `load` reads)."""
    return _merged(environ, file_settings(instance_path(environ) / SETTINGS_FILE))


@dataclass
class Reading:
    """What `read` found: the settings, where each came from, and the file it read."""

    settings: dict
    sources: dict[str, str]  # name: "environment", "settings file", "default" or "given"
    file: Path
    found: bool  # whether the file was there

    def said(self) -> str:
        """One line for a process's log: which file it read."""
        if self.found:
            named = sorted(name for name, source in self.sources.items()
                           if source == "settings file")
            return (f"settings: read {self.file} ({len(named)} set there"
                    f"{': ' + ', '.join(named) if named else ''}); the environment wins over it")
        return f"settings: no {self.file}; the environment and the defaults"


SECRETS = ("SECRET_KEY", "CREDENTIALS_KEY", "CREDENTIALS_OLD_KEYS")


def shown_value(name: str, value: object) -> str:
    """A setting's value as `config show` prints it: secrets masked, passwords in URLs too."""
    if name in SECRETS:
        return "(set, hidden)" if value else "(unset)"
    text = ", ".join(map(str, value)) if isinstance(value, tuple) else str(value)
    return re.sub(r"://([^:/@]*):[^@/]*@", r"://\1:***@", text)


def rows(reading: Reading) -> Iterator[tuple[str, str, str]]:
    """(name, value as shown, where it came from) of every setting, by name."""
    for name in sorted(reading.sources):
        yield name, shown_value(name, reading.settings.get(name)), reading.sources[name]


def load(overrides: Mapping[str, object] | None = None, environ: Mapping[str, str] = os.environ) -> dict:
    """All settings: overrides first, then the environment, then the settings file, then
    defaults."""
    return read(overrides, environ).settings


def read(overrides: Mapping[str, object] | None = None,
         environ: Mapping[str, str] = os.environ) -> Reading:
    """`load`, saying where each setting came from and which file was read. A name in the file
    that is no setting is refused (a typo would otherwise be ignored)."""
    given = dict(overrides or {})
    folder = private_folder(Path(given.get("INSTANCE_PATH") or instance_path(environ)))
    path = folder / SETTINGS_FILE
    from_file = file_settings(path)
    asked = _Asked(_merged(environ, from_file))
    settings = _settings(given, asked, folder)
    unknown = sorted(set(from_file) - asked.asked)
    if unknown:
        raise ConfigError(f"{path}: {', '.join(unknown)} is not a setting of this app (see "
                          "docs/configuration.md)")
    sources = {}
    for name in asked.asked | set(given) | {"INSTANCE_PATH"}:
        if name in given:
            sources[name] = "given"
        elif env_str(name, environ=environ) is not None:
            sources[name] = "environment"
        elif (from_file.get(name) or "").strip():
            sources[name] = "settings file"
        else:
            sources[name] = "default"
    return Reading(settings, sources, path, path.is_file())


def _settings(overrides: dict, environ: Mapping[str, str], folder: Path) -> dict:
    settings: dict[str, object] = {"INSTANCE_PATH": str(folder)}
    if "DATABASE_URL" in overrides:
        settings["DATABASE_URL"] = normalize_database_url(str(overrides.pop("DATABASE_URL")))
    else:
        raw = env_str("DATABASE_URL", environ=environ)
        settings["DATABASE_URL"] = (normalize_database_url(raw) if raw is not None
                                    else f"sqlite:///{folder / 'sitemaps.db'}")
    if "SECRET_KEY" not in overrides:
        settings["SECRET_KEY"] = env_str("SECRET_KEY", environ=environ) or persistent_secret_key(folder)
    if "SITEMAPS_DIR" not in overrides:
        settings["SITEMAPS_DIR"] = env_str("SITEMAPS_DIR", str(folder / "sitemaps"), environ)
    if "SITEMAP_KEEP_GENERATIONS" not in overrides:
        # At least 2: the set that was live a moment ago may still be read by a request.
        settings["SITEMAP_KEEP_GENERATIONS"] = env_int(
            "SITEMAP_KEEP_GENERATIONS", 5, minimum=2, maximum=1000, environ=environ
        )
    if "PUBLISHED_TTL_SECONDS" not in overrides:
        # How long a node trusts what it read of a site's published generation: a generation
        # published by another node is served within this time.
        settings["PUBLISHED_TTL_SECONDS"] = env_int("PUBLISHED_TTL_SECONDS", 1, minimum=0,
                                                    maximum=3600, environ=environ)
    if "PROXY_COUNT" not in overrides:
        settings["PROXY_COUNT"] = env_int("PROXY_COUNT", 0, minimum=0, maximum=10, environ=environ)
    if "SITE_CACHE_SECONDS" not in overrides:
        settings["SITE_CACHE_SECONDS"] = env_int("SITE_CACHE_SECONDS", 5, minimum=0, maximum=3600,
                                                 environ=environ)
    if "SERVE_MEMORY_MB" not in overrides:
        settings["SERVE_MEMORY_MB"] = env_int("SERVE_MEMORY_MB", 64, minimum=0, maximum=65536,
                                              environ=environ)
    for name, default in (("INDEXNOW_ENDPOINT", "https://api.indexnow.org/indexnow"),
                          ("GSC_ENDPOINT", "https://www.googleapis.com/")):
        if name not in overrides:
            settings[name] = env_url(name, default, environ)
    if "NOTIFY_TIMEOUT" not in overrides:
        settings["NOTIFY_TIMEOUT"] = env_int("NOTIFY_TIMEOUT", 10, minimum=1, maximum=300,
                                             environ=environ)
    if "NOTIFY_MAX_ATTEMPTS" not in overrides:
        settings["NOTIFY_MAX_ATTEMPTS"] = env_int("NOTIFY_MAX_ATTEMPTS", 8, minimum=1, maximum=50,
                                                  environ=environ)
    if "NOTIFY_RETRY_SECONDS" not in overrides:
        # The first retry waits about this long; each later one twice as long, up to 6 hours.
        settings["NOTIFY_RETRY_SECONDS"] = env_int("NOTIFY_RETRY_SECONDS", 60, minimum=1,
                                                   maximum=86400, environ=environ)
    if "SECURE_COOKIES" not in overrides:
        # On behind HTTPS (the browser then sends the session cookie over HTTPS only).
        settings["SECURE_COOKIES"] = env_flag("SECURE_COOKIES", False, environ)
    if "CELERY_BROKER_URL" not in overrides:
        # Where background work is queued for the workers. Unset: a folder of the instance
        # (kombu's filesystem transport), enough for web, scheduler and workers on one machine.
        settings["CELERY_BROKER_URL"] = env_str("CELERY_BROKER_URL", "", environ)
    if "CELERY_QUEUE" not in overrides:
        # The queue's name: deployments (or test runs) that share one broker use their own.
        settings["CELERY_QUEUE"] = env_str("CELERY_QUEUE", "sitemaps", environ)
    settings.setdefault("CELERY_TASK_ALWAYS_EAGER", False)  # tests: run each task where asked
    if "SCHEDULER_TICK_SECONDS" not in overrides:
        settings["SCHEDULER_TICK_SECONDS"] = env_int("SCHEDULER_TICK_SECONDS", 5, minimum=1,
                                                     maximum=3600, environ=environ)
    if "API_RATE_LIMIT" not in overrides:
        # Requests a minute per API token, counted in the database (shared by all workers).
        settings["API_RATE_LIMIT"] = env_int("API_RATE_LIMIT", 600, minimum=1, maximum=1_000_000,
                                             environ=environ)
    if "MAX_UPLOAD_MB" not in overrides:
        # The largest dashboard upload (a CSV of a million URLs is about 80 MB).
        settings["MAX_UPLOAD_MB"] = env_int("MAX_UPLOAD_MB", 200, minimum=1, maximum=10_240,
                                            environ=environ)
    if "MAX_UNPACKED_MB" not in overrides:
        # The most a gzip CSV or list may unpack to, from the dashboard or the command line.
        settings["MAX_UNPACKED_MB"] = env_int("MAX_UNPACKED_MB", MAX_UNPACKED_MB, minimum=1,
                                              maximum=1 << 20, environ=environ)
    if "OUTBOUND_ALLOW" not in overrides:
        # Non-public networks the server may send requests to (engines, imports, pre-flight).
        settings["OUTBOUND_ALLOW"] = env_networks("OUTBOUND_ALLOW", environ)
    if "DISCOVER_DELAY_MS" not in overrides:
        # A discovery crawl's pause between two requests to a site (one request at a time).
        settings["DISCOVER_DELAY_MS"] = env_int("DISCOVER_DELAY_MS", 1000, minimum=0,
                                                maximum=60_000, environ=environ)
    # Verification of a site's URLs (webapp.verify): each request's total deadline, requests
    # in flight at once per host, and the pause each of them makes before its next request.
    if "VERIFY_TIMEOUT" not in overrides:
        settings["VERIFY_TIMEOUT"] = env_int("VERIFY_TIMEOUT", 10, minimum=1, maximum=300,
                                             environ=environ)
    if "VERIFY_CONCURRENCY" not in overrides:
        settings["VERIFY_CONCURRENCY"] = env_int("VERIFY_CONCURRENCY", 4, minimum=1,
                                                 maximum=64, environ=environ)
    if "VERIFY_DELAY_MS" not in overrides:
        settings["VERIFY_DELAY_MS"] = env_int("VERIFY_DELAY_MS", 250, minimum=0,
                                              maximum=60_000, environ=environ)
    if "CREDENTIALS_KEY" not in overrides:
        # Seals the secrets stored in the database (webapp/accounts/sealing.py); unset: SECRET_KEY.
        settings["CREDENTIALS_KEY"] = env_secret("CREDENTIALS_KEY", environ)
    if "CREDENTIALS_OLD_KEYS" not in overrides:
        # Keys used before (rotation): what they sealed still opens.
        settings["CREDENTIALS_OLD_KEYS"] = tuple(
            env_secret("CREDENTIALS_OLD_KEYS", environ, part) for part in
            (env_str("CREDENTIALS_OLD_KEYS", "", environ) or "").split(",") if part.strip())
    if "PORT" not in overrides:
        settings["PORT"] = env_int("PORT", 5000, minimum=1, maximum=65535, environ=environ)
    settings.update(overrides)
    settings.setdefault("MAX_CONTENT_LENGTH", settings["MAX_UPLOAD_MB"] << 20)  # Flask's limit
    return settings
