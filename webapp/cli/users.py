"""`flask users ...`: dashboard accounts."""

from __future__ import annotations

import click
from flask import current_app
from flask.cli import AppGroup

from webapp.cli import friendly_errors
from webapp.db import session_scope
from webapp.accounts.users import ROLES, create_user, ensure_admin, find_user, set_password

group = AppGroup("users", help="Manage dashboard accounts.")


@group.command("create")
@click.argument("email")
@click.option("--role", type=click.Choice(ROLES), default="viewer", show_default=True)
@click.option("--password", prompt=True, hide_input=True, confirmation_prompt=True)
@friendly_errors
def users_create(email, role, password):
    """Create a dashboard account."""
    with session_scope() as session:
        user = create_user(session, email, password, role)
        click.echo(f"created {user.email} ({user.role})")


@group.command("set-password")
@click.argument("email")
@click.option("--password", prompt=True, hide_input=True, confirmation_prompt=True)
@friendly_errors
def users_set_password(email, password):
    """Give an account a new password."""
    with session_scope() as session:
        set_password(session, find_user(session, email), password)
    click.echo(f"password changed for {email}")


@group.command("ensure-admin")
@click.option("--bind", metavar="HOST:PORT",
              help="where the dashboard will listen (make run-prod's BIND); default 127.0.0.1:PORT")
@friendly_errors
def users_ensure_admin(bind: str | None):
    """Create the first admin account if there is none, and say how to sign in."""
    with session_scope() as session:
        admin, password = ensure_admin(session)
        email = admin.email
    host, _, port = (bind or f"127.0.0.1:{current_app.config.get('PORT', 5000)}").rpartition(":")
    host = "127.0.0.1" if host in ("", "0.0.0.0", "[::]", "::") else host
    if password:
        click.echo(f"Created the admin account {email} with password: {password}")
    else:
        click.echo(f"The admin account is {email} (for a new password, run "
                   f"flask --app webapp users set-password {email}).")
    click.echo(current_app.extensions["settings"].said())
    click.echo(f"Sign in at http://{host}:{port}/sign-in with that e-mail address.")
