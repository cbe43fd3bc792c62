"""What to import, wherever it comes from (an uploaded or local file, pasted text, a sitemap's
address), fetched, opened and imported the same way for the dashboard and the command line.

A sitemap (urlset or index, plain or gzip) is read into entries first, whole or not at all,
and imported with its extensions (`sitemap_import`); anything else is read as a CSV file or a
list of URLs (`importing`), in the encoding chosen. What a file is comes from its content
(after decompression when it is gzip), never its name. Only the site's own hosts are fetched
from: an import must not reach into the server's network.
"""

from __future__ import annotations

import gzip
import io
import zlib
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TextIO
from urllib.parse import urlsplit

from sqlalchemy.orm import Session

from webapp.errors import InvalidValue, RuleText, rule_text
from webapp.models import Site
from webapp.outbound import OutboundError, Policy, fetch
from webapp.said import said
from webapp.urls.encodings import MAX_UNPACKED, UnpackedTooLarge, open_text
from webapp.urls.hreflang import unreturned
from webapp.urls.importing import ImportFormatError, ImportReport, import_urls
from webapp.urls.sitemap_import import import_sitemap
from webapp.urls.sitemap_reader import MAX_FILE_BYTES, SitemapEntries, looks_like_sitemap


def check_source_url(site: Site, url: str) -> None:
    """An http(s) address on the site's host or its sitemap's host, else InvalidValue."""
    try:
        parts = urlsplit(url)
        parts.port  # noqa: B018 - raises on a port out of range
    except ValueError:
        parts = None
    hosts = {urlsplit(site.base_url).netloc, urlsplit(site.sitemap_url).netloc}
    if parts is None or parts.scheme not in ("http", "https") or parts.netloc not in hosts:
        raise InvalidValue("sitemap_url", url, rule_text(
            "must be an http:// or https:// URL on the site's host (%(hosts)s)",
            hosts=" or ".join(sorted(hosts))))


def fetch_source(site: Site, url: str, policy: Policy) -> bytes:
    """The file at a sitemap's address on the site's hosts, at most MAX_FILE_BYTES."""
    check_source_url(site, url)
    try:
        return fetch(url, policy, max_bytes=MAX_FILE_BYTES)
    except OutboundError as exc:
        raise ImportFormatError(f"{url}: {exc.meaning.removesuffix('; will try again')}") \
            from None


def _head(source: Path | bytes, name: str) -> bytes:
    """The first bytes of what the file holds, unpacked when it is gzip."""
    with open(source, "rb") if isinstance(source, Path) else io.BytesIO(source) as raw:
        head = raw.read(2)
        if head != b"\x1f\x8b":
            return head + raw.read(510)
        raw.seek(0)
        try:
            with gzip.GzipFile(fileobj=raw, mode="rb") as unpacked:
                return unpacked.read(512)
        except _GZIP_ERRORS as exc:
            raise _unreadable(name, exc) from None


_GZIP_ERRORS = (gzip.BadGzipFile, EOFError, zlib.error)  # a damaged or truncated gzip file


def _unreadable(name: str, exc: Exception) -> ImportFormatError:
    return ImportFormatError(f"{name} is not a readable gzip file ({exc})")


@contextmanager
def open_import(source: Path | bytes, name: str | RuleText, site_url: str, source_url: str | None,
                policy: Policy, encoding: str = "utf-8", *, max_unpacked: int | None = MAX_UNPACKED
                ) -> Iterator[TextIO | SitemapEntries]:
    """What to import from a file or from fetched bytes: a sitemap's entries, or the CSV text
    `import_urls` reads (`import_opened` takes either).

    `name` says which file in messages (a rule_text is said in each reader's language where
    the message is); `source_url`, where a fetched sitemap came from, is the other host an
    index may list files on besides the site's (`site_url`). What was fetched must be a
    sitemap. `encoding` (a key of encodings.ENCODINGS) is that of a CSV or list file;
    `max_unpacked` the most bytes a gzip one may unpack to (MAX_UNPACKED_MB, whose default
    applies unless one is given; None: no limit): an import learns its size before it writes,
    so a larger one is refused with nothing stored.
    """
    if looks_like_sitemap(_head(source, name)):
        with open(source, "rb") if isinstance(source, Path) else io.BytesIO(source) as data, \
                SitemapEntries(data, str(name), site_url, source_url, policy) as entries:
            yield entries
    elif source_url is None and isinstance(source, Path):
        try:
            with open_text(source, encoding, max_unpacked) as stream:
                yield stream
        except _GZIP_ERRORS as exc:  # found past the head: opening, or where rows are read
            raise _unreadable(name, exc) from None
        except UnpackedTooLarge as exc:
            raise ImportFormatError(rule_text(
                "%(name)s is a gzip file that unpacks to more than %(mb)s MB, the most this "
                "server reads (MAX_UNPACKED_MB); nothing was imported: split the file, or raise "
                "MAX_UNPACKED_MB", name=name, mb=exc.limit >> 20)) from None
    else:
        # A fetched answer is never read as rows: rejected rows are shown with their text,
        # and what an address answers is not for every viewer of the report to read.
        raise ImportFormatError(f"{name} is not a sitemap (XML, or XML compressed with gzip): "
                                "only sitemaps are imported from an address; download a CSV "
                                "or a list of URLs and upload the file instead")


def import_opened(session: Session, site: Site, opened: TextIO | SitemapEntries,
                  rewrite_origin: bool = False,
                  progress: Callable[[int, int], None] | None = None) -> ImportReport:
    """Import what `open_import` opened into `site`; `rewrite_origin` (sitemaps only) maps the
    file's origin to the site's. The caller commits."""
    if isinstance(opened, SitemapEntries):
        report = import_sitemap(session, site, opened, rewrite_origin, progress)
    elif rewrite_origin:
        raise ImportFormatError("the origin is rewritten only in sitemaps (XML), and this file "
                                "is a CSV file or a list of URLs; import it without rewriting")
    else:
        report = import_urls(session, site, opened, progress=progress)
    missing = unreturned(session, site)
    if missing.count:
        report.warnings.append([
            said("%(count)s hreflang alternates of the site do not list their page back, and "
                 "search engines ignore them: ", count=missing.count),
            *missing.said_pairs(),
            said(" Completing the clusters (the button on the site's page, or the command "
                 "flask --app webapp urls complete-hreflang %(slug)s) adds the missing links "
                 "wherever every page of a cluster is a URL of the site.", slug=site.slug)])
    return report
