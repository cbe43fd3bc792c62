"""`flask credentials ...`: the secrets stored sealed in the database (webapp/accounts/sealing.py)."""

from __future__ import annotations

import click
from flask import current_app
from flask.cli import AppGroup

from webapp import notify
from webapp.cli import friendly_errors
from webapp.db import session_scope

group = AppGroup("credentials", help="Manage the secrets stored encrypted in the database.")


@group.command("rotate")
@friendly_errors
def credentials_rotate():
    """Seal every stored service-account key again under CREDENTIALS_KEY (set the key before
    in CREDENTIALS_OLD_KEYS); afterwards the old keys may be dropped."""
    with session_scope() as session:
        done, failed = notify.gsc_account.reseal_all(session, current_app.config)
    click.echo(f"{done} key{'s' if done != 1 else ''} sealed again under CREDENTIALS_KEY")
    for slug, reason in failed:
        click.echo(f"site {slug}: {reason}; left as it was", err=True)
    if failed:
        raise SystemExit(1)
