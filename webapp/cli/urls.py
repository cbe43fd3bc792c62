"""`flask urls ...`: add, show, delete and import the URLs of a site."""

from __future__ import annotations

import json
import re
from pathlib import Path

import click
from flask import current_app
from flask.cli import AppGroup
from sqlalchemy import select

from webapp.cli import friendly_errors
from webapp.db import session_scope
from webapp.models import Url
from webapp.outbound import Policy
from webapp.protocol import CHANGEFREQS, normalize_url
from webapp.protocol.news import check_news
from webapp.sites import find_site
from webapp.urls import (
    ENCODINGS,
    check_encoding_choice,
    check_url,
    csv_chunks,
    delete_url,
    fetch_source,
    find_url,
    hreflang,
    import_opened,
    news_notes,
    open_import,
    read_videos_file,
    save_news,
    shown,
    videos_json,
    write_url,
)

group = AppGroup("urls", help="Add, delete and import the URLs of a site.")


@group.command("add")
@click.argument("site_ref", metavar="SITE")
@click.argument("loc")
@click.option("--lastmod", help="W3C Datetime, e.g. 2024-05-01 or 2024-05-01T10:00:00+02:00.")
@click.option("--changefreq", help=f"One of {', '.join(CHANGEFREQS)}.")
@click.option("--priority", help="0.0 to 1.0.")
@click.option("--image", "images", multiple=True, help="URL of an image on the page (repeatable).")
@click.option("--alternate", "alternates", multiple=True,
              help="LANG=URL of a translation, e.g. de=https://... (repeatable).")
@click.option("--videos-json", "videos_file", type=click.File("r", encoding="utf-8"),
              help="A JSON file (- for standard input) holding the page's videos: a list of "
                   "objects with the API's video fields, as `urls show --json` prints them; "
                   "they replace the stored ones ([] removes them).")
@click.option("--news-date", help="Google News: when the article was published (W3C, at "
              "least the day).")
@click.option("--news-title", help="Google News: the article's title.")
@click.option("--no-news", is_flag=True, help="Remove the URL's Google News data.")
@friendly_errors
def urls_add(site_ref, loc, lastmod, changefreq, priority, images, alternates, videos_file,
             news_date, news_title, no_news):
    """Add a URL, or update the one with the same loc."""
    fields = {name: value for name, value in
              (("lastmod", lastmod), ("changefreq", changefreq), ("priority", priority))
              if value is not None}
    given_news = no_news or news_date is not None or news_title is not None
    article = None if no_news else check_news(news_date, news_title)  # checked before writing
    with session_scope() as session:
        site = find_site(session, site_ref)
        videos = None if videos_file is None else read_videos_file(videos_file.read())
        saved = write_url(session, site, check_url(site, loc, fields, images or None,
                                                   alternates or None, videos))
        news_changed = given_news and save_news(session, site, saved.url.loc, article)
        for note in (*saved.notes, *news_notes(article)):
            click.echo(f"note: {note.english()}")
        if saved.created:
            click.echo(f"added {saved.url.loc}")
        elif not saved.changes and not news_changed:
            click.echo(f"unchanged {saved.url.loc}: it already has these values")
        else:
            click.echo(f"updated {saved.url.loc}")
            for name, (old, new) in saved.changes.items():
                click.echo(f"  {name}: {shown(name, old)} -> {shown(name, new)}")
        if news_changed and not saved.created:
            said = f"{article.publication_date} {article.title}" if article else "none"
            click.echo(f"  news: {said}")
        # As CSV imports and the API warn: the pairs of this URL left without a return link.
        missing = hreflang.unreturned_among(session, site, [saved.url.loc])
        if missing.count:
            click.echo(f"warning: {missing.count} hreflang alternates do not list their page "
                       f"back, and search engines ignore such pairs: {missing.describe()} Add "
                       f"the return links, or complete the clusters: flask --app webapp urls "
                       f"complete-hreflang {site.slug}")


@group.command("show")
@click.argument("site_ref", metavar="SITE")
@click.argument("loc")
@click.option("--json", "as_json", is_flag=True,
              help="Print it as JSON (the API's fields); its videos list is what --videos-json "
                   "of `urls add` reads.")
@friendly_errors
def urls_show(site_ref, loc, as_json):
    """Every stored value of a URL: its fields, images, language versions, videos and news."""
    with session_scope() as session:
        site = find_site(session, site_ref)
        url = find_url(session, site, normalize_url(loc, site.encoding))
        shown_url = {"loc": url.loc, "lastmod": url.lastmod, "changefreq": url.changefreq,
                     "priority": url.priority, "images": [image.loc for image in url.images],
                     "alternates": {a.hreflang: a.href for a in url.alternates},
                     "videos": videos_json(url.videos),
                     "news": url.news and {"publication_date": url.news.publication_date,
                                           "title": url.news.title}}
    if as_json:
        click.echo(json.dumps(shown_url, ensure_ascii=False, indent=2))
        return
    for name in ("loc", "lastmod", "changefreq", "priority"):
        click.echo(f"{name}: {'' if shown_url[name] is None else shown_url[name]}")
    for image in shown_url["images"]:
        click.echo(f"image: {image}")
    for lang, href in shown_url["alternates"].items():
        click.echo(f"alternate: {lang}={href}")
    for number, video in enumerate(shown_url["videos"], start=1):
        click.echo(f"video {number}:")
        for name, value in video.items():
            if value not in (None, []):
                click.echo(f"  {name}: {_shown_value(value)}")
    if shown_url["news"]:
        click.echo(f"news: {shown_url['news']['publication_date']} {shown_url['news']['title']}")


def _shown_value(value: object) -> str:
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, list):
        return ", ".join(value)
    return str(value).replace("\n", "\\n")  # one line per field


@group.command("delete")
@click.argument("site_ref", metavar="SITE")
@click.argument("loc")
@friendly_errors
def urls_delete(site_ref, loc):
    """Remove a URL from the sitemaps (it is kept to tell search engines it is gone)."""
    with session_scope() as session:
        url = delete_url(session, find_site(session, site_ref), loc)
        click.echo(f"deleted {url.loc}")


@group.command("import")
@click.argument("site_ref", metavar="SITE")
@click.argument("source", metavar="FILE|URL")
@click.option("--encoding", type=click.Choice(list(ENCODINGS), case_sensitive=False),
              default="utf-8", show_default=True,
              help="Of a CSV or list file; shift_jis is what Excel on Japanese Windows saves.")
@click.option("--rewrite-origin", is_flag=True,
              help="Sitemaps: move URLs on the file's origin (scheme://host[:port] of its "
                   "first URL) to the site's, e.g. http://example.com to https://example.com.")
@friendly_errors
def urls_import(site_ref, source, encoding, rewrite_origin):
    """Import a CSV (header loc,lastmod,changefreq,priority,images,image_titles,
    image_captions,alternates and video_thumbnail_locs, video_titles, ... as the README lists
    them and `urls export` writes), a list of URLs one per line, or a
    sitemap (urlset or index, plain or gzip, with its images and hreflang alternates) from a
    file or an http(s) URL.

    Valid rows are stored, each rejected row is listed with its line number (for a sitemap,
    the line of its <url>) and reason, and the command exits with status 1 when any was
    rejected. A sitemap that cannot be read is refused whole.
    """
    policy = Policy.of(current_app.config)
    with session_scope() as session:
        site = find_site(session, site_ref)
        if re.match(r"https?://", source):
            data, name, source_url = fetch_source(site, source, policy), source, source
        else:
            data, name, source_url = Path(source), Path(source).name, None
            if not data.is_file():
                raise click.BadParameter(f"{source} is not a file or an http(s) URL",
                                         param_hint="FILE")
        with open_import(data, name, site.base_url, source_url, policy,
                         check_encoding_choice(encoding),
                         max_unpacked=current_app.config["MAX_UNPACKED_MB"] << 20) as stream:
            report = import_opened(session, site, stream, rewrite_origin)
    click.echo(report.summary())
    for line, note in report.english_notes():
        click.echo(f"line {line}: {note}")
    for line, reason in report.english_rejections():
        click.echo(f"line {line}: {reason}", err=True)
    if report.rejected > len(report.rejections):
        click.echo(f"... and {report.rejected - len(report.rejections)} more rejections, not "
                   "listed one by one", err=True)
    if report.rejected:
        raise SystemExit(1)


@group.command("complete-hreflang")
@click.argument("site_ref", metavar="SITE")
@friendly_errors
def urls_complete_hreflang(site_ref):
    """Add the missing return links of every hreflang cluster whose pages are all URLs of SITE,
    so that each page lists every page of its cluster; the others are named with the reason."""
    with session_scope() as session:
        report = hreflang.complete(session, find_site(session, site_ref))
    click.echo(report.summary())
    for reason in report.skipped:
        click.echo(reason, err=True)


@group.command("export")
@click.argument("site_ref", metavar="SITE")
@click.argument("target", metavar="FILE")
@friendly_errors
def urls_export(site_ref, target):
    """Write the site's live URLs to FILE (`-`: standard output) as CSV, every field with
    images and alternates: the dashboard's export, which `urls import` reads back. The file is
    replaced only once it is written whole."""
    with session_scope() as session:
        chunks = csv_chunks(session, find_site(session, site_ref))
        if target == "-":
            for chunk in chunks:
                click.echo(chunk, nl=False)
            return
        path = Path(target)
        partial = path.with_name(f".{path.name}.partial")
        try:
            with open(partial, "w", encoding="utf-8", newline="") as out:
                out.writelines(chunks)
            partial.replace(path)
        finally:
            partial.unlink(missing_ok=True)


@group.command("list")
@click.argument("site_ref", metavar="SITE")
@click.option("--limit", default=100, show_default=True, help="How many URLs to list (0: all).")
@click.option("--deleted", is_flag=True, help="List deleted URLs instead.")
@friendly_errors
def urls_list(site_ref, limit, deleted):
    """The stored URLs of a site: loc, lastmod, changefreq, priority, tab-separated."""
    with session_scope() as session:
        site = find_site(session, site_ref)
        query = (select(Url.loc, Url.lastmod, Url.changefreq, Url.priority)
                 .where(Url.site_id == site.id,
                        Url.deleted_at.is_not(None) if deleted else Url.deleted_at.is_(None))
                 .order_by(Url.id))
        if limit:
            query = query.limit(limit)
        for row in session.execute(query):
            click.echo("\t".join("" if value is None else str(value) for value in row))
