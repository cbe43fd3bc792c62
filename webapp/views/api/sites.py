"""Sites over the API: list, get, create, update."""

from __future__ import annotations

from flask import jsonify, request, url_for
from sqlalchemy import select

from webapp.db import get_session
from webapp.models import ApiTokenSite, Generation, Site
from webapp.sites.listing import latest_runs
from webapp.sites import SETTINGS as TEXT_SETTINGS
from webapp.sites import create_site, update_site
from webapp.views.api import (
    ApiError,
    access,
    bp,
    decode_cursor,
    encode_cursor,
    isoformat,
    json_body,
    load_site,
    query_int,
    writes,
)
from webapp.views.api.runs import generation_json
from webapp.views.api.spec import SETTINGS


def site_json(site: Site, runs: dict[int, Generation] | None = None) -> dict:
    """A site as the API shows it; `runs` holds the newest run of the sites of a page (looked
    up for this site alone when not given)."""
    if runs is None:
        runs = latest_runs(get_session(), [site.id])
    last = runs.get(site.id)
    settings = {name: getattr(site, name) for name in SETTINGS}
    settings["ping_urls"] = (site.ping_urls or "").split("\n") if site.ping_urls else []
    settings["exclude"] = site.exclude.split("\n") if site.exclude else []
    settings["sections"] = site.sections.split("\n") if site.sections else []
    return {**settings, "url_count": site.url_count, "change_seq": site.change_seq,
            "generated_seq": site.generated_seq, "next_run_at": isoformat(site.next_run_at),
            "last_generation": generation_json(last) if last else None,
            "created_at": isoformat(site.created_at), "updated_at": isoformat(site.updated_at)}


def _as_text(body: dict) -> dict[str, str | list[str]]:
    """JSON values in the text form the settings' rules read (the form `sites set` takes);
    ping_urls, exclude and sections stay lists, since a template may hold a comma and a rule
    a `\\n`."""
    return {name: (value or []) if name in ("ping_urls", "exclude", "sections")
            else TEXT_SETTINGS[name][1](value) for name, value in body.items()}


@bp.get("/sites")
def sites_list():
    """A page of the sites the token sees, in slug order; the cursor is the last slug shown.
    Two queries a page whatever its size: the sites, then their newest runs."""
    limit = query_int("limit", 100, 1, 1000)
    query = select(Site)
    if not access().all_sites:  # in SQL, so that every page but the last is full
        query = query.where(Site.id.in_(select(ApiTokenSite.site_id).where(
            ApiTokenSite.token_id == access().token_id)))
    if request.args.get("cursor"):
        query = query.where(Site.slug > decode_cursor(request.args["cursor"]))
    session = get_session()
    rows = session.scalars(query.order_by(Site.slug).limit(limit + 1)).all()
    more = len(rows) > limit
    rows = rows[:limit]
    runs = latest_runs(session, [site.id for site in rows])
    return jsonify(items=[site_json(site, runs) for site in rows],
                   next_cursor=encode_cursor(rows[-1].slug) if more else None)


@bp.post("/sites")
@writes
def site_create():
    body = json_body("SiteCreate")
    if not access().all_sites:
        raise ApiError(403, "creating a site needs a token for all sites; this one is limited "
                       "to some sites")
    session = get_session()
    changes = _as_text(body)
    site, _ = create_site(session, changes.pop("name"), changes.pop("base_url"),
                          changes.pop("sitemap_url", None), changes.pop("encoding", "utf-8"),
                          settings=changes, operator=access().operator)
    session.commit()
    response = jsonify(site_json(site))
    response.status_code = 201
    response.headers["Location"] = url_for("api.site_get", slug=site.slug)
    return response


@bp.get("/sites/<slug>")
def site_get(slug):
    return jsonify(site_json(load_site(slug)))


@bp.patch("/sites/<slug>")
@writes
def site_update(slug):
    site = load_site(slug)
    body = json_body("SiteUpdate")
    moved = sorted({"base_url", "sitemap_url"} & set(body))
    if moved and not access().all_sites:
        # Else a token for one site could claim another site's host, its robots.txt and key file.
        raise ApiError(403, f"changing {moved[0]} needs a token for all sites; this one is "
                       "limited to some sites", [{"field": moved[0], "rule": "needs a token for "
                                                  "all sites", "message": f"{moved[0]}: needs a "
                                                  "token for all sites"}])
    session = get_session()
    update_site(session, site, _as_text(body), operator=access().operator)
    session.commit()
    return jsonify(site_json(site))
