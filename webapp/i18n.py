"""The dashboard's languages: which one a request is answered in, and in which timezone.

Strings are marked with Flask-Babel's `gettext`/`lazy_gettext`/`ngettext` (`_` in templates)
and translated from the catalogs in `webapp/translations` (`make translations` extracts and
updates them; `make install` compiles them). A signed-in user's own choice wins, then the
browser's Accept-Language, then English. Outside a request (the CLI, workers) it is English.

Rules of bad input (`errors.InvalidValue`) are `errors.rule_text` (or lazy strings): a page
shows them in its language, while the CLI (no request) and the API's `rule`
(`errors.in_english`) read them in English.
"""

from __future__ import annotations

import functools
import zoneinfo
from datetime import UTC, datetime

from babel.dates import format_skeleton
from flask import Flask, has_request_context, request
from flask_babel import Babel, get_locale, get_timezone
from flask_login import current_user

LANGUAGES = ("en", "ja")  # the first is the default
LANGUAGE_NAMES = {"en": "English", "ja": "日本語"}  # each in its own language
DEFAULT_TIMEZONE = "UTC"

babel = Babel()


def language_for(chosen: str | None) -> str:
    """The language of a request for a person whose choice is `chosen` (None: the browser's)."""
    if chosen in LANGUAGES:
        return chosen
    return request.accept_languages.best_match(LANGUAGES) or LANGUAGES[0]


def select_language() -> str:
    if not has_request_context():
        return LANGUAGES[0]
    return language_for(getattr(current_user, "language", None))


def select_timezone() -> str:
    if has_request_context():
        chosen = getattr(current_user, "timezone", None)
        if chosen in timezones():
            return chosen
    return DEFAULT_TIMEZONE


@functools.cache
def timezones() -> tuple[str, ...]:
    """The IANA zones a person may choose, sorted (no `posix/` or `right/` duplicates)."""
    return tuple(sorted(name for name in zoneinfo.available_timezones()
                        if not name.startswith(("posix/", "right/")) and name != "localtime"))


def page_language() -> str:
    """The language tag of the page being rendered (`<html lang>`)."""
    return str(get_locale() or LANGUAGES[0]).replace("_", "-")


def iso_instant(value: datetime) -> str:
    """A stored moment as ISO 8601 in UTC (stored moments without a zone are UTC)."""
    aware = value if value.tzinfo else value.replace(tzinfo=UTC)
    return aware.astimezone(UTC).isoformat(timespec="seconds")


def moment(value: datetime) -> str:
    """A stored moment as the reader reads it: their language's date, a 24-hour time in their
    timezone, and the zone's name ("Nov 25, 2026 20:37 Asia/Tokyo")."""
    aware = value if value.tzinfo else value.replace(tzinfo=UTC)
    zone, locale = get_timezone(), get_locale() or LANGUAGES[0]
    local = aware.astimezone(zone)
    date = format_skeleton("yMMMd", local, tzinfo=zone, locale=locale)
    time = format_skeleton("Hm", local, tzinfo=zone, locale=locale)
    return f"{date} {time} {zone.key if hasattr(zone, 'key') else zone}"


def init_app(app: Flask) -> None:
    babel.init_app(app, locale_selector=select_language, timezone_selector=select_timezone)
    app.jinja_env.globals.update(page_language=page_language, iso_instant=iso_instant,
                                 moment=moment)
    app.add_template_filter(said_or, "said_or")


def said_or(lines: list | None, text: str | None) -> str:
    """`lines` (webapp.said) in the reader's language, or the stored `text` when a row has none
    (written before its words were kept as message ids)."""
    from webapp.said import render

    return "".join(render(line) for line in lines) if lines else (text or "")
