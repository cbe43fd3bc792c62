"""`flask sites ...`: create, list, show and change sites."""

from __future__ import annotations

import click
from flask import current_app
from flask.cli import AppGroup
from sqlalchemy import select

from webapp.cli import friendly_errors
from webapp.db import session_scope
from webapp.models import Site, utcnow
from webapp.protocol import check_site_scope
from webapp.sitemaps import get_store
from webapp.sites import create_site, delete_site, find_site, site_settings, update_site

group = AppGroup("sites", help="Create, list, show and change sites.")


@group.command("create")
@click.argument("name")
@click.argument("base_url")
@click.option("--sitemap-url", help="Public URL of the sitemap (default: BASE_URL + sitemap.xml).")
@click.option("--encoding", default="utf-8", show_default=True,
              help="Encoding the site's server uses for non-ASCII characters in URLs.")
@friendly_errors
def sites_create(name, base_url, sitemap_url, encoding):
    """Create a site and print its slug."""
    with session_scope() as session:
        site, warning = create_site(session, name, base_url, sitemap_url, encoding)
        slug = site.slug
    if warning:
        click.echo(f"Note: {warning}", err=True)
    click.echo(slug)


@group.command("list")
@friendly_errors
def sites_list():
    """One line per site: id, slug, live URL count, sitemap URL."""
    with session_scope() as session:
        for site in session.scalars(select(Site).order_by(Site.id)):
            click.echo(f"{site.id}\t{site.slug}\t{site.url_count} URLs\t{site.sitemap_url}")


@group.command("show")
@click.argument("site_ref", metavar="SITE")
@friendly_errors
def sites_show(site_ref):
    """Every setting of a site as name=value lines."""
    with session_scope() as session:
        site = find_site(session, site_ref)
        click.echo(f"id={site.id}")
        for name, value in site_settings(site).items():
            click.echo(f"{name}={value}")
        warning = check_site_scope(site.base_url, site.sitemap_url)
    if warning:
        click.echo(f"Note: {warning}", err=True)


@group.command("set")
@click.argument("site_ref", metavar="SITE")
@click.argument("assignments", nargs=-1, required=True, metavar="NAME=VALUE...")
@friendly_errors
def sites_set(site_ref, assignments):
    """Change settings; all are checked before any is saved."""
    changes = {}
    for assignment in assignments:
        name, sep, value = assignment.partition("=")
        if not sep:
            raise click.ClickException(f"{assignment!r} is not NAME=VALUE")
        changes[name.strip()] = value
    with session_scope() as session:
        warning = update_site(session, find_site(session, site_ref), changes, operator=True)
    if warning:
        click.echo(f"Note: {warning}", err=True)
    click.echo(f"updated {', '.join(changes)}")


@group.command("delete")
@click.argument("site_ref", metavar="SITE")
@click.option("--yes", is_flag=True, help="Do not ask for confirmation.")
@friendly_errors
def sites_delete(site_ref, yes):
    """Delete a site: its URLs, generations, announcements and published files."""
    with session_scope() as session:
        site = find_site(session, site_ref)
        slug = site.slug
        if not yes:
            click.confirm(f"Delete site {slug} with its URLs and published sitemaps?", abort=True)
        delete_site(session, site, utcnow(), get_store(current_app))
    click.echo(f"deleted {slug}")
