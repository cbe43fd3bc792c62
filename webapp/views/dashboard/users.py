"""Accounts, managed by admins."""

from __future__ import annotations

from flask import abort, flash, redirect, render_template, request, url_for
from flask_babel import gettext as _
from flask_babel import lazy_gettext as _l
from flask_login import current_user
from sqlalchemy import func, select

from webapp.db import get_session
from webapp.errors import InvalidValue, each_error
from webapp.models import User
from webapp.accounts.users import ROLES, create_user, set_password
from webapp.views.auth import require
from webapp.views.dashboard import bp
from webapp.views.dashboard.labels import role_name


@bp.get("/users")
@require("admin")
def users():
    accounts = get_session().scalars(select(User).order_by(User.email)).all()
    return render_template("dashboard/users.html", accounts=accounts, roles=ROLES, errors={},
                           form={})


@bp.post("/users")
@require("admin")
def user_create():
    session = get_session()
    form = request.form
    try:
        user = create_user(session, form.get("email", ""), form.get("password", ""),
                           form.get("role", "viewer"))
    except InvalidValue as exc:
        session.rollback()
        accounts = session.scalars(select(User).order_by(User.email)).all()
        return render_template("dashboard/users.html", accounts=accounts, roles=ROLES,
                               errors={error.field: str(error) for error in each_error(exc)},
                               form=form), 422
    session.commit()
    flash(_("Created %(email)s (%(role)s).", email=user.email, role=role_name(user.role)))
    return redirect(url_for("dashboard.users"))


def _account(user_id: int) -> User:
    user = get_session().get(User, user_id)
    if user is None:
        abort(404, _("There is no such account."))
    return user


def _admins_left(session, without: User) -> int:
    return session.scalar(select(func.count()).select_from(User).where(
        User.role == "admin", User.id != without.id)) or 0


@bp.post("/users/<id:user_id>")
@require("admin")
def user_update(user_id):
    session = get_session()
    user = _account(user_id)
    role, password = request.form.get("role"), request.form.get("password", "")
    try:
        if role and role != user.role:
            if role not in ROLES:
                raise InvalidValue("role", role, _l("must be one of %(roles)s",
                                                    roles=", ".join(ROLES)))
            if user.role == "admin" and not _admins_left(session, user):
                raise InvalidValue("role", role, _l("the last admin cannot stop being one"))
            user.role = role
        if password:
            set_password(session, user, password)
    except InvalidValue as exc:
        session.rollback()
        flash(_("%(email)s: %(error)s", email=user.email, error=exc))
    else:
        session.commit()
        flash(_("Saved %(email)s.", email=user.email))
    return redirect(url_for("dashboard.users"))


@bp.post("/users/<id:user_id>/delete")
@require("admin")
def user_delete(user_id):
    session = get_session()
    user = _account(user_id)
    if user.id == current_user.id:
        flash(_("You cannot delete your own account."))
    elif user.role == "admin" and not _admins_left(session, user):
        flash(_("The last admin cannot be deleted."))
    else:
        session.delete(user)
        session.commit()
        flash(_("Deleted %(email)s.", email=user.email))
    return redirect(url_for("dashboard.users"))
