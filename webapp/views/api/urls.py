"""URLs over the API: pages by cursor, bulk upsert and delete by loc."""

from __future__ import annotations

from flask import jsonify, request
from sqlalchemy import select
from sqlalchemy.orm import selectinload

from webapp.db import get_session
from webapp.models import Url
from webapp.urls import (
    MAX_ITEMS,
    Rules,
    SyncReport,
    check_work,
    delete_locs,
    hreflang,
    starting_with,
    upsert_urls,
    videos_json,
)
from webapp.views.api import (
    ApiError,
    bp,
    decode_cursor,
    encode_cursor,
    isoformat,
    load_site,
    query_choice,
    query_int,
    request_json,
    writes,
)


def url_json(url: Url) -> dict:
    return {"loc": url.loc, "lastmod": url.lastmod, "changefreq": url.changefreq,
            "priority": url.priority, "images": [image.loc for image in url.images],
            "alternates": {a.hreflang: a.href for a in url.alternates},
            "videos": videos_json(url.videos),
            "news": url.news and {"publication_date": url.news.publication_date,
                                  "title": url.news.title},
            "deleted_at": isoformat(url.deleted_at), "change_seq": url.change_seq,
            "updated_at": isoformat(url.updated_at)}


def _items(body: dict, name: str) -> list:
    """The body's list of items: at most MAX_ITEMS (413 beyond, so it is never half-done)."""
    items = body[name]
    if len(items) > MAX_ITEMS:
        raise ApiError(413, f"{len(items)} {name} in one request; send at most {MAX_ITEMS:,} "
                       "at a time")
    return items


def _report(report: SyncReport, **counts) -> dict:
    return {**counts, "errors": [error.as_dict() for error in report.errors],
            "notes": [note.as_dict() for note in report.notes]}


@bp.get("/sites/<slug>/urls")
def urls_list(slug):
    site = load_site(slug)
    limit = query_int("limit", 100, 1, 1000)
    status = query_choice("status", ("live", "deleted", "all"))
    query = select(Url).where(Url.site_id == site.id).options(
        selectinload(Url.images), selectinload(Url.alternates), selectinload(Url.videos),
        selectinload(Url.news))
    if status != "all":
        query = query.where(Url.deleted_at.is_(None) if status == "live"
                            else Url.deleted_at.is_not(None))
    if request.args.get("prefix", "").strip():
        query = query.where(*starting_with(site, request.args["prefix"]))
    if request.args.get("cursor"):
        query = query.where(Url.loc > decode_cursor(request.args["cursor"]))
    rows = get_session().scalars(query.order_by(Url.loc).limit(limit + 1)).all()
    more = len(rows) > limit
    rows = rows[:limit]
    return jsonify(items=[url_json(url) for url in rows],
                   next_cursor=encode_cursor(rows[-1].loc) if more else None)


@bp.post("/sites/<slug>/urls")
@writes
def urls_upsert(slug):
    site = load_site(slug)
    body = _envelope("urls")
    session = get_session()
    items = _items(body, "urls")
    check_work(Rules.of(site).exclude, [item.get("loc") for item in items
                                        if isinstance(item, dict)], "urls")
    report = upsert_urls(session, site, items)
    unreturned = hreflang.unreturned_among(
        session, site, [item.get("loc") for item in items if isinstance(item, dict)])
    session.commit()
    return jsonify(_report(report, created=report.created, updated=report.updated,
                           unchanged=report.unchanged, warnings=_warnings(unreturned),
                           excluded=dict(report.excluded)))


def _warnings(unreturned: hreflang.Unreturned) -> list[dict]:
    """What was stored but will not work as meant: alternates without their return link."""
    if not unreturned.count:
        return []
    return [{"rule": "hreflang_reciprocal", "count": unreturned.count,
             "pairs": [{"loc": page, "alternate": alternate}
                       for page, alternate in unreturned.pairs],
             "message": f"{unreturned.count} hreflang alternates do not list their page back; "
                        "search engines ignore such pairs. Add the return links, or complete "
                        "the clusters (`flask urls complete-hreflang`, or the button in the "
                        "site's health)."}]


def _envelope(name: str) -> dict:
    """The body `{name: [...]}`; its items are checked one by one by the domain functions, so
    that one bad item does not refuse the others."""
    body = request_json()
    if not (isinstance(body, dict) and isinstance(body.get(name), list)) or set(body) != {name}:
        raise ApiError(422, f'the body must be {{"{name}": [...]}} and nothing else',
                       [{"field": name, "rule": "a list, the body's only member",
                         "message": f'the body must be {{"{name}": [...]}}'}])
    return body


@bp.post("/sites/<slug>/urls/delete")
@writes
def urls_delete(slug):
    site = load_site(slug)
    body = _envelope("locs")
    session = get_session()
    report = delete_locs(session, site, _items(body, "locs"))
    session.commit()
    return jsonify(_report(report, deleted=report.deleted, not_found=report.not_found))


@bp.delete("/sites/<slug>/urls")
@writes
def url_delete(slug):
    site = load_site(slug)
    if "loc" not in request.args:
        raise ApiError(400, "name the URL to delete: ?loc=https://...",
                       [{"field": "loc", "rule": "required", "message": "loc: required"}])
    session = get_session()
    report = delete_locs(session, site, [request.args["loc"]])
    if report.errors:
        error = report.errors[0]
        raise ApiError(422, error.message, [{"field": error.field, "rule": error.rule,
                                             "message": error.message}])
    if not report.deleted:
        raise ApiError(404, f"{report.not_found[0]} is not a live URL of site {site.slug}")
    session.commit()
    return jsonify(_report(report, deleted=report.deleted, not_found=[]))
