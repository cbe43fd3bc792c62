"""`flask --app webapp ...` commands. Each calls domain functions inside one session scope."""

from __future__ import annotations

import functools
from pathlib import Path

import click
from flask import Flask, current_app
from flask.cli import AppGroup
from sqlalchemy import func, select
from sqlalchemy.exc import OperationalError, ProgrammingError

from webapp import jobs
from webapp.db import session_scope
from webapp.errors import InvalidValue, NotFound
from webapp.importing import ImportFormatError, import_urls
from webapp.models import Site, Url
from webapp.sites import create_site, find_site, site_settings, update_site
from webapp.sitemaps import get_store
from webapp.urls import delete_url, save_url
from webapp.users import ROLES, create_user, ensure_admin, find_user, set_password


def friendly_errors(command):
    """Bad input ends the command with a one-line reason and a non-zero status, never a traceback."""

    @functools.wraps(command)
    def wrapper(*args, **kwargs):
        try:
            return command(*args, **kwargs)
        except (InvalidValue, NotFound, ImportFormatError) as exc:
            raise click.ClickException(str(exc)) from None
        except (OperationalError, ProgrammingError) as exc:
            reason = str(exc.orig).strip().splitlines()[0]
            raise click.ClickException(
                f"the database is not ready ({reason}); run `alembic upgrade head` first") from None

    return wrapper


sites = AppGroup("sites", help="Create, list, show and change sites.")
urls = AppGroup("urls", help="Add, delete and import the URLs of a site.")
sitemaps = AppGroup("sitemaps", help="Generate and export sitemap files.")
users = AppGroup("users", help="Manage dashboard accounts.")


@sites.command("create")
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


@sites.command("list")
@friendly_errors
def sites_list():
    """One line per site: id, slug, live URL count, sitemap URL."""
    with session_scope() as session:
        counts = dict(session.execute(select(Url.site_id, func.count()).where(
            Url.deleted_at.is_(None)).group_by(Url.site_id)).all())
        for site in session.scalars(select(Site).order_by(Site.id)):
            click.echo(f"{site.id}\t{site.slug}\t{counts.get(site.id, 0)} URLs\t{site.sitemap_url}")


@sites.command("show")
@click.argument("site_ref", metavar="SITE")
@friendly_errors
def sites_show(site_ref):
    """Every setting of a site as name=value lines."""
    with session_scope() as session:
        site = find_site(session, site_ref)
        click.echo(f"id={site.id}")
        for name, value in site_settings(site).items():
            click.echo(f"{name}={value}")


@sites.command("set")
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
        warning = update_site(session, find_site(session, site_ref), changes)
    if warning:
        click.echo(f"Note: {warning}", err=True)
    click.echo(f"updated {', '.join(changes)}")


@urls.command("add")
@click.argument("site_ref", metavar="SITE")
@click.argument("loc")
@click.option("--lastmod", help="W3C Datetime, e.g. 2024-05-01 or 2024-05-01T10:00:00+02:00.")
@click.option("--changefreq", type=click.Choice(["always", "hourly", "daily", "weekly", "monthly",
                                                 "yearly", "never"]))
@click.option("--priority", help="0.0 to 1.0.")
@click.option("--image", "images", multiple=True, help="URL of an image on the page (repeatable).")
@click.option("--alternate", "alternates", multiple=True,
              help="LANG=URL of a translation, e.g. de=https://... (repeatable).")
@friendly_errors
def urls_add(site_ref, loc, lastmod, changefreq, priority, images, alternates):
    """Add a URL, or update the one with the same loc."""
    fields = {name: value for name, value in
              (("lastmod", lastmod), ("changefreq", changefreq), ("priority", priority))
              if value is not None}
    with session_scope() as session:
        site = find_site(session, site_ref)
        url, created = save_url(session, site, loc, fields, images or None, alternates or None)
        click.echo(f"{'added' if created else 'updated'} {url.loc}")


@urls.command("delete")
@click.argument("site_ref", metavar="SITE")
@click.argument("loc")
@friendly_errors
def urls_delete(site_ref, loc):
    """Remove a URL from the sitemaps (it is kept to tell search engines it is gone)."""
    with session_scope() as session:
        url = delete_url(session, find_site(session, site_ref), loc)
        click.echo(f"deleted {url.loc}")


@urls.command("import")
@click.argument("site_ref", metavar="SITE")
@click.argument("file", type=click.Path(exists=True, dir_okay=False, path_type=Path))
@friendly_errors
def urls_import(site_ref, file):
    """Import a CSV (header loc,lastmod,changefreq,priority) or a list of URLs, one per line.

    Valid rows are stored, each rejected row is listed with its line number and reason, and
    the command exits with status 1 when any row was rejected.
    """
    with session_scope() as session, open(file, encoding="utf-8", newline="") as stream:
        report = import_urls(session, find_site(session, site_ref), stream)
    click.echo(report.summary())
    for line, reason in report.rejections:
        click.echo(f"line {line}: {reason}", err=True)
    if report.rejected > len(report.rejections):
        click.echo(f"... and {report.rejected - len(report.rejections)} more rejections", err=True)
    if report.rejected:
        raise SystemExit(1)


def _generate(site_id: int, slug: str) -> bool:
    generation = jobs.regenerate(site_id)
    if generation.status == "failed":
        click.echo(f"{slug}: failed: {generation.error}", err=True)
        return False
    click.echo(f"{slug}: {generation.file_count} files, {generation.url_count} URLs, "
               f"{generation.bytes} bytes ({generation.status}, generation {generation.id})")
    return True


@sitemaps.command("generate")
@click.argument("site_ref", metavar="SITE", required=False)
@click.option("--all", "all_sites", is_flag=True, help="Generate every site.")
@friendly_errors
def sitemaps_generate(site_ref, all_sites):
    """Generate and publish the sitemaps of SITE (or of every site with --all)."""
    if bool(site_ref) == all_sites:
        raise click.UsageError("give either SITE or --all")
    with session_scope() as session:
        if all_sites:
            targets = session.execute(select(Site.id, Site.slug).order_by(Site.id)).all()
        else:
            site = find_site(session, site_ref)
            targets = [(site.id, site.slug)]
    results = [_generate(site_id, slug) for site_id, slug in targets]
    if not all(results):
        raise SystemExit(1)


@sitemaps.command("export")
@click.argument("site_ref", metavar="SITE")
@click.argument("directory", type=click.Path(file_okay=False, path_type=Path))
@friendly_errors
def sitemaps_export(site_ref, directory):
    """Copy the published sitemap files (and their .gz twins) into DIRECTORY."""
    with session_scope() as session:
        site = find_site(session, site_ref)
    names = get_store().export(site.id, directory)
    if not names:
        raise click.ClickException(f"site {site.slug} has nothing published yet; "
                                   f"run `sitemaps generate {site.slug}` first")
    for name in names:
        click.echo(directory / name)


@users.command("create")
@click.argument("email")
@click.option("--role", type=click.Choice(ROLES), default="viewer", show_default=True)
@click.option("--password", prompt=True, hide_input=True, confirmation_prompt=True)
@friendly_errors
def users_create(email, role, password):
    """Create a dashboard account."""
    with session_scope() as session:
        user = create_user(session, email, password, role)
        click.echo(f"created {user.email} ({user.role})")


@users.command("set-password")
@click.argument("email")
@click.option("--password", prompt=True, hide_input=True, confirmation_prompt=True)
@friendly_errors
def users_set_password(email, password):
    """Give an account a new password."""
    with session_scope() as session:
        set_password(find_user(session, email), password)
    click.echo(f"password changed for {email}")


@users.command("ensure-admin")
@friendly_errors
def users_ensure_admin():
    """Create the first admin account if there is none, and say how to sign in."""
    with session_scope() as session:
        admin, password = ensure_admin(session)
        email = admin.email
    port = current_app.config.get("PORT", 5000)
    if password:
        click.echo(f"Created admin account. Sign in at http://127.0.0.1:{port}/ as {email} "
                   f"with password: {password}")
    else:
        click.echo(f"Sign in at http://127.0.0.1:{port}/ as {email}. Forgot the password? "
                   f"flask --app webapp users set-password {email}")


def init_app(app: Flask) -> None:
    for group in (sites, urls, sitemaps, users):
        app.cli.add_command(group)
