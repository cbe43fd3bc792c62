"""App-wide HTTP behaviour: trusted proxy headers, CSRF, security headers, error responses."""

from __future__ import annotations

from flask import Flask, Response, current_app, jsonify, render_template, request
from flask_babel import lazy_gettext as _l
from flask_wtf.csrf import CSRFProtect
from sqlalchemy.exc import InterfaceError, OperationalError
from werkzeug.exceptions import (
    BadRequest,
    HTTPException,
    InternalServerError,
    RequestEntityTooLarge,
    ServiceUnavailable,
)
from werkzeug.http import HTTP_STATUS_CODES
from werkzeug.middleware.proxy_fix import ProxyFix
from werkzeug.routing import BaseConverter, ValidationError

from webapp.db import get_session
from webapp.errors import in_english
from webapp.models import MAX_ID

csrf = CSRFProtect()

SECURITY_HEADERS = {
    "Content-Security-Policy": "default-src 'self'; img-src 'self' data:; "
                               "frame-ancestors 'none'; form-action 'self'; base-uri 'none'",
    "X-Content-Type-Options": "nosniff",
    "X-Frame-Options": "DENY",
    "Referrer-Policy": "same-origin",
}


class IdConverter(BaseConverter):
    """A row id in a path: digits up to MAX_ID (a larger number is a 404, not a 500)."""

    regex = r"\d{1,10}"

    def to_python(self, value: str) -> int:
        number = int(value)
        if number > MAX_ID:
            raise ValidationError()  # no route matches: a 404
        return number

    def to_url(self, value: int) -> str:
        return str(value)


def id_of(text: str) -> int | None:
    """The row id a form field or query parameter names, or None when it names none: ASCII
    digits up to MAX_ID (int() takes superscripts and other digits that isdigit() accepts)."""
    if text.isascii() and text.isdigit() and len(text) <= 10 and int(text) <= MAX_ID:
        return int(text)
    return None


def init_app(app: Flask) -> None:
    app.url_map.converters["id"] = IdConverter
    proxies = app.config["PROXY_COUNT"]
    if proxies:
        # Only then are X-Forwarded-Proto/-Host/-For believed: anyone can send those headers.
        app.wsgi_app = ProxyFix(app.wsgi_app, x_for=proxies, x_proto=proxies, x_host=proxies)
    app.config.update(SESSION_COOKIE_HTTPONLY=True, SESSION_COOKIE_SAMESITE="Lax",
                      REMEMBER_COOKIE_HTTPONLY=True, REMEMBER_COOKIE_SAMESITE="Lax",
                      SESSION_COOKIE_SECURE=app.config["SECURE_COOKIES"],
                      REMEMBER_COOKIE_SECURE=app.config["SECURE_COOKIES"],
                      WTF_CSRF_TIME_LIMIT=None)  # a token lives as long as the session
    csrf.init_app(app)  # every POST, PUT, PATCH and DELETE needs the session's token
    app.before_request(_refuse_nul)
    app.after_request(_security_headers)
    app.register_error_handler(HTTPException, _http_error)
    app.register_error_handler(Exception, _unexpected_error)


def _refuse_nul() -> None:
    """No field takes a NUL character, and PostgreSQL cannot store one: refuse it at the door."""
    sources = [("query parameter", request.args)]
    if request.mimetype in ("application/x-www-form-urlencoded", "multipart/form-data"):
        sources.append(("form field", request.form))  # other bodies are read by their views
    for where, values in sources:
        for name, value in values.items(multi=True):
            if "\x00" in value or "\x00" in name:
                raise BadRequest(f"the {where} {name[:40]!r} contains a NUL character, "
                                 "which no field accepts")


def _security_headers(response: Response) -> Response:
    for name, value in SECURITY_HEADERS.items():
        response.headers.setdefault(name, value)
    if request.endpoint and request.endpoint.startswith("dashboard."):
        response.headers.setdefault("Cache-Control", "no-store")  # signed-in pages
    return response


def _for_machines() -> bool:
    return request.path.startswith("/sitemaps/")


def json_error(status: int, message: str, errors: list[dict] | None = None,
               headers: dict[str, str] | None = None) -> Response:
    """The API's error body: the same shape for every status, whatever raised it."""
    code = HTTP_STATUS_CODES.get(status, "error").lower().replace(" ", "_").replace("-", "_")
    response = jsonify(error={"status": status, "code": code, "message": message,
                              "errors": errors or []})
    response.status_code = status
    response.headers.update(headers or {})
    return response


def _http_error(error: HTTPException):
    if error.code == 413 and not request.path.startswith("/api/"):  # the API says its own
        error = RequestEntityTooLarge(_l(
            "The upload is larger than %(mb)s MB, the most this server takes (MAX_UPLOAD_MB). "
            "Nothing was stored: compress the file with gzip, or split it.",
            mb=current_app.config["MAX_UPLOAD_MB"]))
    if request.path.startswith("/api/"):
        headers = {name: value for name, value in error.get_headers() if name == "Allow"}
        return json_error(error.code or 500, in_english(error.description or error.name),
                          headers=headers)
    if _for_machines():
        return f"{error.code} {error.name}: {in_english(error.description)}\n", error.code, {
            "Content-Type": "text/plain; charset=utf-8"}
    try:
        # Werkzeug's own descriptions are English: the page says its translated one instead.
        stock = error.description == type(error).description
        return render_template("errors/error.html", error=error,
                               stock_description=stock), error.code
    except Exception:  # the page itself needs the database (the account menu): say it plainly
        return f"{error.code} {error.name}: {in_english(error.description)}\n", error.code, {
            "Content-Type": "text/plain; charset=utf-8"}


def _unexpected_error(error: Exception):
    if isinstance(error, HTTPException):
        return _http_error(error)
    if isinstance(error, (OperationalError, InterfaceError)):
        current_app.logger.warning("the database is unreachable on %s %s: %s", request.method,
                                   request.path, getattr(error, "orig", error))
        try:
            get_session().rollback()
        except (OperationalError, InterfaceError):
            pass  # nothing was written over a connection that is gone
        # Lazy: said in the page's language only once the page renders (English elsewhere).
        unavailable = ServiceUnavailable(_l("The database is not answering. Nothing was "
                                            "changed; try again in a moment."))
        unavailable.retry_after = 5
        return _http_error(unavailable)
    current_app.logger.exception("unexpected error on %s %s", request.method, request.path)
    get_session().rollback()
    return _http_error(InternalServerError())
