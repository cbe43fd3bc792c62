"""App-wide HTTP behaviour: trusted proxy headers and error responses."""

from __future__ import annotations

from flask import Flask, render_template, request
from werkzeug.exceptions import HTTPException, InternalServerError
from werkzeug.middleware.proxy_fix import ProxyFix

from webapp.db import get_session


def init_app(app: Flask) -> None:
    proxies = app.config["PROXY_COUNT"]
    if proxies:
        # Only then are X-Forwarded-Proto/-Host/-For believed: anyone can send those headers.
        app.wsgi_app = ProxyFix(app.wsgi_app, x_for=proxies, x_proto=proxies, x_host=proxies)
    app.register_error_handler(HTTPException, _http_error)
    app.register_error_handler(Exception, _unexpected_error)


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
