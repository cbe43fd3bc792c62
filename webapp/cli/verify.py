"""`flask verify SITE`: check every live URL of a site on the live site now."""

from __future__ import annotations

import click
from flask import current_app

from webapp.cli import friendly_errors
from webapp.db import session_scope
from webapp.said import english
from webapp.sites import find_site
from webapp.verify import VerifyBusy, verify_site


@click.command("verify")
@click.argument("site")
@friendly_errors
def verify_command(site: str) -> None:
    """Fetch every live URL of SITE (robots.txt respected) and record what each answers;
    ends with one line of counts."""
    with session_scope() as session:
        site_id = find_site(session, site).id
    try:
        summary = verify_site(current_app._get_current_object(), site_id)
    except VerifyBusy as exc:
        raise click.ClickException(str(exc)) from None
    if summary.note:
        click.echo(english([summary.note]))
    blocked = summary.counts.get("blocked", 0)
    if blocked:
        click.echo(f"{blocked} not checked: robots.txt disallows them for the verifier")
    click.echo(summary.line())
