"""The dashboard's languages: which one a request is answered in, and in which timezone.

Strings are marked with Flask-Babel's `gettext`/`lazy_gettext`/`ngettext` (`_` in templates)
and translated from the catalogs in `webapp/translations` (`make translations` extracts and
updates them; `make install` compiles them). A signed-in user's own choice wins, then the
browser's Accept-Language, then English. Outside a request (the CLI, workers) it is English.
"""

from __future__ import annotations

from flask import Flask, has_request_context, request
from flask_babel import Babel
from flask_login import current_user

LANGUAGES = ("en", "ja")  # the first is the default
DEFAULT_TIMEZONE = "UTC"

babel = Babel()


def select_language() -> str:
    if not has_request_context():
        return LANGUAGES[0]
    chosen = getattr(current_user, "language", None)
    if chosen in LANGUAGES:
        return chosen
    return request.accept_languages.best_match(LANGUAGES) or LANGUAGES[0]


def select_timezone() -> str:
    if has_request_context():
        chosen = getattr(current_user, "timezone", None)
        if chosen:
            return chosen
    return DEFAULT_TIMEZONE


def init_app(app: Flask) -> None:
    babel.init_app(app, locale_selector=select_language, timezone_selector=select_timezone)
