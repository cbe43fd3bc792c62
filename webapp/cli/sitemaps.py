"""`flask sitemaps ...`: generate, export, and look back at generations."""

from __future__ import annotations

from pathlib import Path

import click
from flask.cli import AppGroup
from sqlalchemy import select

from webapp import jobs, notify
from webapp.cli import friendly_errors
from webapp.cli.notify import report
from webapp.db import session_scope
from webapp.models import MAX_ID, Generation, Site
from webapp.sitemaps import PublishedSet, diff, get_store
from webapp.sites import find_site
from webapp.verify import publishing

group = AppGroup("sitemaps", help="Generate and export sitemap files, and look back at them.")


def _generate(site_id: int, slug: str, announce: bool) -> bool:
    generation = jobs.regenerate(site_id, trigger="cli")
    if generation.status == "failed":
        click.echo(f"{slug}: failed: {generation.error}", err=True)
        return False
    files = "1 file" if generation.file_count == 1 else f"{generation.file_count} files"
    click.echo(f"{slug}: {files}, {generation.url_count} URLs, "
               f"{generation.bytes} bytes ({generation.status}, generation {generation.number})")
    if generation.left_out:  # by verification; the URLs are listed on the Verification page
        click.echo(f"{slug}: {publishing.describe(generation.left_out)} (`flask --app webapp "
                   f"verify {slug}` checks them again)")
    if announce and generation.status in ("succeeded", "unchanged"):
        planned, attempted = notify.notify_site(site_id)
        if planned or attempted:
            report(sorted(set(planned) | set(attempted)))
    return True


@group.command("generate")
@click.argument("site_ref", metavar="SITE", required=False)
@click.option("--all", "all_sites", is_flag=True, help="Generate every site.")
@click.option("--notify/--no-notify", "announce", default=True, show_default=True,
              help="Announce the changes to the site's search engines afterwards.")
@friendly_errors
def sitemaps_generate(site_ref, all_sites, announce):
    """Generate and publish the sitemaps of SITE (or of every site with --all)."""
    if bool(site_ref) == all_sites:
        raise click.UsageError("give either SITE or --all")
    with session_scope() as session:
        if all_sites:
            targets = session.execute(select(Site.id, Site.slug).order_by(Site.id)).all()
        else:
            site = find_site(session, site_ref)
            targets = [(site.id, site.slug)]
    results = [_generate(site_id, slug, announce) for site_id, slug in targets]
    if not all(results):
        raise SystemExit(1)


@group.command("export")
@click.argument("site_ref", metavar="SITE")
@click.argument("directory", type=click.Path(file_okay=False, path_type=Path))
@friendly_errors
def sitemaps_export(site_ref, directory):
    """Copy the published sitemap files (and their .gz twins) into DIRECTORY."""
    with session_scope() as session:
        site = find_site(session, site_ref)
    names = get_store().export(site.storage_key, directory)
    if not names:
        raise click.ClickException(f"site {site.slug} has nothing published yet; "
                                   f"run `sitemaps generate {site.slug}` first")
    for name in names:
        click.echo(directory / name)


@group.command("history")
@click.argument("site_ref", metavar="SITE")
@click.option("--limit", default=20, show_default=True, help="How many generations to list.")
@friendly_errors
def sitemaps_history(site_ref, limit):
    """The latest generations: status, duration, counts, and whether their files are kept."""
    store = get_store()
    with session_scope() as session:
        site = find_site(session, site_ref)
        current = store.current_generation(site.storage_key)
        stored = store.kept_generations(site.storage_key)
        generations = session.scalars(select(Generation).where(Generation.site_id == site.id)
                                      .order_by(Generation.id.desc()).limit(limit)).all()
        targets = jobs.site_numbers(session, site.id, [g.rollback_of for g in generations])
        click.echo("number\tstatus\ttrigger\tstarted\tseconds\turls\tfiles\tbytes\tfiles kept")
        for g in generations:
            seconds = f"{(g.finished_at - g.started_at).total_seconds():.1f}" if g.finished_at else "-"
            kept = ("published" if g.id == current else
                    "kept" if g.id in stored else "-")
            note = (f"\trollback of {targets.get(g.rollback_of, g.rollback_of)}"
                    if g.rollback_of else "")
            error = f"\t{g.error}" if g.error else ""
            if g.left_out:
                note += f"\t{publishing.describe(g.left_out)}"
            click.echo(f"{g.number}\t{g.status}\t{g.trigger or '-'}\t{g.started_at:%Y-%m-%d %H:%M:%S}\t"
                       f"{seconds}\t"
                       f"{g.url_count}\t{g.file_count}\t{g.bytes}\t{kept}{note}{error}")


@group.command("diff")
@click.argument("site_ref", metavar="SITE")
@click.argument("generations", nargs=-1, type=click.IntRange(0, MAX_ID), metavar="[OLD NEW]")
@click.option("--limit", default=50, show_default=True, help="URLs listed per kind of change.")
@friendly_errors
def sitemaps_diff(site_ref, generations, limit):
    """URLs added (+), removed (-) and changed (~) from generation OLD to NEW (numbers as
    `sitemaps history` lists them; 0: nothing published).

    Without OLD and NEW: from the generation before the published one to the published one.
    """
    store = get_store()
    with session_scope() as session:
        site = find_site(session, site_ref)
        if len(generations) == 2:  # the site's numbers, as people say them, to ids
            generations = tuple(jobs.by_number(session, site, n).id if n else 0
                                for n in generations)
        if not generations:
            stored = store.kept_generations(site.storage_key)
            kept = sorted(g for g in session.scalars(
                select(Generation.id).where(Generation.site_id == site.id,
                                            Generation.status == "succeeded"))
                if g in stored)
            if not kept:
                raise click.ClickException(f"site {site.slug} has no generation kept to compare")
            current = store.current_generation(site.storage_key) or kept[-1]
            earlier = [g for g in kept if g < current]
            generations = (earlier[-1] if earlier else 0, current)
    if len(generations) != 2:
        raise click.UsageError("give two generation numbers, or none")
    # Generation 0 stands for "nothing published": every URL of the first one is added.
    sets = [store.generation_set(site.storage_key, g) if g else PublishedSet(0, {})
            for g in generations]
    with session_scope() as session:
        said = {0: 0, **jobs.site_numbers(session, site.id, generations)}
    for generation, kept in zip(generations, sets):
        if kept is None:
            raise click.ClickException(f"the files of generation {said[generation]} are not kept")
    result = diff(*sets, store.local)
    for mark, items in (("+", result.added), ("-", result.removed),
                        ("~", [f"{loc}  ({what})" for loc, what in result.changed])):
        for item in items[:limit]:
            click.echo(f"{mark} {item}")
        if len(items) > limit:
            click.echo(f"{mark} ... and {len(items) - limit} more")
    click.echo(f"generation {said[generations[0]]} -> {said[generations[1]]}: "
               f"{len(result.added)} added, "
               f"{len(result.removed)} removed, {len(result.changed)} changed")


@group.command("rollback")
@click.argument("site_ref", metavar="SITE")
@click.argument("number", type=click.IntRange(1, MAX_ID), metavar="GENERATION")
@friendly_errors
def sitemaps_rollback(site_ref, number):
    """Publish the files of an older generation again (until the next regeneration).
    GENERATION is its number, as `sitemaps history` and the dashboard say it."""
    with session_scope() as session:
        site = find_site(session, site_ref)
        target_id = jobs.by_number(session, site, number).id
    generation = jobs.rollback(site.id, target_id)
    if generation.status == "unchanged":
        click.echo(f"{site.slug}: generation {number} holds the files published now; "
                   "nothing to do")
        return
    if generation.status != "succeeded":
        raise click.ClickException(f"rollback {generation.status}: "
                                   f"{generation.error or 'a newer generation was published'}")
    click.echo(f"{site.slug}: generation {generation.number} publishes the files of generation "
               f"{number} ({generation.url_count} URLs)")
