"""Reading an existing sitemap (urlset or index, plain or gzip) into entries to import.

Real-world files come with BOMs, odd whitespace and extensions: the first two are tolerated;
of the extensions, what the app publishes (`image:image` with its loc, title and caption;
`xhtml:link rel="alternate" hreflang`; `video:video`, read by video_reader; `news:news`) is read
with the URL, and every other element is
counted by its name, so the import can say what it did not keep. Each entry carries the line
of its `<url>` in the file as read. A file that is not a well-formed sitemap is refused whole
with the reason in the file's terms (the line, what was expected). XML entities are never
expanded and nothing is fetched by the parser; the files an index lists are fetched only from
the index's own host or the site's.
"""


from __future__ import annotations

import gzip
import io
import json
import re
import tempfile
import zlib
from collections import Counter
from collections.abc import Callable, Iterator
from typing import BinaryIO, NamedTuple
from urllib.parse import urlsplit


from webapp.outbound import OutboundError, Policy, fetch
from webapp.protocol import IMAGE_NS, SITEMAP_NS, VIDEO_NS, XHTML_NS
from webapp.protocol.news import NEWS_NS
from webapp.urls.capped import CappedReader
from webapp.urls.importing import ImportFormatError
from webapp.urls.news import read_news_element
from webapp.urls.video_reader import read_video

NS = f"{{{SITEMAP_NS}}}"
IMAGE = f"{{{IMAGE_NS}}}"
MAX_FILE_BYTES = 52_428_800  # the protocol's ceiling for one uncompressed sitemap
MAX_INDEX_FILES = 50_000
SPOOL_BYTES = 8 << 20  # rows kept in memory before they go to a temporary file
FIELDS = ("loc", "lastmod", "changefreq", "priority")
IMAGE_FIELDS = ("loc", "title", "caption")  # what a stored image holds (models.UrlImage)
# How the not-kept elements of well-known extensions are named in a report.
PREFIXES = {SITEMAP_NS: "", IMAGE_NS: "image:", XHTML_NS: "xhtml:", VIDEO_NS: "video:",
            "http://www.google.com/schemas/sitemap-news/0.9": "news:",
            "http://www.google.com/schemas/sitemap-mobile/1.0": "mobile:"}


class Entry(NamedTuple):
    """One `<url>` (or an index's `<sitemap>`) as written in the file, values stripped."""

    line: int  # of its start tag, in the file as read (after gzip)
    file: str  # the file it is in: the one imported, or a file its index lists
    fields: dict[str, str]  # loc, lastmod, changefreq, priority: those present
    images: list[tuple[str, str, str]]  # (loc, title, caption); "" for one not there
    alternates: list[tuple[str, str]]  # (hreflang, href)
    videos: list[dict[str, object]]  # each video's fields as written (video_reader)
    news: dict[str, str] | None = None  # news:news read by webapp.urls.news.read_news_element


def looks_like_sitemap(data: bytes) -> bool:
    """Whether the bytes are gzip or XML rather than CSV or a plain list."""
    head = data[:512].lstrip(b"\xef\xbb\xbf \t\r\n")
    return data[:2] == b"\x1f\x8b" or head.startswith(b"<")


class _Capped(CappedReader):
    """A sitemap read through, refusing more than the protocol's bytes for one sitemap (after
    decompression), and naming a damaged gzip file as such: a file is parsed as it is read,
    never held whole."""

    def __init__(self, stream: BinaryIO, name: str):
        super().__init__(stream, MAX_FILE_BYTES, lambda: ImportFormatError(
            f"{name} is larger than {MAX_FILE_BYTES} bytes (uncompressed), the protocol's "
            "limit for one sitemap"))
        self.name = name

    def readinto(self, buffer) -> int:
        try:
            return super().readinto(buffer)
        except EOFError:
            raise ImportFormatError(f"{self.name} is a gzip file that ends too soon: it was cut "
                                    "short; download or compress it again") from None
        except (OSError, zlib.error):  # gzip's other errors: a damaged file
            raise ImportFormatError(f"{self.name} is a damaged gzip file and cannot be "
                                    "unpacked; download or compress it again") from None


def _opened(source: bytes | BinaryIO, name: str) -> BinaryIO:
    """The sitemap's XML as a stream, unpacked as it is read when it is gzip."""
    stream = io.BytesIO(source) if isinstance(source, bytes) else source
    head = stream.read(2)
    stream.seek(0)
    if head == b"\x1f\x8b":
        stream = gzip.GzipFile(fileobj=stream, mode="rb")
    return _Capped(stream, name)


def _name(element, file: str) -> str:
    """An element's name as a report shows it: `video:video`, `image:license`."""
    if ":" in element.tag and not element.tag.startswith("{"):  # libxml2 let it pass
        prefix = element.tag.partition(":")[0]
        raise ImportFormatError(f"{file} is not well-formed XML: line {element.sourceline}: "
                                + _ERRORS["NS_ERR_UNDEFINED_NAMESPACE"][1].format(prefix))
    from lxml import etree

    qname = etree.QName(element)
    prefix = PREFIXES.get(qname.namespace or "")
    return f"{prefix}{qname.localname}" if prefix is not None else \
        f"{qname.localname} (namespace {qname.namespace})"


def _entry(element, name: str, not_kept: Counter) -> Entry:
    """A `<url>` or `<sitemap>` element read into an Entry; the children it cannot keep are
    counted in `not_kept` by name."""
    fields: dict[str, str] = {}
    images, alternates, videos, news = [], [], [], None
    for child in element:
        if not isinstance(child.tag, str):  # a processing instruction
            continue
        if child.tag.startswith(NS) and child.tag[len(NS):] in FIELDS:
            fields[child.tag[len(NS):]] = (child.text or "").strip()
        elif child.tag == f"{IMAGE}image":
            image = dict.fromkeys(IMAGE_FIELDS, "")
            for part in child:
                if isinstance(part.tag, str) and part.tag.startswith(IMAGE) and \
                        part.tag[len(IMAGE):] in IMAGE_FIELDS:
                    image[part.tag[len(IMAGE):]] = (part.text or "").strip()
                elif isinstance(part.tag, str):
                    not_kept[_name(part, name)] += 1
            images.append(tuple(image.values()))
        elif child.tag == f"{{{NEWS_NS}}}news":
            news = read_news_element(child, lambda part: not_kept.update([_name(part, name)]))
        elif child.tag == f"{{{XHTML_NS}}}link" and child.get("rel", "").strip() == "alternate" \
                and child.get("hreflang") is not None:
            alternates.append((child.get("hreflang", "").strip(), child.get("href", "").strip()))
        elif child.tag == f"{{{VIDEO_NS}}}video":
            videos.append(read_video(child, lambda part: _name(part, name), not_kept))
        else:
            not_kept[_name(child, name)] += 1
    return Entry(element.sourceline or 0, name, fields, images, alternates, videos, news)


def _entries(source: bytes | BinaryIO, name: str,
             not_kept: Counter) -> Iterator[tuple[str, Entry]]:
    """(the file's kind, 'urlset' or 'sitemapindex'; an entry) for each <url> or <sitemap>,
    as the file is read: nothing of it is held but the entry."""
    from lxml import etree  # loaded by the first sitemap read, not by the pages that import it

    parser_options = {"resolve_entities": False, "no_network": True, "huge_tree": False,
                      "remove_comments": True}
    root_tag = None
    parsing = etree.iterparse(_opened(source, name), events=("start", "end"), **parser_options)
    try:
        for event, element in parsing:
            if event == "start":
                if root_tag is None:
                    root_tag = element.tag
                    if root_tag not in (f"{NS}urlset", f"{NS}sitemapindex"):
                        raise ImportFormatError(
                            f"{name} is not a sitemap: its root element "
                            f"<{etree.QName(root_tag).localname}> is not urlset or "
                            f"sitemapindex in the namespace {SITEMAP_NS}")
                continue
            if element.tag in (f"{NS}url", f"{NS}sitemap"):
                yield root_tag.removeprefix(NS), _entry(element, name, not_kept)
                element.clear()
                while element.getprevious() is not None:  # done with: let the tree not grow
                    del element.getparent()[0]
    except etree.XMLSyntaxError:
        raise ImportFormatError(syntax_problem(name, parsing.error_log)) from None
    if root_tag is None:
        raise ImportFormatError(f"{name} is empty")


# libxml2's errors (their names, as lxml gives them) in the terms of someone fixing the file;
# the details, when a pattern finds them in libxml2's message.
_ERRORS = {
    "ERR_TAG_NOT_FINISHED": (r"in tag (\S+) line (\d+)", "the file ends before <{0}> (opened "
                             "on line {1}) is closed; it was probably cut short"),
    "ERR_TAG_NAME_MISMATCH": (r": (\S+) line (\d+) and (\S+)",
                              "<{0}>, opened on line {1}, is closed by </{2}>"),
    "ERR_ENTITYREF_SEMICOL_MISSING": ("", "an & that does not start an entity; write & as "
                                          "&amp;"),
    "ERR_UNDECLARED_ENTITY": (r"'([^']*)'", "the entity &{0}; is not one XML defines; use "
                              "&amp; &lt; &gt; &quot; &apos; or a numeric one such as &#160;"),
    "ERR_INVALID_ENCODING": ("", "bytes that are not UTF-8; a sitemap must be saved as UTF-8"),
    "ERR_INVALID_CHAR": ("", "a character XML does not allow (a control character)"),
    "ERR_DOCUMENT_EMPTY": ("", "no XML element; a sitemap starts with <urlset> or "
                               "<sitemapindex>"),
    "ERR_DOCUMENT_END": ("", "more content after the end of the root element; a sitemap has "
                             "one <urlset> or <sitemapindex> and nothing after it"),
    "NS_ERR_UNDEFINED_NAMESPACE": (r"prefix (\S+)", "the prefix {0}: is used but not "
                                   "declared; declare it on the root element "
                                   "(xmlns:{0}=\"...\")"),
    "ERR_RESERVED_XML_NAME": ("", "an XML declaration (<?xml ...?>) that is not at the very "
                                  "start of the file"),
    "ERR_UNSUPPORTED_ENCODING": ("", "an encoding this app cannot read; a sitemap must be "
                                     "UTF-8"),
    "ERR_NAME_REQUIRED": ("", "a < that does not start a tag; write < as &lt;"),
    "ERR_ATTRIBUTE_NOT_STARTED": ("", "an attribute's value without quotes; write it as "
                                      "name=\"value\""),
}


def syntax_problem(name: str, log) -> str:
    """Why a file is not well-formed XML, and where, in the terms of someone fixing the file
    (libxml2's own words only for what this does not know)."""
    first = next((entry for entry in log if entry.level_name in ("ERROR", "FATAL")), None)
    if first is None:  # no element at all: libxml2 says nothing of its own
        return f"{name} is not well-formed XML: it has no element; a sitemap starts with " \
               "<urlset> or <sitemapindex>"
    kind = first.type_name
    if kind == "ERR_NAME_REQUIRED" and "EntityRef" in first.message:
        kind = "ERR_ENTITYREF_SEMICOL_MISSING"  # `& ` rather than `<`
    pattern, text = _ERRORS.get(kind, ("", first.message))
    found = re.search(pattern, first.message) if pattern else None
    what = text.format(*found.groups()) if found else text if not pattern else first.message
    return f"{name} is not well-formed XML: line {first.line}, column {first.column}: {what}"


def read_sitemap(data: bytes | BinaryIO, name: str, allowed_hosts: set[str], policy: Policy,
                 not_kept: Counter, get: Callable[..., bytes] = fetch) -> Iterator[Entry]:
    """Every <url> of a sitemap as it is read, following an index one level (indexes do not
    nest): the files an index lists are fetched one at a time. What is not kept is counted
    in `not_kept`."""
    children: list[Entry] = []
    for kind, entry in _entries(data, name, not_kept):
        if kind == "urlset":
            yield entry
            continue
        children.append(entry)
        if len(children) > MAX_INDEX_FILES:
            raise ImportFormatError(f"{name} lists more than {MAX_INDEX_FILES} sitemaps, the "
                                    "most an index may list")
    for entry in children:  # every file's host is checked before any file is fetched
        child = entry.fields.get("loc", "")
        parts = urlsplit(child)
        if parts.scheme not in ("http", "https") or parts.netloc not in allowed_hosts:
            raise ImportFormatError(f"{name} lists {child!r} on line {entry.line}, which is not "
                                    f"on {' or '.join(sorted(allowed_hosts))}; only sitemaps "
                                    "there are fetched")
    for entry in children:
        child = entry.fields.get("loc", "")
        try:
            body = get(child, policy, max_bytes=MAX_FILE_BYTES)
        except OutboundError as exc:
            raise ImportFormatError(f"{child} could not be fetched: {exc.meaning}") from None
        for kind, url in _entries(body, child, not_kept):
            if kind != "urlset":
                raise ImportFormatError(f"{child} is an index inside an index; indexes do "
                                        "not nest")
            yield url


class SitemapEntries:
    """A sitemap's entries, read whole before any is imported (a sitemap is imported whole or
    not at all): in memory while small, then in a temporary file, one JSON entry a line, so an
    index of many large files fits in neither's way."""

    def __init__(self, data: bytes | BinaryIO, name: str, site_url: str,
                 source_url: str | None, policy: Policy):
        hosts = {urlsplit(site_url).netloc} | (
            {urlsplit(source_url).netloc} if source_url else set())
        self.name, self.count = name, 0
        self.not_kept: Counter[str] = Counter()  # element name -> how many were not kept
        self._file = tempfile.SpooledTemporaryFile(max_size=SPOOL_BYTES, mode="w+",
                                                   encoding="utf-8")
        try:
            for entry in read_sitemap(data, name, hosts, policy, self.not_kept):
                self._file.write(json.dumps(entry, ensure_ascii=False) + "\n")
                self.count += 1
        except BaseException:
            self._file.close()
            raise

    def __iter__(self) -> Iterator[Entry]:
        self._file.seek(0)
        for line in self._file:
            number, file, fields, images, alternates, videos, news = json.loads(line)
            yield Entry(number, file, fields, [tuple(image) for image in images],
                        [tuple(pair) for pair in alternates], videos, news)

    def __enter__(self) -> SitemapEntries:
        return self

    def __exit__(self, *exc_info) -> None:
        self._file.close()
