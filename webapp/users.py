"""Accounts: creating them, checking passwords, and making sure an admin exists."""

from __future__ import annotations

import re
import secrets

from sqlalchemy import select
from sqlalchemy.orm import Session
from werkzeug.security import check_password_hash, generate_password_hash

from webapp.errors import InvalidValue, NotFound, check_storable, unstorable
from webapp.models import User

ROLES = ("admin", "editor", "viewer")
MIN_PASSWORD_LENGTH = 8
DEFAULT_ADMIN_EMAIL = "admin@localhost"
_EMAIL = re.compile(r"[^@\s]+@[^@\s]+")


def _check_password(password: str) -> str:
    if unstorable(password):  # never shown, not even in part
        raise InvalidValue("password", "*" * len(password), unstorable(password))
    if len(password) < MIN_PASSWORD_LENGTH:
        raise InvalidValue("password", "*" * len(password),
                           f"must be at least {MIN_PASSWORD_LENGTH} characters")
    return password


def create_user(session: Session, email: str, password: str, role: str = "viewer") -> User:
    """A new account; the password is stored only as a scrypt hash."""
    email = check_storable("email", email).strip().lower()
    if not _EMAIL.fullmatch(email) or len(email) > 254:
        raise InvalidValue("email", email, "must be an e-mail address such as ann@example.com")
    if role not in ROLES:
        raise InvalidValue("role", role, f"must be one of {', '.join(ROLES)}")
    if session.scalar(select(User.id).where(User.email == email)) is not None:
        raise InvalidValue("email", email, "already has an account")
    user = User(email=email, role=role,
                password_hash=generate_password_hash(_check_password(password), method="scrypt"))
    session.add(user)
    session.flush()
    return user


def find_user(session: Session, email: str) -> User:
    user = None if unstorable(email) else \
        session.scalar(select(User).where(User.email == email.strip().lower()))
    if user is None:
        raise NotFound(f"no account for {email!r}")
    return user


def set_password(user: User, password: str) -> None:
    user.password_hash = generate_password_hash(_check_password(password), method="scrypt")


def verify_password(user: User, password: str) -> bool:
    return check_password_hash(user.password_hash, password)


def ensure_admin(session: Session) -> tuple[User, str | None]:
    """The first admin account; when one is created, its generated password is returned once."""
    admin = session.scalar(select(User).where(User.role == "admin").order_by(User.id).limit(1))
    if admin is not None:
        return admin, None
    password = secrets.token_urlsafe(12)
    return create_user(session, DEFAULT_ADMIN_EMAIL, password, role="admin"), password
