"""The words of the public view of a sitemap (/sitemaps/<slug>/view/...), in the language the
browser asks for (Accept-Language): Japanese for a browser that prefers it, English otherwise.

The public layer answers before Flask sees the request, so the words are read from the
compiled catalogs with Babel itself; `view_text` marks them for `make translations`.
"""

from __future__ import annotations

from functools import cache
from pathlib import Path

from babel.support import Translations
from werkzeug.datastructures import LanguageAccept
from werkzeug.http import parse_accept_header

CATALOGS = Path(__file__).resolve().parents[2] / "translations"
LANGUAGES = ("en", "ja")  # the first is the default, as on the dashboard (webapp.i18n)
COUNT = "%(count)s"  # where a note's number goes (the stylesheet splits the note there)


def view_text(msgid: str) -> str:
    return msgid


# The stylesheet's parameters (webapp/sitemaps/sitemap.xsl) and their English, its defaults.
WORDS = {
    "title_urlset": view_text("XML sitemap"),
    "title_index": view_text("Sitemap index"),
    "note_urlset": view_text("This file lists %(count)s URLs. It is meant for search engines; "
                             "this table is only a view of it."),
    "note_index": view_text("This index lists %(count)s sitemap files. It is meant for search "
                            "engines; this table is only a view of it."),
    "col_sitemap": view_text("Sitemap"),
    "col_url": view_text("URL"),
    "col_lastmod": view_text("Last modified"),
    "col_changefreq": view_text("Change frequency"),
    "col_priority": view_text("Priority"),
    "col_images": view_text("Images"),
    "col_videos": view_text("Videos"),
    "col_languages": view_text("Languages"),
}


def language_of(environ: dict) -> str:
    """The view's language for this request's Accept-Language."""
    accepted = parse_accept_header(environ.get("HTTP_ACCEPT_LANGUAGE"), LanguageAccept)
    return accepted.best_match(LANGUAGES) or LANGUAGES[0]


@cache
def words(language: str) -> dict[str, str]:
    """The view's words in `language`, with its code as `lang`."""
    translations = Translations.load(str(CATALOGS), [language])
    return {"lang": language,
            **{name: translations.ugettext(msgid) for name, msgid in WORDS.items()}}
