"""The JSON API for content systems, under /api/v1: bearer tokens, JSON in and out.

Every request but the OpenAPI document carries a token (webapp.accounts.tokens), which is checked and
counted before the view runs. Errors have one shape whatever raised them:
`{"error": {"status", "code", "message", "errors": [{"index"?, "field", "rule", "message"}]}}`.
The OpenAPI document (spec.py) is the contract: request bodies are validated against it.
"""

from __future__ import annotations

import base64
import binascii
import functools
import re
from datetime import datetime

from flask import Blueprint, current_app, g, jsonify, request
from sqlalchemy import select
from sqlalchemy.exc import IntegrityError, OperationalError
from werkzeug.exceptions import BadRequest, RequestEntityTooLarge, UnsupportedMediaType

from webapp.db import get_session
from webapp.errors import (
    Conflict,
    InvalidValue,
    NotAllowed,
    NotFound,
    each_error,
    in_english,
    unstorable,
    urls_as_stored,
)
from webapp.leases import SiteBusy
from webapp.models import Site, utcnow
from webapp.accounts.tokens import Access, Refused, authenticate, rate_headers
from webapp.views.api.spec import SPEC
from webapp.views.http import csrf, json_error

bp = Blueprint("api", __name__, url_prefix="/api/v1")
csrf.exempt(bp)  # a bearer token, not a cookie: a forged cross-site request has no token

MAX_BODY_BYTES = 32 << 20  # 10,000 URLs with images and alternates fit with room to spare


class ApiError(Exception):
    """An answer other than success, raised from anywhere in a view."""

    def __init__(self, status: int, message: str, errors: list[dict] | None = None,
                 headers: dict[str, str] | None = None):
        super().__init__(message)
        self.status, self.errors, self.headers = status, errors or [], headers or {}


def access() -> Access:
    return g.api_access


def isoformat(moment: datetime | None) -> str | None:
    return None if moment is None else moment.isoformat()


@bp.before_request
def _authenticate():
    urls_as_stored()  # a program reads the answer: URLs as the API stores and returns them
    # One byte more than allowed: a chunked body (no Content-Length) is cut at the limit without
    # an error, so request_json tells an over-long one by that extra byte.
    request.max_content_length = MAX_BODY_BYTES + 1
    if request.endpoint == "api.openapi":
        return None
    try:
        g.api_access = authenticate(get_session(), request.headers.get("Authorization"),
                                    utcnow(), current_app.config["API_RATE_LIMIT"])
    except Refused as exc:
        headers = {"WWW-Authenticate": 'Bearer realm="api"'} if exc.status == 401 else {}
        headers.update(exc.headers)
        if exc.retry_after is not None:
            headers["Retry-After"] = str(exc.retry_after)
        return json_error(exc.status, str(exc), headers=headers)
    unknown = sorted(set(request.args) - _query_names())
    if unknown:
        known = ", ".join(sorted(_query_names())) or "none"
        return json_error(400, f"unknown query parameter {unknown[0]!r}; this operation takes: "
                          f"{known}", errors=[{"field": unknown[0], "rule": "not a parameter of "
                                               "this operation", "message": f"{unknown[0]}: "
                                               "not a parameter of this operation"}])
    return None


def _query_names() -> set[str]:
    """The query parameters the OpenAPI document gives the request's operation."""
    if request.url_rule is None:
        return set()
    path = re.sub(r"<(?:\w+:)?(\w+)>", r"{\1}", request.url_rule.rule).removeprefix(bp.url_prefix)
    operation = SPEC["paths"].get(path, {}).get(request.method.lower(), {})
    return {p["name"] for p in operation.get("parameters", ()) if p["in"] == "query"}


@bp.after_request
def _rate_headers(response):
    seen = g.get("api_access")
    if seen is not None:
        response.headers.update(rate_headers(seen.limit, seen.remaining, seen.reset_at))
    response.headers["Cache-Control"] = "no-store"
    return response


@bp.errorhandler(ApiError)
def _api_error(exc: ApiError):
    get_session().rollback()
    return json_error(exc.status, str(exc), errors=exc.errors, headers=exc.headers)


@bp.errorhandler(InvalidValue)
def _invalid(exc: InvalidValue):
    """422 naming every field's error; 403 when a field may not be set by this token, 409
    when each clashes with what is stored."""
    get_session().rollback()
    errors = each_error(exc)
    status = 403 if any(isinstance(error, NotAllowed) for error in errors) else \
        409 if all(isinstance(error, Conflict) for error in errors) else 422
    return json_error(status, str(exc), errors=[field_error(error) for error in errors])


@bp.errorhandler(NotFound)
def _not_found(exc: NotFound):
    get_session().rollback()
    return json_error(404, str(exc))


@bp.errorhandler(SiteBusy)
def _busy(exc: SiteBusy):
    get_session().rollback()
    return json_error(409, str(exc))


@bp.errorhandler(IntegrityError)
def _integrity(_exc: IntegrityError):
    get_session().rollback()
    return json_error(409, "another change to the same data was saved at the same time; "
                      "nothing of this request was stored, send it again")


@bp.errorhandler(OperationalError)
def _database(exc: OperationalError):
    get_session().rollback()
    current_app.logger.warning("API request failed on the database: %s", exc.orig)
    return json_error(503, "the database is busy or unreachable; nothing of this request was "
                      "stored, send it again shortly", headers={"Retry-After": "5"})


def field_error(exc: InvalidValue, index: int | None = None) -> dict:
    item = {"field": exc.field, "rule": exc.rule, "message": str(exc)}
    return item if index is None else {"index": index, **item}


def writes(view):
    """Guard a view that changes data: 403 unless the token may write."""

    @functools.wraps(view)
    def guarded(*args, **kwargs):
        if not access().can_write:
            raise ApiError(403, "this token may only read: writing needs a write token of an "
                           "editor or admin account")
        return view(*args, **kwargs)

    return guarded


def load_site(slug: str) -> Site:
    """The site with this slug if the token may see it; 404 otherwise, whether it exists or not."""
    site = get_session().scalar(select(Site).where(Site.slug == slug))
    if site is None or not access().sees(site):
        raise ApiError(404, f"there is no site {slug!r} for this token")
    return site


_validators: dict[str, object] = {}  # a jsonschema validator per schema


def request_json() -> object:
    """The request's body parsed as JSON: 415 when it is not sent as JSON, 400 when malformed."""
    if not request.is_json:
        raise UnsupportedMediaType("send the body as JSON with Content-Type: application/json")
    if len(request.get_data(cache=True)) > MAX_BODY_BYTES:
        raise RequestEntityTooLarge()
    try:
        return request.get_json()
    except BadRequest:
        raise ApiError(400, "the body is not valid JSON") from None
    except RecursionError:
        raise ApiError(400, "the body nests arrays or objects too deeply") from None


def _unstorable_text(body: object):
    """(field, rule) for each string of the body, key or value, that no column can hold."""
    stack: list[tuple[str, object]] = [("", body)]
    while stack:
        path, value = stack.pop()
        if isinstance(value, dict):
            for key, item in value.items():
                field = f"{path}/{key}" if path else key
                stack.append((field, key))
                stack.append((field, item))
        elif isinstance(value, list):
            stack.extend((f"{path}/{index}" if path else str(index), item)
                         for index, item in enumerate(value))
        elif isinstance(value, str) and (rule := unstorable(value)):
            yield path or "body", in_english(rule)


def json_body(schema: str) -> dict:
    """The request's JSON body, checked against a schema of the OpenAPI document and for text
    no column can hold. (Bulk bodies are checked item by item by the domain functions.)"""
    body = request_json()
    errors = [{"field": field, "rule": rule, "message": f"{field}: {rule}"}
              for field, rule in sorted(_unstorable_text(body))]
    if errors:
        raise ApiError(422, f"the body has text that cannot be stored: {errors[0]['message']}",
                       errors[:100])
    validator = _validators.get(schema)
    if validator is None:
        from jsonschema import Draft202012Validator  # loaded by the first body checked

        validator = Draft202012Validator({"$ref": f"#/components/schemas/{schema}",
                                          "components": SPEC["components"]})
        _validators[schema] = validator
    problems = sorted(validator.iter_errors(body), key=lambda e: list(map(str, e.path)))
    if problems:
        errors = [{"field": "/".join(map(str, e.path)) or "body", "rule": e.message,
                   "message": f"{'/'.join(map(str, e.path)) or 'body'}: {e.message}"}
                  for e in problems[:100]]
        raise ApiError(422, f"the body does not match the {schema} schema: "
                       f"{errors[0]['message']}", errors)
    return body


def query_int(name: str, default: int, low: int, high: int) -> int:
    text = request.args.get(name)
    if text is None:
        return default
    if not (text.isascii() and text.isdigit()) or not low <= int(text) <= high:
        raise ApiError(400, f"{name} must be a whole number from {low} to {high}",
                       [{"field": name, "rule": f"a whole number from {low} to {high}",
                         "message": f"{name} {text[:40]!r}: must be a whole number from {low} "
                                    f"to {high}"}])
    return int(text)


def query_choice(name: str, choices: tuple[str, ...]) -> str:
    value = request.args.get(name, choices[0])
    if value not in choices:
        rule = f"one of {', '.join(choices)}"
        raise ApiError(400, f"{name} must be {rule}",
                       [{"field": name, "rule": rule, "message": f"{name} {value[:40]!r}: must "
                                                                 f"be {rule}"}])
    return value


def encode_cursor(key: str) -> str:
    """The next_cursor of a page ordered by a text key (a loc, a slug): its last key."""
    return base64.urlsafe_b64encode(key.encode()).decode().rstrip("=")


def decode_cursor(cursor: str) -> str:
    """The key a cursor of encode_cursor holds; 400 naming `cursor` for anything else."""
    try:
        key = base64.b64decode(cursor + "=" * (-len(cursor) % 4), altchars=b"-_",
                               validate=True).decode()
        if "\x00" in key:  # no loc or slug holds one (and PostgreSQL could not compare it)
            raise ValueError(key)
        return key
    except (binascii.Error, UnicodeDecodeError, ValueError):
        raise ApiError(400, "cursor is not one this API gave out: pass next_cursor unchanged",
                       [{"field": "cursor", "rule": "the next_cursor of the page before",
                         "message": "cursor: not one this API gave out"}]) from None


@bp.get("/openapi.json")
def openapi():
    return jsonify(SPEC)


from webapp.views.api import runs, sites, urls  # noqa: E402  (routes attach themselves to bp)

__all__ = ["bp", "runs", "sites", "urls"]
