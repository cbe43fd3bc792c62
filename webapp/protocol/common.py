"""What every sitemaps.org rule shares: the namespaces and limits, the error a broken rule
raises, and XML escaping (§1.3)."""

from __future__ import annotations

import re

from webapp.errors import InvalidValue, rule_text


SITEMAP_NS = "http://www.sitemaps.org/schemas/sitemap/0.9"
IMAGE_NS = "http://www.google.com/schemas/sitemap-image/1.1"
VIDEO_NS = "http://www.google.com/schemas/sitemap-video/1.1"
XHTML_NS = "http://www.w3.org/1999/xhtml"

MAX_URLS_PER_FILE = 50_000  # §1.7, for a urlset and for an index alike
MAX_FILE_BYTES = 52_428_800  # §1.7, uncompressed
MAX_LOC_LENGTH = 2048  # §1.2, the XSD's maxLength
MIN_LOC_LENGTH = 12  # §1.2, the XSD's minLength
MAX_IMAGES_PER_URL = 1000  # §4, sitemap-image.xsd
CHANGEFREQS = ("always", "hourly", "daily", "weekly", "monthly", "yearly", "never")
DEFAULT_PORTS = {"http": 80, "https": 443}


class ProtocolError(InvalidValue):
    """A value breaks a sitemap rule; the message names the field, the value and the rule."""


NO_QUERY_RULE = rule_text("must not have a query (?...) or fragment (#...)")


# --- XML escaping (§1.3) ----------------------------------------------------------------------

_ESCAPES = (("&", "&amp;"), ("<", "&lt;"), (">", "&gt;"), ('"', "&quot;"), ("'", "&apos;"))
# Characters XML 1.0 cannot carry at all, escaped or not.
_XML_INVALID = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\ufffe\uffff]")


def escape(text: str) -> str:
    """Entity-escape the five characters the protocol lists."""
    # Five substring tests cost a third of one regular expression search, and most text
    # (every loc, most titles) has none of them: a million-URL site escapes millions of values.
    if "&" in text or "<" in text or ">" in text or '"' in text or "'" in text:
        for char, entity in _ESCAPES:
            text = text.replace(char, entity)
    return text


def check_text(field: str, value: str, max_length: int | None = None) -> str:
    """Plain text for an extension element: trimmed, XML-safe, within its length."""
    value = value.strip()
    if _XML_INVALID.search(value):
        raise ProtocolError(field, value, rule_text(
            "contains a control character that XML cannot carry"))
    if max_length is not None and len(value) > max_length:
        raise ProtocolError(field, value, rule_text("is longer than %(limit)s characters",
                                                     limit=max_length))
    return value
