"""The sitemaps.org 0.9 rules, as pure functions: validate and normalise what goes into a sitemap.

Every `normalize_*` function takes what a person typed (or a file held) and returns the one form
the generator writes, or raises `ProtocolError` naming the field, the value and the rule.
The rules and their sources are in PROTOCOL.md; section numbers below refer to it. One module
per part: `common` (namespaces, limits, the error, XML escaping), `locations` (loc, a site's
addresses and scope), `fields` (lastmod, changefreq, priority, the extensions); Google News'
rules are `news`'s, imported by name. Nothing here imports the app but its error type.
"""

from __future__ import annotations

from webapp.protocol.common import (
    CHANGEFREQS,
    DEFAULT_PORTS,
    IMAGE_NS,
    MAX_FILE_BYTES,
    MAX_IMAGES_PER_URL,
    MAX_LOC_LENGTH,
    MAX_URLS_PER_FILE,
    MIN_LOC_LENGTH,
    NO_QUERY_RULE,
    SITEMAP_NS,
    VIDEO_NS,
    XHTML_NS,
    ProtocolError,
    check_text,
    escape,
)
from webapp.protocol.fields import (
    AHEAD_RULE,
    FIELD_RULES,
    LANG_URL_RULE,
    LASTMOD_RULE,
    check_lastmod,
    format_priority,
    latest_accepted,
    lists_itself,
    normalize_changefreq,
    normalize_hreflang,
    normalize_lastmod,
    normalize_priority,
    not_ahead,
    one_url_per_language,
    too_many_images,
)
from webapp.protocol.locations import (
    Scope,
    check_encoding,
    check_site_scope,
    directory,
    normalize_base_url,
    normalize_sitemap_url,
    normalize_url,
    normalize_url_noting,
    origin,
    remove_dot_segments,
)

__all__ = [
    "CHANGEFREQS",
    "DEFAULT_PORTS",
    "IMAGE_NS",
    "MAX_FILE_BYTES",
    "MAX_IMAGES_PER_URL",
    "MAX_LOC_LENGTH",
    "MAX_URLS_PER_FILE",
    "MIN_LOC_LENGTH",
    "NO_QUERY_RULE",
    "SITEMAP_NS",
    "VIDEO_NS",
    "XHTML_NS",
    "ProtocolError",
    "check_text",
    "escape",
    "Scope",
    "check_encoding",
    "check_site_scope",
    "directory",
    "normalize_base_url",
    "normalize_sitemap_url",
    "normalize_url",
    "normalize_url_noting",
    "origin",
    "remove_dot_segments",
    "AHEAD_RULE",
    "FIELD_RULES",
    "LANG_URL_RULE",
    "LASTMOD_RULE",
    "check_lastmod",
    "format_priority",
    "latest_accepted",
    "lists_itself",
    "normalize_changefreq",
    "normalize_hreflang",
    "normalize_lastmod",
    "normalize_priority",
    "not_ahead",
    "one_url_per_language",
    "too_many_images",
]
