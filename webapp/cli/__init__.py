"""`flask --app webapp ...` commands. Each calls domain functions inside one session scope."""

from __future__ import annotations

import functools
from importlib import import_module

import click
from flask import Flask
from flask.cli import AppGroup
from sqlalchemy.exc import IntegrityError, OperationalError, ProgrammingError

from webapp.errors import InvalidValue, NotFound


def _refusals() -> tuple[type[Exception], ...]:
    """The errors that say what was wrong with the input. Read when a command fails, so that
    a command that imports neither leases nor imports does not load them to succeed."""
    from webapp.leases import SiteBusy
    from webapp.outbound import StoppedByOwnRules
    from webapp.urls import ImportFormatError

    return InvalidValue, NotFound, ImportFormatError, SiteBusy, StoppedByOwnRules


def friendly_errors(command):
    """Bad input ends the command with a one-line reason and a non-zero status, never a traceback."""

    @functools.wraps(command)
    def wrapper(*args, **kwargs):
        try:
            return command(*args, **kwargs)
        except _refusals() as exc:
            raise click.ClickException(str(exc)) from None
        except IntegrityError:
            raise click.ClickException("another change to the same data was saved at the same "
                                       "time; nothing was changed, run the command again") from None
        except (OperationalError, ProgrammingError) as exc:
            reason = str(exc.orig).strip().splitlines()[0]
            if "locked" in reason or "could not obtain lock" in reason:
                raise click.ClickException(f"the database is busy ({reason}); try again") from None
            if "no such table" in reason or "does not exist" in reason or "no such column" in reason:
                raise click.ClickException(f"the database is not ready ({reason}); run "
                                           "`alembic upgrade head` first") from None
            raise click.ClickException(f"the database is unreachable ({reason}); try again "
                                       "when it answers") from None
        except OSError as exc:
            where = f": {exc.filename}" if exc.filename else ""
            raise click.ClickException(f"{exc.strerror or exc}{where}") from None

    return wrapper


# Each command's name and where it is defined: imported when it runs (or `--help` lists it), so
# that a command loads only what it uses, not every other command's domain.
COMMANDS = {
    "sites": "sites:group", "urls": "urls:group", "sitemaps": "sitemaps:group",
    "notifications": "notify:group", "notify": "notify:notify_command",
    "scheduler": "scheduler:group", "worker": "worker:worker", "users": "users:group",
    "tokens": "tokens:group", "credentials": "credentials:group",
    "discover": "discover:discover_command", "verify": "verify:verify_command",
    "config": "config:group",
}


class LazyCommands(AppGroup):
    """`app.cli` with the commands above imported on first use (click's lazy group pattern)."""

    def list_commands(self, ctx: click.Context) -> list[str]:
        return sorted({*super().list_commands(ctx), *COMMANDS})

    def get_command(self, ctx: click.Context, name: str) -> click.Command | None:
        if name in COMMANDS and name not in self.commands:
            module, attribute = COMMANDS[name].split(":")
            self.add_command(getattr(import_module(f"{__name__}.{module}"), attribute), name)
        return super().get_command(ctx, name)


def init_app(app: Flask) -> None:
    commands = LazyCommands(app.cli.name)
    commands.commands.update(app.cli.commands)
    app.cli = commands
