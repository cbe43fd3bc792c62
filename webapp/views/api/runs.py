"""Generating and announcing over the API: start either now, follow the task, read the history."""

from __future__ import annotations

from flask import current_app, jsonify, request, url_for
from sqlalchemy import select

from webapp import tasks
from webapp.db import get_session
from webapp.leases import gone
from webapp.models import MAX_ID, Delivery, Generation, Site, utcnow
from webapp.views.api import ApiError, access, bp, isoformat, load_site, query_int, writes


def generation_json(run: Generation) -> dict:
    return {"id": run.id, "number": run.number, "status": run.status,
            "started_at": isoformat(run.started_at),
            "finished_at": isoformat(run.finished_at), "url_count": run.url_count,
            "file_count": run.file_count, "bytes": run.bytes, "error": run.error,
            "rollback_of": run.rollback_of, "trigger": run.trigger}


def announcement_json(delivery: Delivery) -> dict:
    return {"id": delivery.id, "engine": delivery.engine, "status": delivery.status,
            "generation_id": delivery.generation_id, "target": delivery.target,
            "url_count": delivery.url_count, "attempts": delivery.attempts,
            "attempt_limit": delivery.attempt_limit, "http_status": delivery.http_status,
            "outcome": delivery.outcome, "created_at": isoformat(delivery.created_at),
            "next_attempt_at": isoformat(delivery.next_attempt_at),
            "last_attempt_at": isoformat(delivery.last_attempt_at),
            "finished_at": isoformat(delivery.finished_at)}


def task_json(state: dict) -> dict:
    return {"id": state["id"], "kind": state["kind"], "site": state["site"],
            "status": state["status"], "done": state["done"], "total": state["total"],
            "message": state["message"], "created_at": isoformat(state["created_at"]),
            "started_at": isoformat(state["started_at"]),
            "finished_at": isoformat(state["finished_at"])}


def _started(kind: str, site: Site, **arguments):
    session = get_session()
    task_id = tasks.start(session, current_app._get_current_object(), kind, site, **arguments)
    session.commit()
    state = tasks.read(session, task_id)
    if state["status"] == "failed":  # the queue did not take it: nothing will happen
        raise ApiError(503, state["message"], headers={"Retry-After": "30"})
    response = jsonify(task_json(state))
    response.status_code = 202
    response.headers["Location"] = url_for("api.task_get", task_id=task_id)
    return response


def _id_page(model, site: Site, render):
    """A page of a site's rows by id, newest first; the cursor is the last id shown."""
    limit = query_int("limit", 100, 1, 1000)
    query = select(model).where(model.site_id == site.id)
    if request.args.get("cursor"):
        # Ids are 32-bit columns: a larger cursor means "all of them", as it would if wider.
        query = query.where(model.id < min(query_int("cursor", 0, 0, 10 ** 18), MAX_ID))
    rows = get_session().scalars(query.order_by(model.id.desc()).limit(limit + 1)).all()
    more = len(rows) > limit
    rows = rows[:limit]
    return jsonify(items=[render(row) for row in rows],
                   next_cursor=str(rows[-1].id) if more else None)


@bp.post("/sites/<slug>/generate")
@writes
def site_generate(slug):
    site = load_site(slug)
    owner, until = site.run_owner, site.run_lease_until
    if owner and until and until > utcnow() and not gone(owner):
        raise ApiError(409, f"the site is being generated now (by {owner}); its result will be "
                       "announced, or try again when it has finished")
    return _started("regenerate", site, trigger="api")


@bp.post("/sites/<slug>/notify")
@writes
def site_notify(slug):
    return _started("notify", load_site(slug))


@bp.get("/sites/<slug>/generations")
def generations_list(slug):
    return _id_page(Generation, load_site(slug), generation_json)


@bp.get("/sites/<slug>/announcements")
def announcements_list(slug):
    return _id_page(Delivery, load_site(slug), announcement_json)


@bp.get("/tasks/<task_id>")
def task_get(task_id):
    state = tasks.read(get_session(), task_id)
    site = state and state.get("site_id") and get_session().get(Site, state["site_id"])
    if state is None or not (access().all_sites or (site is not None and access().sees(site))):
        raise ApiError(404, "there is no such task for this token (tasks are kept for 7 days)")
    return jsonify(task_json(state))
