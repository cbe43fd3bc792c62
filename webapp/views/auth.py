"""Signing in: server-side sessions, a throttle on attempts, and roles on every route.

Roles are ordered: a viewer reads, an editor also changes sites and URLs, an admin also manages
accounts. `require(role)` guards a view; hiding a button is never the only protection.

The session cookie carries only the random secret of a `user_sessions` row; every request
checks that the row exists and has not ended, and signing out deletes it. Attempts to sign in
are counted per client address and per (e-mail, address), whether or not the e-mail has an
account, and every refusal gives one answer after one password hash check: nothing tells an
account that exists from one that does not, and a stranger pauses only their own address.
"""

from __future__ import annotations

import functools
import hashlib
import ipaddress
from datetime import datetime, timedelta

from flask import Flask, abort
from flask_babel import gettext as _
from flask_babel import lazy_gettext as _l
from flask_login import LoginManager, UserMixin, current_user
from sqlalchemy import case, delete, or_, select, update
from sqlalchemy.dialects import postgresql, sqlite
from sqlalchemy.orm import Session
from werkzeug.security import generate_password_hash

from webapp.db import get_session, session_scope
from webapp.errors import unstorable
from webapp.models import SignInThrottle, User, utcnow
from webapp.accounts.users import SESSION_TOUCH, live_session, touch_session, verify_password

RANK = {"viewer": 0, "editor": 1, "admin": 2}
ACCOUNT_FREE_FAILURES = 5  # attempts in a row at one e-mail from one address before a pause
ADDRESS_FREE_FAILURES = 20  # attempts in a row from one address, at any e-mails
MAX_LOCK = timedelta(hours=1)  # pauses double from 1 minute up to this
FORGET_AFTER = timedelta(days=1)  # a key quiet this long starts counting again
REFUSED = _l("Wrong e-mail address or password, or too many failed sign-ins: check both and "
             "try again in a few minutes.")

@functools.cache
def _dummy_hash() -> str:
    """Checked when the e-mail is unknown: made like every stored hash, so it costs the same.
    Made on the first sign-in, not at import: scrypt takes 32 MB and a tenth of a second,
    which every CLI command and worker would pay for nothing."""
    return generate_password_hash("not a password", method="scrypt")


login_manager = LoginManager()
login_manager.login_view = "dashboard.sign_in_page"
login_manager.login_message = _l("Please sign in.")
login_manager.localize_callback = str  # flashed in the request's language, as plain text
login_manager.session_protection = "basic"


class SignedIn(UserMixin):
    """The signed-in account as the session knows it: id, e-mail, role and the session's secret."""

    def __init__(self, user: User, secret: str):
        self.id, self.email, self.role = user.id, user.email, user.role
        self.language, self.timezone = user.language, user.timezone
        self.secret = secret

    def get_id(self) -> str:
        return self.secret  # what the cookie carries: no account id, nothing of the password

    def can(self, role: str) -> bool:
        return RANK[self.role] >= RANK[role]


@login_manager.user_loader
def _load(secret: str) -> SignedIn | None:
    now = utcnow()
    found = live_session(get_session(), secret, now)
    if found is None:
        return None
    row, user = found
    if now - row.last_seen_at >= SESSION_TOUCH:
        # Its own transaction: a page that only reads commits nothing of the request's.
        with session_scope() as own:
            touch_session(own, row.id, now)
    return SignedIn(user, secret)


class SignInRefused(Exception):
    """Wrong e-mail or password, or a pause: one message for all, so none gives anything away."""


def client_network(address: str | None) -> str:
    """Where an attempt comes from, as the throttle counts it: the client address, or its /64
    for IPv6 (one host is usually given the whole /64)."""
    try:
        ip = ipaddress.ip_address(address or "")
    except ValueError:
        return (address or "unknown")[:100]
    if ip.version == 6 and ip.ipv4_mapped is not None:
        return str(ip.ipv4_mapped)
    if ip.version == 6:
        return str(ipaddress.ip_network(f"{ip}/64", strict=False))
    return str(ip)


def _key(*parts: str) -> str:
    return hashlib.sha256("\n".join(parts).encode("utf-8", "surrogatepass")).hexdigest()


def _pause(attempts: int, free: int) -> timedelta:
    return min(timedelta(minutes=2 ** min(attempts - free, 10)), MAX_LOCK)


def _count_attempt(session: Session, key: str, free: int, now: datetime) -> bool:
    """Count an attempt under `key` before its password is checked; False if the key is paused.
    The `free`-th attempt in a row pauses the key (1 minute, then doubling up to MAX_LOCK)
    until a success clears it. One conditional UPDATE counts, so attempts sent side by side
    are counted one by one and none slips past a pause that another has just set."""
    insert = postgresql.insert if session.get_bind().dialect.name == "postgresql" else sqlite.insert
    session.execute(insert(SignInThrottle).values(key=key, attempts=0, last_attempt_at=now)
                    .on_conflict_do_nothing(index_elements=["key"]))
    throttle = SignInThrottle
    stale = throttle.last_attempt_at <= now - FORGET_AFTER
    attempts = session.scalar(
        update(throttle).where(throttle.key == key, or_(throttle.locked_until.is_(None),
                                                        throttle.locked_until <= now))
        .values(attempts=case((stale, 1), else_=throttle.attempts + 1), last_attempt_at=now)
        .returning(throttle.attempts).execution_options(synchronize_session=False))
    if attempts is None:
        return False
    if attempts >= free:
        session.execute(update(throttle).where(throttle.key == key)
                        .values(locked_until=now + _pause(attempts, free))
                        .execution_options(synchronize_session=False))
    return True


def _forget_quiet_keys(session: Session, now: datetime, batch: int = 100) -> None:
    # A few at a time, and on PostgreSQL only rows no attempt holds: two attempts purging at
    # once never wait for each other's rows (which could deadlock).
    quiet = select(SignInThrottle.key).where(SignInThrottle.last_attempt_at <= now - FORGET_AFTER) \
        .limit(batch).with_for_update(skip_locked=True)
    session.execute(delete(SignInThrottle).where(SignInThrottle.key.in_(quiet.scalar_subquery()))
                    .execution_options(synchronize_session=False))


def sign_in(session: Session, email: str, password: str, address: str | None,
            now: datetime) -> User:
    """The account for these credentials from this client address, or SignInRefused.

    The attempt is counted and committed before the password is checked: it stays counted
    whatever happens next, and no lock is held during the slow hash. Every attempt then does
    one password hash check, whether the e-mail is unknown, paused or right.
    """
    email, where = email.strip().lower(), client_network(address)
    keys = [_key("address", where), _key("account", where, email)]
    allowed = _count_attempt(session, keys[0], ADDRESS_FREE_FAILURES, now) \
        and _count_attempt(session, keys[1], ACCOUNT_FREE_FAILURES, now)
    _forget_quiet_keys(session, now)
    session.commit()
    user = None if unstorable(email) else session.scalar(select(User).where(User.email == email))
    right = verify_password(user or User(password_hash=_dummy_hash()), password)
    if not (allowed and right and user is not None):
        raise SignInRefused(REFUSED)
    # A success clears the e-mail's count at this address, and takes back its own attempt from
    # the address's count: failures there still add up, so one good account of one's own does
    # not reset a spray of guesses at others.
    session.execute(delete(SignInThrottle).where(SignInThrottle.key == keys[1]))
    session.execute(update(SignInThrottle).where(SignInThrottle.key == keys[0])
                    .values(attempts=case((SignInThrottle.attempts > 0,
                                           SignInThrottle.attempts - 1), else_=0))
                    .execution_options(synchronize_session=False))
    user.last_sign_in_at = now
    return user


def demand(role: str) -> None:
    """403 unless the signed-in account has at least `role` (for views whose GET is open to
    viewers and whose POST is not)."""
    if not current_user.can(role):
        abort(403, _("This needs the %(role)s role; your account is a %(yours)s.",
                     role=_(role), yours=_(current_user.role)))


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
    """Attach Flask-Login, whose cookie names a server-side session."""
    login_manager.init_app(app)
