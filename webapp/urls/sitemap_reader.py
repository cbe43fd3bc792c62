"""Reading an existing sitemap (urlset or index, plain or gzip) into rows to import.

Real-world files come with BOMs, odd whitespace and extensions (images, hreflang): the first two
are tolerated, extension elements are skipped. A file that is not a well-formed sitemap is
refused whole with the reason. XML entities are never expanded and nothing is fetched by the
parser; the files an index lists are fetched only from the index's own host or the site's.
"""

from __future__ import annotations

import csv
import gzip
import io
import tempfile
import zlib
from collections.abc import Callable, Iterator
from typing import IO, BinaryIO
from urllib.parse import urlsplit

from lxml import etree

from webapp.outbound import OutboundError, Policy, fetch
from webapp.urls.importing import ImportFormatError

NS = "{http://www.sitemaps.org/schemas/sitemap/0.9}"
MAX_FILE_BYTES = 52_428_800  # the protocol's ceiling for one uncompressed sitemap
MAX_INDEX_FILES = 50_000
SPOOL_BYTES = 8 << 20  # rows kept in memory before they go to a temporary file
FIELDS = ("loc", "lastmod", "changefreq", "priority")


def looks_like_sitemap(data: bytes) -> bool:
    """Whether the bytes are gzip or XML rather than CSV or a plain list."""
    head = data[:512].lstrip(b"\xef\xbb\xbf \t\r\n")
    return data[:2] == b"\x1f\x8b" or head.startswith(b"<")


class _Capped(io.RawIOBase):
    """A binary stream read through, refusing more than the protocol's bytes for one sitemap
    (after decompression): a file is parsed as it is read, never held whole."""

    def __init__(self, stream: BinaryIO, name: str):
        self.stream, self.name, self.read_bytes = stream, name, 0

    def readable(self) -> bool:
        return True

    def readinto(self, buffer) -> int:
        try:
            data = self.stream.read(len(buffer))
        except (OSError, EOFError, zlib.error) as exc:  # gzip's errors: a damaged file
            raise ImportFormatError(f"{self.name} is not a readable gzip file ({exc})") from None
        self.read_bytes += len(data)
        if self.read_bytes > MAX_FILE_BYTES:
            raise ImportFormatError(f"{self.name} is larger than {MAX_FILE_BYTES} bytes "
                                    "(uncompressed), the protocol's limit for one sitemap")
        buffer[:len(data)] = data
        return len(data)


def _opened(source: bytes | BinaryIO, name: str) -> BinaryIO:
    """The sitemap's XML as a stream, unpacked as it is read when it is gzip."""
    stream = io.BytesIO(source) if isinstance(source, bytes) else source
    head = stream.read(2)
    stream.seek(0)
    if head == b"\x1f\x8b":
        stream = gzip.GzipFile(fileobj=stream, mode="rb")
    return _Capped(stream, name)


def _entries(source: bytes | BinaryIO, name: str) -> Iterator[tuple[str, dict[str, str]]]:
    """(the file's kind, 'urlset' or 'sitemapindex'; an entry with its protocol fields) for
    each <url> or <sitemap>, as the file is read: nothing of it is held but the entry."""
    parser_options = {"resolve_entities": False, "no_network": True, "huge_tree": False,
                      "remove_comments": True}
    root_tag = None
    try:
        for event, element in etree.iterparse(_opened(source, name),
                                              events=("start", "end"), **parser_options):
            if event == "start":
                if root_tag is None:
                    root_tag = element.tag
                    if root_tag not in (f"{NS}urlset", f"{NS}sitemapindex"):
                        raise ImportFormatError(
                            f"{name} is not a sitemap: its root element "
                            f"<{etree.QName(root_tag).localname}> is not urlset or "
                            f"sitemapindex in the namespace {NS[1:-1]}")
                continue
            if element.tag in (f"{NS}url", f"{NS}sitemap"):
                yield root_tag.removeprefix(NS), {
                    field: (child.text or "").strip() for field in FIELDS
                    if (child := element.find(f"{NS}{field}")) is not None}
                element.clear()
                while element.getprevious() is not None:  # done with: let the tree not grow
                    del element.getparent()[0]
    except etree.XMLSyntaxError as exc:
        raise ImportFormatError(f"{name} is not well-formed XML: {exc}") from None
    if root_tag is None:
        raise ImportFormatError(f"{name} is empty")


def read_sitemap(data: bytes | BinaryIO, name: str, allowed_hosts: set[str], policy: Policy,
                 get: Callable[..., bytes] = fetch) -> Iterator[dict[str, str]]:
    """Every <url> of a sitemap as it is read, following an index one level (indexes do not
    nest): the files an index lists are fetched one at a time."""
    children: list[dict[str, str]] = []
    for kind, entry in _entries(data, name):
        if kind == "urlset":
            yield entry
            continue
        children.append(entry)
        if len(children) > MAX_INDEX_FILES:
            raise ImportFormatError(f"{name} lists more than {MAX_INDEX_FILES} sitemaps, the "
                                    "most an index may list")
    for entry in children:
        child = entry.get("loc", "")
        parts = urlsplit(child)
        if parts.scheme not in ("http", "https") or parts.netloc not in allowed_hosts:
            raise ImportFormatError(f"{name} lists {child!r}, which is not on "
                                    f"{' or '.join(sorted(allowed_hosts))}; only sitemaps "
                                    "there are fetched")
        try:
            body = get(child, policy, max_bytes=MAX_FILE_BYTES)
        except OutboundError as exc:
            raise ImportFormatError(f"{child} could not be fetched: {exc.meaning}") from None
        for kind, url in _entries(body, child):
            if kind != "urlset":
                raise ImportFormatError(f"{child} is an index inside an index; indexes do "
                                        "not nest")
            yield url


def sitemap_stream(data: bytes | BinaryIO, name: str, site_url: str, source_url: str | None,
                   policy: Policy) -> IO[str]:
    """A sitemap's URLs as the CSV stream `import_urls` reads (header first): in memory while
    small, then in a temporary file, so an index of many large files fits in neither's way.
    The whole sitemap is read before any row is imported: it is imported whole or not at all."""
    hosts = {urlsplit(site_url).netloc} | ({urlsplit(source_url).netloc} if source_url else set())
    out = tempfile.SpooledTemporaryFile(max_size=SPOOL_BYTES, mode="w+", encoding="utf-8",
                                        newline="")
    try:
        writer = csv.writer(out, lineterminator="\n")
        writer.writerow(FIELDS)
        for entry in read_sitemap(data, name, hosts, policy):
            writer.writerow([entry.get(field, "") for field in FIELDS])
        out.seek(0)
    except BaseException:
        out.close()
        raise
    return out
