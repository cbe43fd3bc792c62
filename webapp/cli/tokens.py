"""`flask tokens ...`: bearer tokens of the JSON API."""

from __future__ import annotations

import click
from flask.cli import AppGroup

from webapp.cli import friendly_errors
from webapp.db import session_scope
from webapp.models import MAX_ID, utcnow
from webapp.sites import find_site
from webapp.accounts.tokens import SCOPES, create_token, find_token, list_tokens, revoke
from webapp.accounts.users import find_user

group = AppGroup("tokens", help="Manage API tokens.")


@group.command("create")
@click.argument("email")
@click.option("--site", "sites", multiple=True, metavar="SITE",
              help="A site the token may act on (repeat for several).")
@click.option("--all-sites", is_flag=True, help="Every site, including sites made later.")
@click.option("--scope", type=click.Choice(SCOPES), required=True)
@click.option("--name", default="", help="What the token is for, e.g. 'CMS on www'.")
@friendly_errors
def tokens_create(email, sites, all_sites, scope, name):
    """Create a token acting for EMAIL's account; the secret is printed once, never again."""
    if bool(sites) == all_sites:
        raise click.UsageError("give --site SITE (one or more) or --all-sites")
    with session_scope() as session:
        user = find_user(session, email)
        chosen = None if all_sites else [find_site(session, ref) for ref in sites]
        token, secret = create_token(session, user, name or f"{scope} token", scope, chosen)
        where = "all sites" if all_sites else ", ".join(site.slug for site in chosen)
        token_id = token.id
    click.echo(f"token {token_id} for {email}: {scope} on {where}")
    click.echo(secret)
    click.echo("Keep it now: only a digest is stored, so it cannot be shown again.", err=True)


@group.command("list")
@click.option("--user", "email", help="Only this account's tokens.")
@friendly_errors
def tokens_list(email):
    """Every token: id, owner, scope, sites, last use; never the secrets."""
    with session_scope() as session:
        user = find_user(session, email) if email else None
        for token in list_tokens(session, user):
            where = "all sites" if token.all_sites else \
                ",".join(site.slug for site in token.sites) or "(its sites were deleted)"
            used = f"{token.last_used_at:%Y-%m-%d %H:%M}" if token.last_used_at else "never"
            state = f"revoked {token.revoked_at:%Y-%m-%d %H:%M}" if token.revoked_at else "active"
            click.echo(f"{token.id}\t{token.prefix}...\t{token.user.email}\t{token.scope}\t"
                       f"{where}\t{token.name}\tlast used {used}\t{state}")


@group.command("revoke")
@click.argument("token_id", type=click.IntRange(1, MAX_ID))
@friendly_errors
def tokens_revoke(token_id):
    """Refuse the token from now on."""
    with session_scope() as session:
        revoke(find_token(session, token_id), utcnow())
    click.echo(f"token {token_id} revoked")
