"""App-wide HTTP behaviour: trusted proxy headers, CSRF, security headers, error responses."""

from __future__ import annotations

from flask import Flask, Response, render_template, request
from flask_wtf.csrf import CSRFProtect
from werkzeug.exceptions import HTTPException, InternalServerError
from werkzeug.middleware.proxy_fix import ProxyFix
from werkzeug.routing import BaseConverter

from webapp.db import get_session

csrf = CSRFProtect()

SECURITY_HEADERS = {
    "Content-Security-Policy": "default-src 'self'; img-src 'self' data:; "
                               "frame-ancestors 'none'; form-action 'self'; base-uri 'none'",
    "X-Content-Type-Options": "nosniff",
    "X-Frame-Options": "DENY",
    "Referrer-Policy": "same-origin",
}


class IdConverter(BaseConverter):
    """A row id in a path: digits that fit a 64-bit integer (longer ones are a 404, not a 500)."""

    regex = r"\d{1,18}"

    def to_python(self, value: str) -> int:
        return int(value)

    def to_url(self, value: int) -> str:
        return str(value)


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
    app.after_request(_security_headers)
    app.register_error_handler(HTTPException, _http_error)
    app.register_error_handler(Exception, _unexpected_error)


def _security_headers(response: Response) -> Response:
    for name, value in SECURITY_HEADERS.items():
        response.headers.setdefault(name, value)
    if request.endpoint and request.endpoint.startswith("dashboard."):
        response.headers.setdefault("Cache-Control", "no-store")  # signed-in pages
    return response


def _for_machines() -> bool:
    return request.path.startswith("/sitemaps/")


def _http_error(error: HTTPException):
    if _for_machines():
        return f"{error.code} {error.name}: {error.description}\n", error.code, {
            "Content-Type": "text/plain; charset=utf-8"}
    return render_template("errors/error.html", error=error), error.code


def _unexpected_error(error: Exception):
    if isinstance(error, HTTPException):
        return _http_error(error)
    get_session().rollback()
    return _http_error(InternalServerError())
