"""Writing sitemap XML: `<url>` fragments, urlset files split at the protocol limits, an index.

Pure file writing: no database, no publishing. A urlset is written as UTF-8 text to a plain file
while a background thread gzips and hashes each finished file, so a large site keeps both cores
busy and memory stays bounded by one write buffer.
"""

from __future__ import annotations

import gzip
import hashlib
import io
import os
import secrets
from collections.abc import Iterable
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

from webapp.protocol import (
    CHANGEFREQS,
    IMAGE_NS,
    MAX_FILE_BYTES,
    MAX_URLS_PER_FILE,
    SITEMAP_NS,
    VIDEO_NS,
    XHTML_NS,
    escape,
    format_priority,
)

XML_DECLARATION = '<?xml version="1.0" encoding="UTF-8"?>\n'
URLSET_CLOSE = "</urlset>\n"
INDEX_CLOSE = "</sitemapindex>\n"
GZIP_LEVEL = 6
FLUSH_BYTES = 1 << 20

_CHANGEFREQ_TAGS = {value: f"<changefreq>{value}</changefreq>" for value in CHANGEFREQS}
_CHANGEFREQ_TAGS[None] = ""
_priority_tags: dict[float | None, str] = {None: ""}


class SitemapLimitError(RuntimeError):
    """The content cannot be written within the protocol's limits."""


@dataclass(frozen=True)
class Limits:
    max_urls: int = MAX_URLS_PER_FILE
    max_bytes: int = MAX_FILE_BYTES
    max_index_entries: int = MAX_URLS_PER_FILE

    def __post_init__(self) -> None:
        for name in ("max_urls", "max_index_entries"):
            if not 1 <= getattr(self, name) <= MAX_URLS_PER_FILE:
                raise ValueError(f"{name} must be from 1 to {MAX_URLS_PER_FILE}")
        if not 1 <= self.max_bytes <= MAX_FILE_BYTES:
            raise ValueError(f"max_bytes must be from 1 to {MAX_FILE_BYTES}")


@dataclass
class BuiltFile:
    """What was written for one file, as recorded with its generation."""

    name: str
    kind: str
    url_count: int
    bytes: int
    gzip_bytes: int = 0
    sha256: str = ""
    first_url_id: int | None = None
    last_url_id: int | None = None
    lastmod: str = ""


STYLESHEET = Path(__file__).with_name("sitemap.xsl")


def _prolog(stylesheet: str | None) -> str:
    """The XML declaration, and the instruction that makes browsers render the stylesheet."""
    if stylesheet is None:
        return XML_DECLARATION
    return f'{XML_DECLARATION}<?xml-stylesheet type="text/xsl" href="{escape(stylesheet)}"?>\n'


def urlset_open(images: bool = False, alternates: bool = False, stylesheet: str | None = None,
                videos: bool = False) -> str:
    """The prolog and `<urlset>` start tag, declaring only the namespaces in use."""
    namespaces = f' xmlns="{SITEMAP_NS}"'
    if images:
        namespaces += f' xmlns:image="{IMAGE_NS}"'
    if alternates:
        namespaces += f' xmlns:xhtml="{XHTML_NS}"'
    if videos:
        namespaces += f' xmlns:video="{VIDEO_NS}"'
    return f"{_prolog(stylesheet)}<urlset{namespaces}>\n"


def _priority_tag(priority: float | None) -> str:
    tag = _priority_tags.get(priority)
    if tag is None:
        tag = _priority_tags[priority] = f"<priority>{format_priority(priority)}</priority>"
    return tag


def url_fragment(loc: str, lastmod: str | None, changefreq: str | None, priority: float | None,
                 extensions: str = "") -> str:
    """One `<url>` element on one line, children in the order the schema requires."""
    lastmod_tag = f"<lastmod>{lastmod}</lastmod>" if lastmod else ""
    return (f"<url><loc>{escape(loc)}</loc>{lastmod_tag}{_CHANGEFREQ_TAGS[changefreq]}"
            f"{_priority_tag(priority)}{extensions}</url>\n")


def image_fragment(loc: str, title: str | None, caption: str | None) -> str:
    """An `image:image` element: loc, then caption, then title (the schema's order)."""
    caption_tag = f"<image:caption>{escape(caption)}</image:caption>" if caption else ""
    title_tag = f"<image:title>{escape(title)}</image:title>" if title else ""
    return f"<image:image><image:loc>{escape(loc)}</image:loc>{caption_tag}{title_tag}</image:image>"


def alternate_fragment(hreflang: str, href: str) -> str:
    return f'<xhtml:link rel="alternate" hreflang="{escape(hreflang)}" href="{escape(href)}"/>'


def replace_file(path: Path, data: bytes) -> None:
    """Write a new file at `path`: a file already there (perhaps a link into an older
    generation, which must never change) is replaced, never written through.

    The draft is made as every other published file is (the process's umask decides its
    mode), not with mkstemp, whose files only their owner can read.
    """
    draft = path.with_name(f".{path.name}.{secrets.token_hex(8)}")
    try:
        with open(draft, "xb") as out:
            out.write(data)
        os.replace(draft, path)
    except BaseException:
        draft.unlink(missing_ok=True)
        raise


def gzip_writer(raw) -> gzip.GzipFile:
    """Compresses into the binary file `raw` as every published `.gz` is: mtime 0 and no file
    name, so the bytes depend on the content alone (the same for a file and a body in memory)."""
    return gzip.GzipFile(filename="", mode="wb", fileobj=raw, compresslevel=GZIP_LEVEL, mtime=0)


def gzip_bytes(data: bytes) -> bytes:
    """`data` compressed as `gzip_writer` compresses a file."""
    packed = io.BytesIO()
    with gzip_writer(packed) as out:
        out.write(data)
    return packed.getvalue()


def _compress_and_hash(path: Path, built: BuiltFile) -> BuiltFile:
    """Write `<path>.gz` beside the file and record both digests' worth of facts."""
    digest = hashlib.sha256()
    gz_path = path.with_name(path.name + ".gz")
    draft = gz_path.with_name(f".{gz_path.name}.part")  # replaces, never writes through a link
    with open(path, "rb") as source, open(draft, "wb") as raw, gzip_writer(raw) as out:
        while chunk := source.read(FLUSH_BYTES):
            digest.update(chunk)
            out.write(chunk)
    os.replace(draft, gz_path)
    built.sha256 = digest.hexdigest()
    built.gzip_bytes = gz_path.stat().st_size
    return built


class UrlsetWriter:
    """Writes `<url>` fragments into `<stem>-1.xml`, `<stem>-2.xml`, ... within the limits."""

    def __init__(self, folder: Path, stem: str, header: str, limits: Limits = Limits(),
                 first_number: int = 1):
        self.folder, self.stem, self.header, self.limits = folder, stem, header, limits
        self.first_number = first_number  # of the first file written: <stem>-<first_number>.xml
        self._pool = ThreadPoolExecutor(max_workers=1, thread_name_prefix="sitemap-gzip")
        self._futures: list[Future[BuiltFile]] = []

    def write(self, entries: Iterable[tuple[int, str]]) -> list[BuiltFile]:
        """Write every (url id, fragment) pair in order; return the files, gzipped and hashed."""
        max_urls = self.limits.max_urls
        header_bytes = len(self.header.encode())
        budget = self.limits.max_bytes - len(URLSET_CLOSE)
        handle = None
        buffer: list[str] = []
        buffered = count = size = 0
        built: BuiltFile | None = None
        try:
            for url_id, fragment in entries:
                length = len(fragment) if fragment.isascii() else len(fragment.encode())
                if handle is None or count == max_urls or size + length > budget:
                    if handle is not None:
                        handle.write("".join(buffer).encode())
                        buffer, buffered = [], 0
                        self._finish(handle, built, count, size)
                    if header_bytes + length > budget:
                        raise SitemapLimitError(
                            f"the entry for URL id {url_id} alone is {length} bytes, more than "
                            f"fits in one sitemap file of {self.limits.max_bytes} bytes")
                    number = self.first_number + len(self._futures)
                    built = BuiltFile(f"{self.stem}-{number}.xml", "urlset", 0, 0,
                                      first_url_id=url_id)
                    # "x": never through a name that exists, which may be a hard link to a
                    # published file of an earlier generation.
                    handle = open(self.folder / built.name, "xb")
                    handle.write(self.header.encode())
                    count, size = 0, header_bytes
                buffer.append(fragment)
                buffered += length
                count += 1
                size += length
                built.last_url_id = url_id
                if buffered >= FLUSH_BYTES:
                    handle.write("".join(buffer).encode())
                    buffer, buffered = [], 0
            if handle is not None:
                handle.write("".join(buffer).encode())
                self._finish(handle, built, count, size)
                handle = None
            return [future.result() for future in self._futures]
        finally:
            if handle is not None:
                handle.close()
            self._pool.shutdown(wait=True)

    def _finish(self, handle, built: BuiltFile, count: int, size: int) -> None:
        handle.write(URLSET_CLOSE.encode())
        handle.close()
        built.url_count, built.bytes = count, size + len(URLSET_CLOSE)
        self._futures.append(self._pool.submit(_compress_and_hash, self.folder / built.name, built))


def check_index_size(files: int, limits: Limits) -> None:
    """Refuse a set whose index would list more files than an index may."""
    if files > limits.max_index_entries:
        raise SitemapLimitError(
            f"the sitemap index would list {files} files; an index may list at most "
            f"{limits.max_index_entries}. Raise the site's max_urls_per_file so fewer files "
            "are needed")


def write_index(folder: Path, name: str, entries: list[tuple[str, str]],
                limits: Limits = Limits(), stylesheet: str | None = None) -> BuiltFile:
    """A flat `<sitemapindex>` of (loc, lastmod) pairs, held to the same limits as a urlset."""
    check_index_size(len(entries), limits)
    lines = [_prolog(stylesheet), f'<sitemapindex xmlns="{SITEMAP_NS}">\n']
    lines.extend(f"<sitemap><loc>{escape(loc)}</loc><lastmod>{lastmod}</lastmod></sitemap>\n"
                 for loc, lastmod in entries)
    lines.append(INDEX_CLOSE)
    data = "".join(lines).encode()
    if len(data) > limits.max_bytes:
        raise SitemapLimitError(f"the sitemap index would be {len(data)} bytes; "
                                f"the limit is {limits.max_bytes}")
    replace_file(folder / name, data)
    return _compress_and_hash(folder / name, BuiltFile(name, "index", len(entries), len(data)))
