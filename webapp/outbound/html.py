"""A fetched HTML page as text and as a tree, whoever fetched it (verification, discovery): its
charset and libxml2's reading of it, each in time that grows with the page's length.

Fetched bytes are read only by patterns whose time grows with the input's length, not its
square: a scan stops at the next `<`, so one that fails costs what it read, and the next starts
where it stopped (tests/test_hostile_input.py). The standard library's html.parser does not keep
to that (a page of `<a href="` repeated took a minute for 180 KB); libxml2's HTML parser does.
"""

from __future__ import annotations

import codecs
import re

from lxml import etree

_META_CHARSET = re.compile(rb"""<meta[^<>]+charset\s*=\s*["']?\s*([a-zA-Z0-9_.:-]+)""", re.I)
# libxml2's HTML parser with lxml's plain elements (lxml.html's element classes, looked up for
# every element, are not needed to read a page and cost a verification run per page).
_PARSER = etree.HTMLParser(remove_comments=True, remove_pis=True)
# An XML declaration, which lxml refuses in a str; one never closed too: libxml2 takes the
# square of the time of the white space after an unclosed `<?xml` that starts a page.
_XML_DECLARATION = re.compile(r"^\s*<\?xml[^>]*>?")


def page_charset(content_type: str | None, body: bytes) -> str:
    """The page's encoding: the Content-Type's charset, else a <meta> in the first bytes, else
    UTF-8; a name Python does not know counts as UTF-8."""
    found = None
    for part in (content_type or "").split(";")[1:]:
        name, _, value = part.partition("=")
        if name.strip().lower() == "charset" and value.strip():
            found = value.strip().strip("\"'")
    if found is None:
        match = _META_CHARSET.search(body[:4096])
        found = match.group(1).decode("ascii", "replace") if match else "utf-8"
    try:
        return codecs.lookup(found).name
    except LookupError:
        return "utf-8"


def page_text(content_type: str | None, body: bytes) -> str:
    """The page decoded by its charset (by Python, which knows more encodings than libxml2),
    without an XML declaration."""
    return _XML_DECLARATION.sub("", body.decode(page_charset(content_type, body), "replace"))


def html_tree(content_type: str | None, body: bytes) -> etree._Element | None:
    """The page as libxml2 reads HTML; None when it has no markup."""
    text = page_text(content_type, body)
    if not text.strip():
        return None
    try:
        return etree.fromstring(text, _PARSER)
    except (etree.ParserError, ValueError):
        return None
