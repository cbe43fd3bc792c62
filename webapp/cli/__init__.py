"""`flask --app webapp ...` commands. Each calls domain functions inside one session scope."""

from __future__ import annotations

import functools

import click
from flask import Flask
from sqlalchemy.exc import IntegrityError, OperationalError, ProgrammingError

from webapp.errors import InvalidValue, NotFound
from webapp.leases import SiteBusy
from webapp.urls import ImportFormatError


def friendly_errors(command):
    """Bad input ends the command with a one-line reason and a non-zero status, never a traceback."""

    @functools.wraps(command)
    def wrapper(*args, **kwargs):
        try:
            return command(*args, **kwargs)
        except (InvalidValue, NotFound, ImportFormatError, SiteBusy) as exc:
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


def init_app(app: Flask) -> None:
    from webapp.cli import (
        credentials,
        discover,
        notify,
        scheduler,
        sitemaps,
        sites,
        tokens,
        urls,
        users,
        verify,
        worker,
    )

    for module in (sites, urls, sitemaps, notify, scheduler, users, tokens, credentials):
        app.cli.add_command(module.group)
    app.cli.add_command(notify.notify_command)
    app.cli.add_command(worker.worker)
    app.cli.add_command(discover.discover_command)
    app.cli.add_command(verify.verify_command)
