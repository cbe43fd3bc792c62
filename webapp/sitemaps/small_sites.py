"""Many small sites generated together: one transaction and a few statements for a batch.

A site whose URLs fit in one file (a few hundred, as most sites have) costs more in its
run's bookkeeping than in its XML: reading its URLs, its last files, its published set, and
storing and publishing its one file are a dozen statements each. Here a batch of such sites
shares each statement: their URLs (and images and alternates) are read in one query, their
files are written in memory, and their records, bodies and published sets are written with
one statement per table for all of them (the sites' rows, which hold their leases and which
set they publish, with one UPDATE).

The files are byte for byte those `generate.generate_site` writes for the same site (a single
urlset file under the site's sitemap name, dated the same way), and a set equal to the one
served is left alone the same way: which path made a set never shows. A site that turns out
not to fit in one file (or holds no URLs, or whose last set was laid out in several files) is
handed back, for `generate_site`.
"""

from __future__ import annotations

import hashlib
import itertools
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import datetime
from functools import cache
from operator import itemgetter
from typing import NamedTuple

from sqlalchemy import select
from sqlalchemy.orm import Session

from webapp import many_rows
from webapp.models import (
    SUCCEEDED_RUN,
    Generation,
    GenerationFile,
    Site,
    StoredFile,
    Url,
    UrlAlternate,
    UrlCheck,
    UrlImage,
)
from webapp.protocol import normalize_lastmod
from webapp.sitemaps import incremental
from webapp.sitemaps.build import (
    STYLESHEET,
    URLSET_CLOSE,
    BuiltFile,
    Limits,
    alternate_fragment,
    gzip_bytes,
    image_fragment,
    url_fragment,
    urlset_open,
)
from webapp.sitemaps.generate import (
    carry_lastmods,
    dated_stylesheet,
    entry_name,
    later_than,
    stylesheet_entry,
)
from webapp.sitemaps.publish import Entry, NewSet, SitemapStore, same_stylesheet
from webapp.sitemaps.videos import row_fragment, video_rows
from webapp.verify import publishing

# A site of at most this many live URLs is generated in a batch (when they fit in one file).
SMALL_SITE = 1_000


@dataclass
class SmallRun:
    """One small site's new set, written in memory and dated, not yet recorded."""

    site: Site
    layout: str
    file: BuiltFile
    body: bytes
    stylesheet: Entry | None
    unchanged: bool  # equal to the set served: nothing to publish
    bodies: dict[str, tuple[int, bytes]] = field(default_factory=dict)  # digest: (size, gzip)

    @property
    def entries(self) -> list[Entry]:
        f = self.file
        return [Entry(f.name, f.kind, f.sha256, f.bytes, f.gzip_bytes, f.lastmod),
                *([self.stylesheet] if self.stylesheet else [])]


def is_small(site: Site) -> bool:
    """Whether the site is one to generate in a batch, by its live URL count; a site with
    sections or a news publisher never is (its files and index are written by
    `generate_site`, one by one)."""
    return (0 < site.url_count <= min(SMALL_SITE, site.max_urls_per_file)
            and not site.sections and not site.news_name)


def write_small_sites(session: Session, sites: Sequence[Site], now: datetime,
                      ) -> tuple[list[SmallRun], list[Site]]:
    """The new sets of `sites`, written and dated; and the sites that do not fit in one
    file after all (or hold no URLs), to generate one by one."""
    ids = [site.id for site in sites]
    fragments = _url_fragments(session, sites)
    previous = _previous_files(session, ids)
    served = _served_stylesheets(session, [s.published_generation_id for s in sites
                                           if s.published_generation_id is not None])
    runs, others = [], []
    stamp_now = normalize_lastmod(now)
    for site in sites:
        run = None if site.sections else _write(site, fragments.get(site.id))
        if run is None:
            others.append(site)
            continue
        previous_id, before = previous.get(site.id, (None, {}))
        if set(before) - {run.file.name}:
            # Its last set was laid out otherwise (files and an index, before it shrank):
            # `generate_site` decides what of it to keep, as it would without batches.
            others.append(site)
            continue
        stamp = later_than(before, stamp_now)
        carry_lastmods([run.file], before, stamp)
        sheets = served.get(site.published_generation_id, [])
        run.unchanged = bool(before) and {n: f.sha256 for n, f in before.items()} == {
            run.file.name: run.file.sha256} and site.published_generation_id == previous_id \
            and same_stylesheet([(name, digest) for name, digest, _ in sheets], run.stylesheet)
        if run.stylesheet is not None:
            shown = next(((digest, lastmod) for name, digest, lastmod in sheets
                          if name == run.stylesheet.name), None)
            run.stylesheet = dated_stylesheet(shown, run.stylesheet, stamp)
        runs.append(run)
    return runs, others


def _write(site: Site, urls: SiteUrls | None) -> SmallRun | None:
    """The site's one urlset file in memory, or None when it would not be one file."""
    if urls is None:
        return None
    fragments, images, alternates, first_id, last_id, videos = urls
    limits = Limits(max_urls=site.max_urls_per_file)
    name = entry_name(site)
    stylesheet = f"{name.removesuffix('.xml')}.xsl" if site.stylesheet else None
    header = urlset_open(images, alternates, stylesheet, videos=videos)
    body = (header + "".join(fragments) + URLSET_CLOSE).encode()
    if len(fragments) > limits.max_urls or len(body) > limits.max_bytes:
        return None
    packed = gzip_bytes(body)
    digest = hashlib.sha256(body).hexdigest()
    built = BuiltFile(name, "urlset", len(fragments), len(body), len(packed), digest,
                      first_id, last_id)
    run = SmallRun(site, incremental.layout(site, header, limits, name), built, body,
                   _stylesheet(stylesheet) if stylesheet else None, unchanged=False)
    run.bodies[digest] = (len(body), packed)
    if run.stylesheet is not None:
        run.bodies[run.stylesheet.sha256] = _stylesheet_body()
    return run


@cache
def _stylesheet_body() -> tuple[int, bytes]:
    data = STYLESHEET.read_bytes()
    return len(data), gzip_bytes(data)


_stylesheet = cache(stylesheet_entry)  # the same bytes for every site: hashed once per name


class SiteUrls(NamedTuple):
    """A small site's live URLs, written."""

    fragments: list[str]  # `<url>` elements in id order, as rows.url_entries writes them
    images: bool  # in use: their namespace is declared
    alternates: bool
    first_id: int
    last_id: int
    videos: bool = False


def _url_fragments(session: Session, sites: Sequence[Site]) -> dict[int, SiteUrls]:
    """Per site with live URLs, its URLs written. Three queries for every site, read whole:
    the sites are small."""
    by_id = {site.id: site for site in sites}
    live = (many_rows.among(session, Url.site_id, by_id), Url.deleted_at.is_(None))
    connection = session.connection()  # rows as tuples: no ORM work per row
    images: dict[int, str] = {}
    image_sites: set[int] = set()
    for site_id, url_id, loc, title, caption in connection.execute(
            select(Url.site_id, UrlImage.url_id, UrlImage.loc, UrlImage.title, UrlImage.caption)
            .join(Url, Url.id == UrlImage.url_id).where(*live)
            .order_by(UrlImage.url_id, UrlImage.position, UrlImage.id)).all():
        images[url_id] = images.get(url_id, "") + image_fragment(loc, title, caption)
        image_sites.add(site_id)
    alternates: dict[int, str] = {}
    alternate_sites: set[int] = set()
    video_sites: set[int] = set()
    for site_id, url_id, hreflang, href in connection.execute(
            select(Url.site_id, UrlAlternate.url_id, UrlAlternate.hreflang, UrlAlternate.href)
            .join(Url, Url.id == UrlAlternate.url_id).where(*live)
            .order_by(UrlAlternate.url_id, UrlAlternate.hreflang)).all():
        alternates[url_id] = alternates.get(url_id, "") + alternate_fragment(hreflang, href)
        alternate_sites.add(site_id)
    # Videos follow a URL's alternates, as rows.url_entries writes them: kept with them.
    for site_id, url_id, *video in connection.execute(video_rows(*live)).all():
        alternates[url_id] = alternates.get(url_id, "") + row_fragment(*video)
        video_sites.add(site_id)
    extended = bool(images or alternates)
    # Taken row by row, not all at once: a batch's thousands of rows, all alive together,
    # would each be visited by the garbage collector's full passes they set off.
    rows = connection.execute(
        select(Url.site_id, Url.id, Url.loc, Url.lastmod, Url.changefreq, Url.priority,
               UrlCheck.outcome, UrlCheck.content_changed_at)
        .outerjoin(UrlCheck, UrlCheck.url_id == Url.id)
        .where(*live).order_by(Url.site_id, Url.id))
    found: dict[int, SiteUrls] = {}
    for site_id, group in itertools.groupby(rows, key=itemgetter(0)):
        site = by_id[site_id]
        changefreq_default, priority_default = site.default_changefreq, site.default_priority
        leave_out, lastmod_of = publishing.left_out_of(site), \
            publishing.lastmod_of(site.lastmod_source)
        every = list(group)
        urls = [row for row in every if row[6] not in leave_out]
        if len(urls) < len(every):
            continue  # some left out: generate_site writes it and records what it keeps out
        found[site_id] = SiteUrls([url_fragment(
            loc, lastmod_of(lastmod, changed_at), changefreq or changefreq_default,
            priority_default if priority is None else priority,
            images.get(url_id, "") + alternates.get(url_id, "") if extended else "")
            for _, url_id, loc, lastmod, changefreq, priority, _, changed_at in urls],
            site_id in image_sites, site_id in alternate_sites, urls[0][1], urls[-1][1],
            site_id in video_sites)
    return found


def _previous_files(session: Session, site_ids: list[int],
                    ) -> dict[int, tuple[int, dict[str, GenerationFile]]]:
    """Per site, its last successful generation and that generation's files by name: one
    index probe a site for the generation (not every run it ever had), one for its files."""
    newest = (select(Generation.id).where(Generation.site_id == Site.id, SUCCEEDED_RUN)
              .order_by(Generation.id.desc()).limit(1).correlate(Site).scalar_subquery())
    latest = select(Site.id.label("site_id"), newest.label("generation_id")).where(
        many_rows.among(session, Site.id, site_ids)).subquery()
    found: dict[int, tuple[int, dict[str, GenerationFile]]] = {}
    for site_id, file in session.execute(
            select(latest.c.site_id, GenerationFile)
            .join(GenerationFile, GenerationFile.generation_id == latest.c.generation_id)):
        found.setdefault(site_id, (file.generation_id, {}))[1][file.name] = file
    return found


def _served_stylesheets(session: Session, generation_ids: list[int],
                        ) -> dict[int, list[tuple[str, str, datetime | None]]]:
    """Per published generation, the (name, digest, lastmod) of the stylesheets it serves."""
    found: dict[int, list[tuple[str, str, datetime | None]]] = {}
    if generation_ids:
        for generation_id, name, digest, lastmod in session.execute(
                select(StoredFile.generation_id, StoredFile.name, StoredFile.digest,
                       StoredFile.lastmod)
                .where(many_rows.among(session, StoredFile.generation_id, generation_ids),
                       StoredFile.kind == "stylesheet").order_by(StoredFile.name)):
            found.setdefault(generation_id, []).append(
                (name, digest, datetime.fromisoformat(lastmod) if lastmod else None))
    return found


def record_small_sets(session: Session, store: SitemapStore,
                      runs: Sequence[tuple[SmallRun, int]]) -> None:
    """Record the sets of `runs` (each with its generation's id) and store their bodies, in
    the session's transaction, for the caller to publish in its UPDATE of the sites' rows
    (`publish.published_forward`): one statement per table for all of them."""
    if not runs:
        return
    many_rows.insert_rows(session, GenerationFile.__table__, [
        {"generation_id": generation_id, "name": f.name, "kind": f.kind,
         "url_count": f.url_count, "bytes": f.bytes, "gzip_bytes": f.gzip_bytes,
         "sha256": f.sha256, "first_url_id": f.first_url_id, "last_url_id": f.last_url_id,
         "lastmod": f.lastmod} for run, generation_id in runs for f in [run.file]])
    sizes = store.store_bodies(session, {digest: body for run, _ in runs
                                         for digest, body in run.bodies.items()})
    store.record_sets(session, [
        NewSet(run.site.storage_key, generation_id, run.entries) for run, generation_id in runs],
        sizes)
