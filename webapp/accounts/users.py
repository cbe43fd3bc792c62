"""Accounts: creating them, checking passwords, their signed-in sessions, and making sure an
admin exists."""

from __future__ import annotations

import functools
import hashlib
import re
import secrets
from datetime import datetime, timedelta
from pathlib import Path

from flask_babel import lazy_gettext as _l
from sqlalchemy import delete, or_, select, update
from sqlalchemy.orm import Session
from werkzeug.security import check_password_hash, generate_password_hash

from webapp.errors import InvalidValue, NotFound, check_storable, collect, raise_all, unstorable
from webapp.i18n import LANGUAGES, timezones
from webapp.models import User, UserSession

ROLES = ("admin", "editor", "viewer")
MIN_PASSWORD_LENGTH = 12
DEFAULT_ADMIN_EMAIL = "admin@localhost"
_EMAIL = re.compile(r"[^@\s]+@[^@\s]+")
# Most frequent first; where it comes from is said at the top of the file.
COMMON_PASSWORDS_FILE = Path(__file__).with_name("common_passwords.txt")
# Digits, punctuation and spaces at either end: "Sunshine2024!" is "sunshine" with them added.
MIN_DISTINCT_CHARACTERS = 5  # aaaaaaaaaaaa and 121212121212 are long, not strong
_PADDING = re.compile(r"^[\W\d_]+|[\W\d_]+$")
# A rule's English is the API's `rule`; a page says it in the reader's language (errors.py).
_ADVICE = _l("choose another (a few unrelated words make a good one)")

# A session ends after this long without a request, and this long after sign-in in any case.
SESSION_IDLE = timedelta(hours=12)
SESSION_LIFETIME = timedelta(days=7)
# last_seen_at is moved at most this often, so reading pages does not mean a write each time.
SESSION_TOUCH = timedelta(minutes=5)


@functools.cache
def common_passwords() -> frozenset[str]:
    """The shipped list of common passwords, lower-cased; read from its file once."""
    lines = COMMON_PASSWORDS_FILE.read_text(encoding="utf-8").splitlines()
    return frozenset(line for line in lines if line and not line.startswith("#"))


def _check_password(password: str) -> str:
    masked = "*" * len(password)  # a password is never shown, not even in part
    if unstorable(password):
        raise InvalidValue("password", masked, unstorable(password))
    if len(password) < MIN_PASSWORD_LENGTH:
        raise InvalidValue("password", masked, _l("must be at least %(n)d characters",
                                                  n=MIN_PASSWORD_LENGTH))
    folded = password.lower()
    if folded in common_passwords():
        raise InvalidValue("password", masked, _l("is a common password: %(advice)s",
                                                  advice=_ADVICE))
    core = _PADDING.sub("", folded)
    if core in common_passwords():
        raise InvalidValue("password", masked, _l(
            "is a common password with digits or symbols added: %(advice)s", advice=_ADVICE))
    if not core or len(set(password)) < MIN_DISTINCT_CHARACTERS:
        raise InvalidValue("password", masked, _l(
            "must not be only digits, symbols or spaces, and must use at least %(n)d different "
            "characters: %(advice)s", n=MIN_DISTINCT_CHARACTERS, advice=_ADVICE))
    return password


def _check_language(language: str) -> str | None:
    if not language:
        return None  # as the browser says (Accept-Language)
    if language not in LANGUAGES:
        raise InvalidValue("language", language, _l(
            "must be one of %(languages)s, or empty to follow the browser",
            languages=", ".join(LANGUAGES)))
    return language


def _check_timezone(timezone: str) -> str | None:
    if not timezone:
        return None  # the server's default (UTC)
    if timezone not in timezones():
        raise InvalidValue("timezone", timezone, _l(
            "must be an IANA time zone name such as Asia/Tokyo or Europe/Paris"))
    return timezone


def set_preferences(user: User, language: str, timezone: str) -> None:
    """How the dashboard speaks to this person: a language of the dashboard's or "" (the
    browser's), an IANA time zone or "" (UTC). Every bad value is named at once; nothing is
    changed unless both are right."""
    errors: list[InvalidValue] = []
    chosen = (collect(errors, _check_language, (language or "").strip()),
              collect(errors, _check_timezone, (timezone or "").strip()))
    raise_all(errors)
    user.language, user.timezone = chosen


def create_user(session: Session, email: str, password: str, role: str = "viewer") -> User:
    """A new account; the password is stored only as a scrypt hash. Every field that breaks
    a rule is named at once."""
    errors: list[InvalidValue] = []
    email = collect(errors, _check_new_email, session, email)
    collect(errors, _check_role, role)
    password = collect(errors, _check_password, password)
    raise_all(errors)
    user = User(email=email, role=role,
                password_hash=generate_password_hash(password, method="scrypt"))
    session.add(user)
    session.flush()
    return user


def _check_new_email(session: Session, email: str) -> str:
    email = check_storable("email", email).strip().lower()
    if not _EMAIL.fullmatch(email) or len(email) > 254:
        raise InvalidValue("email", email,
                           _l("must be an e-mail address such as ann@example.com"))
    if session.scalar(select(User.id).where(User.email == email)) is not None:
        raise InvalidValue("email", email, _l("already has an account"))
    return email


def _check_role(role: str) -> str:
    if role not in ROLES:
        raise InvalidValue("role", role, _l("must be one of %(roles)s", roles=", ".join(ROLES)))
    return role


def find_user(session: Session, email: str) -> User:
    """The account with this e-mail address, or NotFound."""
    user = None if unstorable(email) else \
        session.scalar(select(User).where(User.email == email.strip().lower()))
    if user is None:
        raise NotFound(f"no account for {email!r}")
    return user


def set_password(session: Session, user: User, password: str) -> None:
    """Give `user` a new password and end every session of theirs: whoever knew the old one
    is signed out."""
    user.password_hash = generate_password_hash(_check_password(password), method="scrypt")
    session.execute(delete(UserSession).where(UserSession.user_id == user.id))


def verify_password(user: User, password: str) -> bool:
    """Whether `password` is the account's (one scrypt computation, right or wrong)."""
    return check_password_hash(user.password_hash, password)


def _digest(secret: str) -> str:
    # The secret has 256 random bits: a fast digest is enough, and finds the row by index.
    return hashlib.sha256(secret.encode("utf-8", "surrogatepass")).hexdigest()


def start_session(session: Session, user: User, now: datetime) -> str:
    """A new signed-in session of `user`: its secret, for the cookie (only a digest is kept).
    Sessions of anyone that have ended are cleared away on the way."""
    session.execute(delete(UserSession).where(or_(
        UserSession.last_seen_at <= now - SESSION_IDLE,
        UserSession.created_at <= now - SESSION_LIFETIME)))
    secret = secrets.token_urlsafe(32)
    session.add(UserSession(user_id=user.id, secret_hash=_digest(secret), created_at=now,
                            last_seen_at=now))
    return secret


def live_session(session: Session, secret: str, now: datetime) -> tuple[UserSession, User] | None:
    """The session with this secret and its account, or None when there is none or it ended."""
    found = session.execute(select(UserSession, User).join(User, User.id == UserSession.user_id)
                            .where(UserSession.secret_hash == _digest(secret))).first()
    if found is None:
        return None
    row, user = found
    if row.last_seen_at <= now - SESSION_IDLE or row.created_at <= now - SESSION_LIFETIME:
        return None
    return row, user


def touch_session(session: Session, session_id: int, now: datetime) -> None:
    """Record that the session was used just now (it then lives SESSION_IDLE longer)."""
    session.execute(update(UserSession).where(UserSession.id == session_id)
                    .values(last_seen_at=now).execution_options(synchronize_session=False))


def end_session(session: Session, secret: str) -> None:
    """Sign this session out on the server: its cookie, and every copy of it, stops working."""
    session.execute(delete(UserSession).where(UserSession.secret_hash == _digest(secret)))


def ensure_admin(session: Session) -> tuple[User, str | None]:
    """The first admin account; when one is created, its generated password is returned once."""
    admin = session.scalar(select(User).where(User.role == "admin").order_by(User.id).limit(1))
    if admin is not None:
        return admin, None
    password = secrets.token_urlsafe(12)
    return create_user(session, DEFAULT_ADMIN_EMAIL, password, role="admin"), password
