"""`flask discover SITE`: crawl a site's pages for URLs its sitemap lacks."""

from __future__ import annotations

import click
from flask import current_app

from webapp import discover
from webapp.cli import friendly_errors
from webapp.db import session_scope
from webapp.said import english
from webapp.sites import find_site


@click.command("discover")
@click.argument("site_ref", metavar="SITE")
@click.option("--max-pages", default="100", show_default=True, help="Pages to fetch at most.")
@click.option("--max-depth", default="3", show_default=True,
              help="Links to follow from the base URL at most.")
@click.option("--max-minutes", default="5", show_default=True, help="Minutes to crawl at most.")
@click.option("--accept", is_flag=True, help="Add the new URLs found to the site.")
@friendly_errors
def discover_command(site_ref, max_pages, max_depth, max_minutes, accept):
    """Crawl SITE from its base URL and list what it found; ends with one line
    `N found: A new, B known, C excluded`."""
    limits = discover.check_limits(max_pages, max_depth, max_minutes)
    with session_scope() as session:
        site_id = find_site(session, site_ref).id
    report = discover.crawl(current_app._get_current_object(), site_id, limits)
    if report.robots:
        click.echo(f"note: {english([report.robots])}", err=True)
    if report.cut():
        click.echo(f"note: {report.cut()}", err=True)
    if accept:
        with session_scope() as session:
            added = discover.accept(session, find_site(session, site_id))
        for error in added.errors:
            click.echo(f"not added: {error.message}", err=True)
    click.echo(report.line())
