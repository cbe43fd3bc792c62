"""What announcing a site's changes keeps: cursors, deliveries, dismissed warnings, and
the Search Console service accounts, sealed."""

from __future__ import annotations

from datetime import datetime

from sqlalchemy import JSON, BigInteger, ForeignKey, Index, Integer, String, Text, text
from sqlalchemy.orm import Mapped, mapped_column

from webapp.db import Base, UTCDateTime
from webapp.models.common import utcnow


class NotifyCursor(Base):
    """How far a site's changes have been handed to an engine: every change up to `position` is
    in a delivery record. A change_seq for IndexNow, a generation id for sitemap submissions."""

    __tablename__ = "notify_cursors"

    site_id: Mapped[int] = mapped_column(ForeignKey("sites.id", ondelete="CASCADE"),
                                         primary_key=True)
    engine: Mapped[str] = mapped_column(String(16), primary_key=True)
    position: Mapped[int] = mapped_column(BigInteger, default=0)

    def __repr__(self) -> str:
        return f"<NotifyCursor site={self.site_id} {self.engine} at {self.position}>"


class Delivery(Base):
    """One announcement to one engine, and how each attempt to deliver it went."""

    __tablename__ = "deliveries"
    __table_args__ = (
        Index("ix_deliveries_status_next_attempt_at", "status", "next_attempt_at"),
        # A site's newest announcement per engine by one index probe; whether it has a failed
        # one from a small index of failures alone.
        Index("ix_deliveries_site_id_engine_id", "site_id", "engine", "id"),
        Index("ix_deliveries_failed_site_id", "site_id", sqlite_where=text("status = 'failed'"),
              postgresql_where=text("status = 'failed'")),
    )

    id: Mapped[int] = mapped_column(primary_key=True)
    site_id: Mapped[int] = mapped_column(ForeignKey("sites.id", ondelete="CASCADE"))
    engine: Mapped[str] = mapped_column(String(16))  # indexnow, gsc or ping
    generation_id: Mapped[int | None] = mapped_column(Integer)
    # The address of the last attempt (for ping, the template's URL, fixed when planned).
    target: Mapped[str | None] = mapped_column(Text)
    url_count: Mapped[int] = mapped_column(Integer, default=0)
    urls: Mapped[str | None] = mapped_column(Text)  # IndexNow: the locs, one per line
    # pending (waiting for an attempt), sending (claimed), delivered, accepted (IndexNow 202),
    # failed (permanent answer, or out of attempts).
    status: Mapped[str] = mapped_column(String(16), default="pending")
    attempts: Mapped[int] = mapped_column(Integer, default=0)
    attempt_limit: Mapped[int] = mapped_column(Integer)
    http_status: Mapped[int | None] = mapped_column(Integer)
    outcome: Mapped[str | None] = mapped_column(Text)  # what the answer means and what to do
    # A failure's reason in plain words (webapp.said), for the reader's language; None: the
    # English `outcome` is all there is (an engine's own meaning of its answer, older rows).
    outcome_said: Mapped[list | None] = mapped_column(JSON)
    response_excerpt: Mapped[str | None] = mapped_column(Text)
    created_at: Mapped[datetime] = mapped_column(UTCDateTime, default=utcnow)
    next_attempt_at: Mapped[datetime | None] = mapped_column(UTCDateTime)
    last_attempt_at: Mapped[datetime | None] = mapped_column(UTCDateTime)
    finished_at: Mapped[datetime | None] = mapped_column(UTCDateTime)
    claimed_at: Mapped[datetime | None] = mapped_column(UTCDateTime)

    def __repr__(self) -> str:
        return f"<Delivery {self.id} site={self.site_id} {self.engine} {self.status}>"


class DismissedWarning(Base):
    """A health warning someone dismissed, with a fingerprint of the condition it was about
    (how many URLs and a digest of which): it stays hidden while the fingerprint is the same."""

    __tablename__ = "dismissed_warnings"

    site_id: Mapped[int] = mapped_column(ForeignKey("sites.id", ondelete="CASCADE"),
                                         primary_key=True)
    kind: Mapped[str] = mapped_column(String(32), primary_key=True)
    fingerprint: Mapped[str] = mapped_column(String(64))
    dismissed_at: Mapped[datetime] = mapped_column(UTCDateTime, default=utcnow)
    dismissed_by: Mapped[int | None] = mapped_column(ForeignKey("users.id", ondelete="SET NULL"))

    def __repr__(self) -> str:
        return f"<DismissedWarning site={self.site_id} {self.kind}>"


class ServiceAccountKey(Base):
    """A site's Search Console service-account key, uploaded in the dashboard and stored sealed
    (encrypted); only its e-mail address and upload time are ever shown again."""

    __tablename__ = "service_account_keys"

    site_id: Mapped[int] = mapped_column(ForeignKey("sites.id", ondelete="CASCADE"),
                                         primary_key=True)
    client_email: Mapped[str] = mapped_column(String(320))
    sealed: Mapped[str] = mapped_column(Text)  # the JSON key file, encrypted (accounts.sealing)
    uploaded_at: Mapped[datetime] = mapped_column(UTCDateTime)

    def __repr__(self) -> str:
        return f"<ServiceAccountKey site={self.site_id} {self.client_email!r}>"
