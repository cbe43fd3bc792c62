"""Signing in and out."""

from __future__ import annotations

from urllib.parse import urlsplit

from flask import flash, redirect, render_template, request, url_for
from flask_login import current_user, login_user, logout_user

from webapp.db import get_session
from webapp.models import utcnow
from webapp.users import end_session, start_session
from webapp.views.auth import SignedIn, SignInRefused, require, sign_in
from webapp.views.dashboard import bp


def _safe_next(target: str | None) -> str:
    """Only a path on this site: never a redirect to another host."""
    parts = urlsplit(target or "")
    if target and not parts.scheme and not parts.netloc and target.startswith("/") \
            and not target.startswith("//"):
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
    logout_user()
    flash("Signed out.")
    return redirect(url_for("dashboard.sign_in_page"))
