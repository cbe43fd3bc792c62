"""`flask config ...`: the settings every process reads, and where each came from."""

from __future__ import annotations

import os

import click
from flask import current_app
from flask.cli import AppGroup

from webapp import config

group = AppGroup("config", help="The settings: INSTANCE_PATH/settings.env and the environment.")


@group.command("show")
def config_show():
    """Every setting, its value and where it came from (environment, settings file or
    default); secrets are not shown."""
    reading = current_app.extensions["settings"]
    click.echo(reading.said())
    shown = list(config.rows(reading))
    width = max(len(name) for name, _, _ in shown)
    for name, value, source in shown:
        click.echo(f"{name:{width}}  {value or '(empty)'}  [{source}]")


@group.command("init")
def config_init():
    """Write a commented INSTANCE_PATH/settings.env unless there is one (make run does this
    on its first run)."""
    path = current_app.extensions["settings"].file
    try:
        descriptor = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    except FileExistsError:
        click.echo(f"settings: {path} is there already; `flask --app webapp config show` "
                   "prints what it sets")
        return
    with os.fdopen(descriptor, "w", encoding="utf-8") as handle:
        handle.write(config.SETTINGS_TEMPLATE)
    click.echo(f"settings: wrote {path}, every line a comment: uncomment OUTBOUND_ALLOW there "
               "to try the dashboard against a site on this machine")


@group.command("check-production")
def config_check_production():
    """Refuse (exit status 2) unless the settings name what `make run-prod` needs: PostgreSQL
    and a broker every machine reaches (Redis or RabbitMQ)."""
    settings = current_app.config
    wrong = []
    if not settings["DATABASE_URL"].startswith("postgresql"):
        wrong.append("DATABASE_URL=postgresql://...")
    if not settings["CELERY_BROKER_URL"].startswith(("redis", "amqp")):
        wrong.append("CELERY_BROKER_URL=redis://... or amqp://...")
    if wrong:
        click.echo(f"run-prod needs {' and '.join(wrong)}, in the environment or in "
                   f"{current_app.extensions['settings'].file}", err=True)
        raise SystemExit(2)
