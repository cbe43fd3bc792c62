"""API tokens: each account makes and revokes its own; admins see and revoke everyone's."""

from __future__ import annotations

from flask import abort, flash, redirect, render_template, request, url_for
from flask_babel import gettext as _
from flask_babel import lazy_gettext as _l
from flask_login import current_user
from sqlalchemy import select
from werkzeug.datastructures import MultiDict

from webapp.db import get_session
from webapp.errors import InvalidValue, each_error
from webapp.models import ApiToken, Site, User, utcnow
from webapp.accounts.tokens import SCOPES, create_token, list_tokens, revoke
from webapp.views.auth import require
from webapp.views.dashboard import bp
from webapp.views.http import id_of


def _page(errors: dict, form, secret: str | None = None, status: int = 200):
    session = get_session()
    owner = None if current_user.can("admin") else session.get(User, current_user.id)
    return render_template("dashboard/tokens.html", tokens=list_tokens(session, owner),
                           sites=session.scalars(select(Site).order_by(Site.name)).all(),
                           scopes=SCOPES, errors=errors, form=form, secret=secret), status


@bp.get("/tokens")
@require("viewer")
def tokens():
    return _page({}, MultiDict())


@bp.post("/tokens")
@require("viewer")
def token_create():
    session = get_session()
    form = request.form
    chosen = None
    try:
        if form.get("all_sites") != "on":
            chosen = _chosen_sites(form.getlist("sites"))
        token, secret = create_token(session, session.get(User, current_user.id),
                                     form.get("name", ""), form.get("scope", ""), chosen)
    except InvalidValue as exc:
        session.rollback()
        return _page({error.field: str(error) for error in each_error(exc)}, form, status=422)
    session.commit()
    # Shown in this answer only: never in a flash message, which travels in the cookie.
    return _page({}, MultiDict(), secret=secret, status=201)


def _chosen_sites(values: list[str]) -> list[Site]:
    """The sites the form's `sites` boxes name; InvalidValue for a value that names none (a
    site deleted since the page was shown, or a made-up value)."""
    ids = {id_of(value) for value in values} - {None}
    chosen = get_session().scalars(select(Site).where(Site.id.in_(ids))).all() if ids else []
    found = {str(site.id) for site in chosen}
    unknown = [value for value in values if value not in found]
    if unknown:
        raise InvalidValue("sites", unknown[0][:40], _l(
            "is not one of the sites: choose them from the list"))
    return chosen


@bp.post("/tokens/<id:token_id>/revoke")
@require("viewer")
def token_revoke(token_id):
    session = get_session()
    token = session.get(ApiToken, token_id)
    if token is None or not (token.user_id == current_user.id or current_user.can("admin")):
        abort(404, _("There is no such token."))
    revoke(token, utcnow())
    session.commit()
    flash(_("Revoked token %(prefix)s… (%(name)s); requests with it are refused now.",
            prefix=token.prefix, name=token.name))
    return redirect(url_for("dashboard.tokens"))
