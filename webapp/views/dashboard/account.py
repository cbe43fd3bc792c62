"""Signing in and out, and one's own account: the dashboard's language and time zone."""

from __future__ import annotations

import re
from urllib.parse import urlsplit

from flask import current_app, flash, g, redirect, render_template, request, url_for
from flask import session as cookie_session
from flask_babel import force_locale
from flask_babel import gettext as _
from flask_login import current_user, login_user, logout_user

from webapp.db import get_session
from webapp.errors import InvalidValue, each_error
from webapp.i18n import LANGUAGE_NAMES, language_for, timezones
from webapp.models import User, utcnow
from webapp.accounts.users import end_session, set_preferences, start_session
from webapp.views.auth import SignedIn, SignInRefused, require, sign_in
from webapp.views.dashboard import bp

_UNSAFE_IN_NEXT = re.compile(r"[\x00-\x1f\x7f\\]")  # see _safe_next


def _safe_next(target: str | None) -> str:
    """Only a path on this site: never a redirect to another host. A control character
    (urlsplit drops tabs and line breaks, which would then end the Location header) or a
    backslash (a browser reads `/\\host` as `//host`) sends home instead."""
    parts = urlsplit(target or "")
    if target and not parts.scheme and not parts.netloc and target.startswith("/") \
            and not target.startswith("//") and not _UNSAFE_IN_NEXT.search(target):
        return target
    return url_for("dashboard.sites")


@bp.route("/sign-in", methods=["GET", "POST"])
def sign_in_page():
    if current_user.is_authenticated:
        return redirect(url_for("dashboard.sites"))
    error = None
    if request.method == "POST":
        session = get_session()
        try:
            user = sign_in(session, request.form.get("email", ""), request.form.get("password", ""),
                           request.remote_addr, utcnow())
        except SignInRefused as exc:
            session.rollback()  # the attempt was counted and committed already
            error = str(exc)
        else:
            secret = start_session(session, user, utcnow())
            session.commit()
            # A new cookie session: nothing of one planted before sign-in (its CSRF token,
            # known to whoever planted it) carries over to the signed-in one.
            cookie_session.clear()
            # Flask-WTF keeps the token it made for this request in g: it was the old one's.
            g.pop(current_app.config["WTF_CSRF_FIELD_NAME"], None)
            login_user(SignedIn(user, secret))  # no "remember me": the session is the row
            return redirect(_safe_next(request.args.get("next")))
    return render_template("dashboard/sign_in.html", error=error,
                           email=request.form.get("email", "")), 401 if error else 200


@bp.post("/sign-out")
@require("viewer")
def sign_out():
    session = get_session()
    end_session(session, current_user.secret)  # copies of the cookie stop working too
    session.commit()
    flash(_("Signed out."))  # in the account's language, while it is still signed in
    logout_user()
    return redirect(url_for("dashboard.sign_in_page"))


@bp.route("/account", methods=["GET", "POST"])
@require("viewer")
def account():
    """The signed-in person's own settings: the dashboard's language and time zone."""
    session = get_session()
    user = session.get(User, current_user.id)
    errors, form = {}, request.form if request.method == "POST" else {
        "language": user.language or "", "timezone": user.timezone or ""}
    if request.method == "POST":
        try:
            set_preferences(user, form.get("language", ""), form.get("timezone", ""))
        except InvalidValue as exc:
            session.rollback()
            errors = {error.field: str(error) for error in each_error(exc)}
        else:
            session.commit()
            # The next page speaks the new language: the session's copy of the account is
            # read from the database on each request.
            with force_locale(language_for(user.language)):
                flash(_("Saved your language and time zone."))
            return redirect(url_for("dashboard.account"))
    return render_template("dashboard/account.html", form=form, errors=errors,
                           languages=LANGUAGE_NAMES, timezones=timezones()), 422 if errors else 200
