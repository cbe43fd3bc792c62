"""What every model shares: column limits, the time and key defaults, and timestamps."""

from __future__ import annotations

import uuid
from datetime import UTC, datetime

from sqlalchemy import func
from sqlalchemy.orm import Mapped, mapped_column

from webapp.db import UTCDateTime

# Percent of each page of `sites` filled by inserts on PostgreSQL (see Site).
SITES_FILLFACTOR = 70

# The protocol caps a loc at 2,048 characters; IndexNow and Search Console share that ceiling.
URL_LENGTH = 2048

# The largest id a row has: every id column is an integer, 32 bits on PostgreSQL, which refuses
# a larger value in a query (an error, not "no such row").
MAX_ID = 2**31 - 1


def utcnow() -> datetime:
    return datetime.now(UTC)


def new_storage_key() -> str:
    return uuid.uuid4().hex


def new_indexnow_key() -> str:
    """32 lower-case hex characters: valid under both readings of the IndexNow key rules."""
    return uuid.uuid4().hex


class Timestamps:
    # Set by the database, so bulk inserts and updates pay nothing per row for them.
    created_at: Mapped[datetime] = mapped_column(UTCDateTime, server_default=func.now())
    updated_at: Mapped[datetime] = mapped_column(UTCDateTime, server_default=func.now(),
                                                 onupdate=func.now())

