"""Incoming URLs, however they arrive: one edited in a form or on the command line (`edit`),
many at once from a content system (`bulk`), a CSV file or list (`importing`, whose rows are
checked by `csv_rows`, in a worker process for large files, in an encoding of `encodings`), an
existing sitemap (read by `sitemap_reader`, imported with its extensions by `sitemap_import`),
fetched or uploaded (`sources`); images and alternates of many URLs (`children`); the CSV export
the import reads back (`exporting`); the change log every write feeds (`changes`); what a site
owner should hear about a site's URLs (`health`); hreflang clusters (`hreflang`); a page's
videos, their rules (`videos`), storage (`video_store`) and reading from a sitemap
(`video_reader`); and the site's exclusion rules, applied wherever a loc comes in
(`exclusions`).

Others use the names below. Each is loaded from its module on first use (PEP 562), so that the
worker process of a large import, which needs `csv_rows` alone, loads none of the database layer.
"""

from __future__ import annotations

from webapp import front_door

# Each name others may use, and the module that defines it.
_HOMES = {
    "ITEM_FIELDS": "bulk", "MAX_ITEMS": "bulk", "SyncReport": "bulk", "delete_locs": "bulk",
    "upsert_urls": "bulk",
    "changed_locs": "changes", "changed_locs_many": "changes", "committed_change_seq": "changes",
    "next_change_seq": "changes", "urls_changed": "changes",
    "ENCODINGS": "encodings", "check_encoding_choice": "encodings",
    "Excluded": "exclusions", "Rules": "exclusions", "check_rule": "exclusions",
    "compile_rule": "exclusions", "parse_exclude": "exclusions",
    "parse_strip_params": "exclusions", "show_exclude": "exclusions",
    "REGEX": "exclusions", "check_together": "exclusions", "check_work": "rule_cost",
    "over_cost": "rule_cost", "lines_of": "exclusions",
    "path_forms": "exclusions", "rule_matches": "exclusions",
    "csv_chunks": "exporting",
    "check_url": "edit", "delete_url": "edit", "delete_urls": "edit", "save_url": "edit",
    "prefix_of": "edit", "shown": "edit", "starting_with": "edit", "write_url": "edit",
    "COLUMNS": "importing", "ImportFormatError": "importing", "ImportReport": "importing",
    "import_urls": "importing",
    "check_source_url": "sources", "fetch_source": "sources", "import_opened": "sources",
    "open_import": "sources",
    "find_url": "edit",
    "read_videos_file": "video_json", "videos_json": "video_json",
    "VIDEO_FIELDS": "videos", "Video": "videos", "format_rating": "videos",
    "normalize_video": "videos",
    "videos_of": "video_store", "write_videos": "video_store",
    "write_videos_by_loc": "video_store",
    "KEEP_NEWS": "news", "form_news": "news", "news_notes": "news", "save_news": "news",
}

_MODULES = ("health", "hreflang", "videos")  # used as a whole: health.warnings(...)

__all__ = [*_MODULES, *_HOMES]


__getattr__ = front_door(__name__, _HOMES, _MODULES)
