"""People, their signed-in sessions and sign-in throttle, and the API's tokens."""

from __future__ import annotations

from datetime import datetime
from typing import TYPE_CHECKING

from sqlalchemy import Boolean, ForeignKey, Integer, String
from sqlalchemy.orm import Mapped, mapped_column, relationship

from webapp.db import Base, UTCDateTime
from webapp.models.common import Timestamps, utcnow

if TYPE_CHECKING:
    from webapp.models.sites import Site


class ApiToken(Base):
    """A bearer token of the JSON API: it acts for its user, on its sites, within its scope.

    Only a SHA-256 digest of the secret is kept; `prefix` is the start of the secret, shown so
    that people can tell their tokens apart.
    """

    __tablename__ = "api_tokens"

    id: Mapped[int] = mapped_column(primary_key=True)
    user_id: Mapped[int] = mapped_column(ForeignKey("users.id", ondelete="CASCADE"), index=True)
    name: Mapped[str] = mapped_column(String(100))
    prefix: Mapped[str] = mapped_column(String(16))
    secret_hash: Mapped[str] = mapped_column(String(64), unique=True)
    scope: Mapped[str] = mapped_column(String(8))  # read or write
    all_sites: Mapped[bool] = mapped_column(Boolean, default=False)
    created_at: Mapped[datetime] = mapped_column(UTCDateTime, default=utcnow)
    last_used_at: Mapped[datetime | None] = mapped_column(UTCDateTime)
    revoked_at: Mapped[datetime | None] = mapped_column(UTCDateTime)
    # The rate limit: requests counted in the window that started at window_start.
    window_start: Mapped[datetime | None] = mapped_column(UTCDateTime)
    window_count: Mapped[int] = mapped_column(Integer, default=0, server_default="0")

    user: Mapped[User] = relationship()
    sites: Mapped[list[Site]] = relationship(secondary="api_token_sites", order_by="Site.slug")

    def __repr__(self) -> str:
        return f"<ApiToken {self.id} {self.prefix}... {self.scope}>"


class ApiTokenSite(Base):
    """A site a token may act on (tokens for all sites have no rows here)."""

    __tablename__ = "api_token_sites"

    token_id: Mapped[int] = mapped_column(ForeignKey("api_tokens.id", ondelete="CASCADE"),
                                          primary_key=True)
    site_id: Mapped[int] = mapped_column(ForeignKey("sites.id", ondelete="CASCADE"),
                                         primary_key=True, index=True)

    def __repr__(self) -> str:
        return f"<ApiTokenSite token={self.token_id} site={self.site_id}>"


class User(Timestamps, Base):
    __tablename__ = "users"

    id: Mapped[int] = mapped_column(primary_key=True)
    email: Mapped[str] = mapped_column(String(254), unique=True)
    password_hash: Mapped[str] = mapped_column(String(255))
    role: Mapped[str] = mapped_column(String(16), default="viewer")
    last_sign_in_at: Mapped[datetime | None] = mapped_column(UTCDateTime)
    # How the dashboard speaks to this person: a language code ("en", "ja") and an IANA
    # timezone name; None follows the browser's Accept-Language and the server's timezone.
    language: Mapped[str | None] = mapped_column(String(16))
    timezone: Mapped[str | None] = mapped_column(String(64))

    def __repr__(self) -> str:
        return f"<User {self.id} {self.email!r} {self.role}>"


class UserSession(Base):
    """A signed-in browser. Its cookie carries a random secret of which only the SHA-256 digest
    is kept here: signing out deletes the row, and with it every copy of the cookie."""

    __tablename__ = "user_sessions"

    id: Mapped[int] = mapped_column(primary_key=True)
    user_id: Mapped[int] = mapped_column(ForeignKey("users.id", ondelete="CASCADE"), index=True)
    secret_hash: Mapped[str] = mapped_column(String(64), unique=True)
    created_at: Mapped[datetime] = mapped_column(UTCDateTime, default=utcnow)
    # Moved forward at most every few minutes; a session unseen for too long has ended.
    last_seen_at: Mapped[datetime] = mapped_column(UTCDateTime, default=utcnow)

    def __repr__(self) -> str:
        return f"<UserSession {self.id} user={self.user_id}>"


class SignInThrottle(Base):
    """Sign-in attempts in a row under one key, a client address or an (e-mail, address) pair,
    and until when that key is paused. The key is a SHA-256 digest of them, so typed e-mails
    and addresses are not kept in the clear."""

    __tablename__ = "sign_in_throttles"

    key: Mapped[str] = mapped_column(String(64), primary_key=True)
    # Counted before the password is checked, and forgotten after a success.
    attempts: Mapped[int] = mapped_column(Integer, default=0, server_default="0")
    last_attempt_at: Mapped[datetime] = mapped_column(UTCDateTime, index=True)
    locked_until: Mapped[datetime | None] = mapped_column(UTCDateTime)

    def __repr__(self) -> str:
        return f"<SignInThrottle {self.key[:8]} attempts={self.attempts}>"
