"""Importing a sitemap's entries into a site, with what the app can publish of their
extensions: images (loc, title, caption), hreflang alternates and videos. A video that breaks
a rule is not kept (counted, and named with its line and rule); its URL still is.

A sitemap describes each of its URLs whole, so an entry replaces what is stored of its URL: a
field, image or alternate the entry does not have is cleared. What the file holds and the app
cannot keep (a video, an image's licence) is counted by name in the report, never dropped
silently. Rejected entries are reported at the line of their `<url>`.

URLs on another origin than the site's (`http://` in the file, `https://` for the site, or
another host) are counted, not listed one by one, with one message naming both origins; with
`rewrite_origin` the file's origin (its first URL's) is mapped to the site's, for locs, images
and alternates alike.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from urllib.parse import urlsplit

from sqlalchemy.orm import Session

from webapp.errors import InvalidValue, Note, each_error, rule_text
from webapp.models import Site
from webapp.protocol import (
    FIELD_RULES,
    check_text,
    normalize_hreflang,
    normalize_url_noting,
    one_url_per_language,
    origin,
)
from webapp.protocol.news import NewsData
from webapp.said import Line, said
from webapp.said import Line, said, verbatim
from webapp.urls.children import Children
from webapp.urls.edit import check_url
from webapp.urls.exclusions import Excluded
from webapp.urls.importing import (
    COLUMNS,
    ImportReport,
    move_to_updated,
    write_batch,
    write_extensions,
)
from webapp.urls.news import entry_news, store_news
from webapp.urls.sitemap_reader import Entry, SitemapEntries
from webapp.urls.video_reader import LINE
from webapp.urls.video_store import write_videos_by_loc
from webapp.urls.videos import Video, normalize_video

BATCH = 2_000  # entries per write: one existence query and one executemany each


@dataclass(frozen=True)
class SitemapUrl:
    """An entry after every rule, as `write_batch` and `write_extensions` store it."""

    loc: str
    values: tuple  # COLUMNS' values, loc first
    images: list[tuple[str, str | None, str | None]]  # (loc, title, caption)
    alternates: dict[str, str]
    notes: tuple[Note, ...] = ()  # what the rules changed (a fragment removed)
    videos: tuple[Video, ...] = ()
    refused_videos: tuple[tuple[int, InvalidValue], ...] = ()  # (line, why): not kept
    news: NewsData | None = None


class OtherOrigin(Exception):
    """A loc on another origin than the site's: counted, and explained once for them all."""


@dataclass
class Origins:
    """The site's origin, the file's (its first loc's), and the locs found elsewhere."""

    site: str
    rewrite: bool
    encoding: str
    file: str | None = None
    elsewhere: Counter[str] = field(default_factory=Counter)  # origin -> locs refused
    first_line: dict[str, int] = field(default_factory=dict)  # origin -> its first loc's line

    def place(self, raw: str, name: str, notes: list[Note]) -> str:
        """A URL normalised and, when asked, moved from the file's origin to the site's; what
        the rules changed is added to `notes`."""
        url, note = normalize_url_noting(raw, self.encoding, field=name)
        if note is not None:
            notes.append(note)
        return self._moved(url)

    def place_loc(self, raw: str, line: int, notes: list[Note]) -> str:
        """The loc, placed; OtherOrigin when it is on another origin than the site's."""
        url, note = normalize_url_noting(raw, self.encoding)
        if note is not None:
            notes.append(note)
        if self.file is None:
            self.file = origin(url)
        url = self._moved(url)
        if origin(url) != self.site:
            self.elsewhere[origin(url)] += 1
            self.first_line.setdefault(origin(url), line)
            raise OtherOrigin(url)
        return url

    def _moved(self, url: str) -> str:
        if self.rewrite and self.file and self.file != self.site and origin(url) == self.file:
            return self.site + url[len(self.file):]
        return url

    def messages(self) -> list[Line]:
        """One sentence for each origin the refused locs were on (the three commonest)."""
        out: list[Line] = []
        for other, count in self.elsewhere.most_common(3):
            line = self.first_line[other]
            if self.rewrite:
                out.append(said("%(count)s URLs (the first on line %(line)s) are on %(other)s, "
                                "neither the site's origin %(site)s nor the file's %(file)s "
                                "that was rewritten; they were not imported.", count=count,
                                line=line, other=other, site=self.site, file=self.file))
            else:
                out.append(said("%(count)s URLs (the first on line %(line)s) are on %(other)s "
                                "but the site is on %(site)s: %(difference)s. They were not "
                                "imported. To import them on %(site)s, import the file again "
                                "with the origin rewritten (the --rewrite-origin option, or the "
                                "import form's checkbox).", count=count, line=line, other=other,
                                site=self.site, difference=_difference(other, self.site)))
        if len(self.elsewhere) > 3:
            out.append(said("URLs on %(count)s more origins were not imported.",
                            count=len(self.elsewhere) - 3))
        return out


def _difference(one: str, other: str) -> Line:
    a, b = urlsplit(one), urlsplit(other)
    if a.scheme != b.scheme and a.hostname == b.hostname:
        return said("the scheme differs")
    if a.scheme != b.scheme:
        return said("the scheme and the host differ")
    if a.hostname != b.hostname:
        return said("the host differs")
    return said("the port differs")


@dataclass
class SitemapReport(ImportReport):
    not_kept: Counter[str] = field(default_factory=Counter)  # element name -> how many
    origins: Origins | None = None
    videos_refused: int = 0  # videos not kept, each breaking a rule (their URLs are kept)

    def report_lines(self) -> list[Line]:
        lines = super().report_lines()
        if self.videos_refused:
            lines.append(said("videos not kept because they break a rule (each is listed "
                              "below with its line): %(count)s", count=self.videos_refused))
        lines += [said("%(name)s elements not kept (this app cannot publish them): %(count)s",
                       name=name, count=count) for name, count in sorted(self.not_kept.items())]
        if self.origins is not None:
            lines += self.origins.messages()
        return lines


def check_entry(site: Site, entry: Entry, origins: Origins) -> SitemapUrl:
    """An entry's values by the protocol's rules and the site's, or InvalidValue (OtherOrigin
    for a loc on another origin)."""
    if not entry.fields.get("loc"):
        raise InvalidValue("loc", "", rule_text("is missing: every <url> needs a <loc>"))
    notes: list[Note] = []
    loc = origins.place_loc(entry.fields["loc"], entry.line, notes)
    fields = {name: entry.fields.get(name, "") for name in FIELD_RULES}
    for image_loc, _, _ in entry.images:
        if not image_loc:
            raise InvalidValue("image", "", rule_text("an <image:image> needs an <image:loc>"))
    images = [origins.place(image_loc, "image", notes) for image_loc, _, _ in entry.images]
    alternates: dict[str, str] = {}
    for hreflang, href in entry.alternates:
        lang, href = normalize_hreflang(hreflang), origins.place(href, "alternate", notes)
        if alternates.setdefault(lang, href) != href:
            raise InvalidValue("hreflang", lang, one_url_per_language(lang, alternates[lang],
                                                                      href))
    checked = check_url(site, loc, fields, images, alternates)
    texts = [(check_text("image:title", title) or None, check_text("image:caption", caption)
              or None) for _, title, caption in entry.images]
    videos, refused = _videos(entry, checked.loc, origins, notes)
    article, news_notes = entry_news(site, entry.news)
    return SitemapUrl(checked.loc, (checked.loc, *(checked.values[n] for n in FIELD_RULES)),
                      [(image, *text) for image, text in zip(checked.images, texts)],
                      checked.alternates, (*notes, *checked.notes, *news_notes), videos,
                      refused, article)


VIDEO_URLS = ("thumbnail_loc", "content_loc", "player_loc", "uploader_info")


def _videos(entry: Entry, loc: str, origins: Origins, notes: list[Note],
            ) -> tuple[tuple[Video, ...], tuple[tuple[int, InvalidValue], ...]]:
    """The entry's videos that meet the rules (their URLs placed as the loc is), and the
    line and errors of those that do not."""
    videos, refused = [], []
    for n, raw in enumerate(entry.videos, start=1):
        field_name = "video" if len(entry.videos) == 1 else f"video {n}"
        kept: list[Note] = []
        try:
            placed = {name: origins.place(value, f"{field_name} {name}", kept)
                      if name in VIDEO_URLS and isinstance(value, str) and value else value
                      for name, value in raw.items() if name != LINE}
            videos.append(normalize_video(placed, loc, origins.encoding, field_name, kept))
        except InvalidValue as exc:
            refused.append((raw.get(LINE) or entry.line, exc))
            continue
        notes.extend(kept)
    return tuple(videos), tuple(refused)


def import_sitemap(session: Session, site: Site, entries: SitemapEntries,
                   rewrite_origin: bool = False,
                   progress: Callable[[int, int], None] | None = None) -> SitemapReport:
    """Upsert by loc every valid entry of a sitemap into `site`, with its images and
    alternates; report what happened to each, and what the file held that was not kept.

    `progress(entries done, entries)` hears after each batch. The caller commits.
    """
    origins = Origins(origin(site.base_url), rewrite_origin, site.encoding)
    report = SitemapReport(not_kept=entries.not_kept, origins=origins)
    batch: dict[str, SitemapUrl] = {}
    for done, entry in enumerate(entries, start=1):
        try:
            url = check_entry(site, entry, origins)
        except OtherOrigin:
            report.rejected += 1
            continue
        except Excluded as exc:
            report.excluded[exc.pattern] += 1
            continue
        except InvalidValue as exc:
            where = [] if entry.file == entries.name else [said(" (in %(file)s)",
                                                                 file=entry.file)]
            report.reject(entry.line, exc.said_line() + where)
            continue
        for note in url.notes:
            report.note(entry.line, note.said_line())
        for line, exc in url.refused_videos:
            report.videos_refused += 1
            refused: list[dict] = []
            for error in each_error(exc):
                refused += ([{"text": "; "}] if refused else []) + error.said_line()
            report.note(line, refused + [said(" (the video was not kept; the URL was)")])
        if url.loc in batch:
            report.duplicates += 1
        batch[url.loc] = url
        if len(batch) >= BATCH or done == entries.count:
            _write(session, site, batch, report)
            batch = {}
            if progress:
                progress(done, entries.count)
    if batch:
        _write(session, site, batch, report)
    return report


def _write(session: Session, site: Site, batch: dict[str, SitemapUrl],
           report: SitemapReport) -> None:
    report.unchanged_locs = set()  # this batch's: write_extensions moves the ones it changes
    write_batch(session, site, COLUMNS, {loc: url.values for loc, url in batch.items()}, report)
    write_extensions(session, site, [Children(url.loc, url.images, url.alternates)
                                     for url in batch.values()], report)
    move_to_updated(report, write_videos_by_loc(
        session, site, {loc: url.videos for loc, url in batch.items()},
        lambda: report.take_change_seq(session, site.id)))
    # An entry without news:news leaves stored news data as it is.
    store_news(session, site, {url.loc: url.news for url in batch.values() if url.news},
               report)
    report.unchanged_locs = None
