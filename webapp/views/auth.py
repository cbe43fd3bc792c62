"""Signing in: Flask-Login sessions, a throttle on failed attempts, and roles on every route.

Roles are ordered: a viewer reads, an editor also changes sites and URLs, an admin also manages
accounts. `require(role)` guards a view; hiding a button is never the only protection.
"""

from __future__ import annotations

import functools
from datetime import datetime, timedelta

from flask import Flask, abort
from flask_login import LoginManager, UserMixin, current_user
from sqlalchemy import select
from sqlalchemy.orm import Session
from werkzeug.security import generate_password_hash

from webapp.db import get_session
from webapp.models import User
from webapp.users import verify_password

RANK = {"viewer": 0, "editor": 1, "admin": 2}
FREE_FAILURES = 5  # failures in a row before sign-in is paused for the account
MAX_LOCK = timedelta(hours=1)
# Checked when the e-mail is unknown, so an answer takes as long whether or not it exists.
_DUMMY_HASH = generate_password_hash("not a password", method="scrypt")

login_manager = LoginManager()
login_manager.login_view = "dashboard.sign_in_page"
login_manager.login_message = "Please sign in."
login_manager.session_protection = "basic"


class SignedIn(UserMixin):
    """The signed-in account as the session knows it: id, e-mail and role."""

    def __init__(self, user: User):
        self.id, self.email, self.role = user.id, user.email, user.role
        # Part of the session's id: a new password signs out every other session.
        self.token = user.password_hash[-12:]

    def get_id(self) -> str:
        return f"{self.id}:{self.token}"

    def can(self, role: str) -> bool:
        return RANK[self.role] >= RANK[role]


@login_manager.user_loader
def _load(session_id: str) -> SignedIn | None:
    user_id, _, token = session_id.partition(":")
    if not user_id.isdigit():
        return None
    user = get_session().get(User, int(user_id))
    if user is None or user.password_hash[-12:] != token:
        return None
    return SignedIn(user)


class SignInRefused(Exception):
    """Wrong e-mail or password, or the account is paused; the message says which it may say."""


def sign_in(session: Session, email: str, password: str, now: datetime) -> User:
    """The account for these credentials, or SignInRefused. Failures in a row pause the
    account for a while that doubles each time (1 minute, 2, 4, ... at most an hour)."""
    user = session.scalar(select(User).where(User.email == email.strip().lower()))
    if user is None:
        verify_password(User(password_hash=_DUMMY_HASH), password)
        raise SignInRefused("Wrong e-mail address or password.")
    if user.locked_until is not None and user.locked_until > now:
        raise SignInRefused("Too many failed sign-ins: try again after "
                            f"{user.locked_until:%H:%M:%S} UTC.")
    if not verify_password(user, password):
        user.failed_sign_ins += 1
        over = user.failed_sign_ins - FREE_FAILURES
        if over >= 0:
            user.locked_until = now + min(timedelta(minutes=2 ** over), MAX_LOCK)
        raise SignInRefused("Wrong e-mail address or password.")
    user.failed_sign_ins, user.locked_until, user.last_sign_in_at = 0, None, now
    return user


def demand(role: str) -> None:
    """403 unless the signed-in account has at least `role` (for views whose GET is open to
    viewers and whose POST is not)."""
    if not current_user.can(role):
        abort(403, f"This needs the {role} role; your account is a {current_user.role}.")


def require(role: str):
    """Guard a view: signed in, with at least `role` (403 otherwise)."""

    def decorate(view):
        @functools.wraps(view)
        def guarded(*args, **kwargs):
            if not current_user.is_authenticated:
                return login_manager.unauthorized()
            demand(role)
            return view(*args, **kwargs)

        return guarded

    return decorate


def init_app(app: Flask) -> None:
    login_manager.init_app(app)
