"""Bearer tokens of the JSON API: made, checked, counted against the rate limit, revoked.

A token is a random secret shown once. Only its SHA-256 digest is stored: the secret has 256
bits of entropy, so a fast digest is as safe as a password hash here and lets a request find
its token with one indexed lookup. A token acts for its user, never beyond the user's role:
a write token of an account later made a viewer can only read.
"""

from __future__ import annotations

import hashlib
import secrets
from dataclasses import dataclass
from datetime import datetime, timedelta

from flask_babel import lazy_gettext as _l
from sqlalchemy import case, literal, select, update
from sqlalchemy.orm import Session, selectinload

from webapp.errors import InvalidValue, NotFound, check_storable, collect, raise_all
from webapp.models import ApiToken, Site, User

SCOPES = ("read", "write")
SECRET_PREFIX = "smd_"
RATE_WINDOW = timedelta(minutes=1)
_RANK = {"viewer": 0, "editor": 1, "admin": 2}


def digest(secret: str) -> str:
    return hashlib.sha256(secret.encode()).hexdigest()


def create_token(session: Session, user: User, name: str, scope: str,
                 sites: list[Site] | None) -> tuple[ApiToken, str]:
    """A new token for `user` on `sites` (None: every site, present and future); its secret is
    returned here once and never again. Every field that breaks a rule is named at once."""
    errors: list[InvalidValue] = []
    name = collect(errors, _check_name, name)
    collect(errors, _check_scope, user, scope)
    if sites is not None and not sites:
        errors.append(InvalidValue("sites", "", _l("name at least one site, or choose all sites")))
    raise_all(errors)
    secret = SECRET_PREFIX + secrets.token_urlsafe(32)
    token = ApiToken(user_id=user.id, name=name, scope=scope, all_sites=sites is None,
                     prefix=secret[:len(SECRET_PREFIX) + 6], secret_hash=digest(secret),
                     sites=list(sites or []))
    session.add(token)
    session.flush()
    return token, secret


def _check_name(name: str) -> str:
    name = check_storable("name", name).strip()
    if not name or len(name) > 100:
        raise InvalidValue("name", name, _l("must be 1 to 100 characters"))
    return name


def _check_scope(user: User, scope: str) -> str:
    if scope not in SCOPES:
        raise InvalidValue("scope", scope, _l("must be read or write"))
    if scope == "write" and _RANK[user.role] < _RANK["editor"]:
        raise InvalidValue("scope", scope, _l(
            "%(email)s is a viewer: a write token needs an editor or admin account",
            email=user.email))
    return scope


def list_tokens(session: Session, user: User | None = None) -> list[ApiToken]:
    """Every token, or those of `user`; newest first."""
    query = select(ApiToken).options(selectinload(ApiToken.sites), selectinload(ApiToken.user))
    if user is not None:
        query = query.where(ApiToken.user_id == user.id)
    return list(session.scalars(query.order_by(ApiToken.id.desc())))


def find_token(session: Session, token_id: int) -> ApiToken:
    token = session.get(ApiToken, token_id)
    if token is None:
        raise NotFound(f"no token with id {token_id}")
    return token


def revoke(token: ApiToken, now: datetime) -> None:
    """From now on the token is refused; the row stays, so its use remains on record."""
    if token.revoked_at is None:
        token.revoked_at = now


@dataclass(frozen=True)
class Access:
    """What the token of a request may do."""

    token_id: int
    user_email: str
    can_write: bool
    all_sites: bool
    site_ids: frozenset[int]
    operator: bool  # an admin's write token for all sites: may change operator settings
    limit: int
    remaining: int
    reset_at: datetime

    def sees(self, site: Site) -> bool:
        return self.all_sites or site.id in self.site_ids


class Refused(Exception):
    """The request cannot be served for its token: 401 (no valid token) or 429 (over the limit)."""

    def __init__(self, status: int, message: str, retry_after: int | None = None,
                 headers: dict[str, str] | None = None):
        super().__init__(message)
        self.status, self.retry_after, self.headers = status, retry_after, headers or {}


def rate_headers(limit: int, remaining: int, reset_at: datetime) -> dict[str, str]:
    """What a client needs to pace itself: the limit, what is left, when the window restarts."""
    return {"X-RateLimit-Limit": str(limit), "X-RateLimit-Remaining": str(remaining),
            "X-RateLimit-Reset": str(int(reset_at.timestamp()))}


def authenticate(session: Session, header: str | None, now: datetime, limit: int) -> Access:
    """Check the Authorization header, record the use and count it against the token's limit
    of `limit` requests a minute. Commits, so a request that fails later is still counted."""
    scheme, _, secret = (header or "").partition(" ")
    if scheme.lower() != "bearer" or not secret.strip():
        raise Refused(401, "send the token as `Authorization: Bearer <token>`")
    token = session.scalar(select(ApiToken).where(ApiToken.secret_hash == digest(secret.strip()))
                           .options(selectinload(ApiToken.user), selectinload(ApiToken.sites)))
    if token is None:
        raise Refused(401, "the token is not valid")
    if token.revoked_at is not None:
        raise Refused(401, f"the token was revoked at {token.revoked_at:%Y-%m-%d %H:%M} UTC")
    # One UPDATE counts the request and records the use; it is atomic, so workers of several
    # processes share one count. A window older than a minute starts again at one.
    fresh = (ApiToken.window_start.is_(None)) | (ApiToken.window_start <= now - RATE_WINDOW)
    count, started = session.execute(
        update(ApiToken).where(ApiToken.id == token.id).values(
            last_used_at=now,
            window_start=case((fresh, literal(now, ApiToken.window_start.type)),
                              else_=ApiToken.window_start),
            window_count=case((fresh, 1), else_=ApiToken.window_count + 1),
        ).returning(ApiToken.window_count, ApiToken.window_start)
        .execution_options(synchronize_session=False)).one()
    session.commit()
    reset_at = started + RATE_WINDOW
    if count > limit:
        wait = max(1, int((reset_at - now).total_seconds() + 0.999))
        raise Refused(429, f"the token made more than {limit} requests in a minute; try again "
                      f"in {wait} s", retry_after=wait, headers=rate_headers(limit, 0, reset_at))
    return Access(token_id=token.id, user_email=token.user.email,
                  can_write=token.scope == "write" and _RANK[token.user.role] >= _RANK["editor"],
                  all_sites=token.all_sites, site_ids=frozenset(s.id for s in token.sites),
                  operator=token.scope == "write" and token.all_sites
                  and token.user.role == "admin",
                  limit=limit, remaining=max(0, limit - count), reset_at=reset_at)
