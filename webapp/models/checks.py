"""The live site as the app saw it: discovery crawls, each URL's verification check, and
verification runs."""

from __future__ import annotations

from datetime import datetime

from sqlalchemy import JSON, Boolean, ForeignKey, Index, Integer, String, Text, UniqueConstraint
from sqlalchemy.orm import Mapped, mapped_column

from webapp.db import Base, UTCDateTime
from webapp.models.common import URL_LENGTH, utcnow


class Discovery(Base):
    """A URL a discovery crawl of a site met: the crawl's frontier while it runs (`state`
    queued, then what fetching it found), and afterwards the review list of the URLs found
    (`verdict` new, known or excluded; `review` pending, accepted or ignored). A new crawl of
    the site starts the list afresh."""

    __tablename__ = "discoveries"
    __table_args__ = (
        UniqueConstraint("site_id", "loc"),
        Index("ix_discoveries_site_id_state_depth", "site_id", "state", "depth"),
    )

    id: Mapped[int] = mapped_column(primary_key=True)
    site_id: Mapped[int] = mapped_column(ForeignKey("sites.id", ondelete="CASCADE"))
    loc: Mapped[str] = mapped_column(String(URL_LENGTH))
    depth: Mapped[int] = mapped_column(Integer, default=0)
    # queued, found (answered 200), excluded (a rule: not fetched), disallowed (robots.txt),
    # duplicate (names another URL as canonical), noindex, redirected, left (redirected out of
    # the site: not followed), failed (an error status or no answer), skipped (beyond a limit)
    state: Mapped[str] = mapped_column(String(12), default="queued")
    verdict: Mapped[str | None] = mapped_column(String(8))  # new, known, excluded; None: not found
    review: Mapped[str] = mapped_column(String(8), default="pending")  # accepted, ignored
    note: Mapped[str | None] = mapped_column(Text)  # why: the rule, the status, the target
    found_at: Mapped[datetime] = mapped_column(UTCDateTime, default=utcnow)

    def __repr__(self) -> str:
        return f"<Discovery {self.id} {self.loc!r} {self.state}>"
class UrlCheck(Base):
    """What the last verification of a URL found on the live site (webapp.verify)."""

    __tablename__ = "url_checks"
    __table_args__ = (Index("ix_url_checks_site_id_outcome", "site_id", "outcome"),)

    url_id: Mapped[int] = mapped_column(ForeignKey("urls.id", ondelete="CASCADE"),
                                        primary_key=True)
    site_id: Mapped[int] = mapped_column(ForeignKey("sites.id", ondelete="CASCADE"))
    run_id: Mapped[int | None] = mapped_column(Integer)  # the run that checked it last
    checked_at: Mapped[datetime] = mapped_column(UTCDateTime)
    # ok, broken, redirected, noindex, canonical (elsewhere), unreachable, or blocked
    # (robots.txt disallows the check).
    outcome: Mapped[str] = mapped_column(String(12))
    status: Mapped[int | None] = mapped_column(Integer)
    final_url: Mapped[str | None] = mapped_column(String(URL_LENGTH))
    noindex: Mapped[bool] = mapped_column(Boolean, default=False)
    canonical: Mapped[str | None] = mapped_column(String(URL_LENGTH))
    content_type: Mapped[str | None] = mapped_column(String(200))
    etag: Mapped[str | None] = mapped_column(String(300))
    last_modified: Mapped[str | None] = mapped_column(String(64))
    fingerprint: Mapped[str | None] = mapped_column(String(64))
    # When the fingerprint last changed; the first check's time when verification began.
    content_changed_at: Mapped[datetime | None] = mapped_column(UTCDateTime)
    error: Mapped[str | None] = mapped_column(Text)  # why it was unreachable
    # The URL's given lastmod when it was checked: a date that moves while the fingerprint
    # stays is a date that does not tell the truth.
    given_lastmod: Mapped[str | None] = mapped_column(String(25))

    def __repr__(self) -> str:
        return f"<UrlCheck url={self.url_id} {self.outcome}>"


class VerifyRun(Base):
    """One verification of a site's URLs: a run that stopped is continued by the next."""

    __tablename__ = "verify_runs"
    __table_args__ = (Index("ix_verify_runs_site_id_id", "site_id", "id"),)

    id: Mapped[int] = mapped_column(primary_key=True)
    site_id: Mapped[int] = mapped_column(ForeignKey("sites.id", ondelete="CASCADE"))
    status: Mapped[str] = mapped_column(String(16), default="running")  # done, failed
    owner: Mapped[str | None] = mapped_column(String(160))  # host:pid running it
    started_at: Mapped[datetime] = mapped_column(UTCDateTime, default=utcnow)
    heartbeat_at: Mapped[datetime | None] = mapped_column(UTCDateTime)
    finished_at: Mapped[datetime | None] = mapped_column(UTCDateTime)
    total: Mapped[int] = mapped_column(Integer, default=0)
    done: Mapped[int] = mapped_column(Integer, default=0)
    counts: Mapped[dict | None] = mapped_column(JSON)  # outcomes of the run's checks
    # URLs whose given lastmod moved since their last check while their content did not.
    dates_moved: Mapped[int] = mapped_column(Integer, default=0, server_default="0")
    error: Mapped[str | None] = mapped_column(Text)

    def __repr__(self) -> str:
        return f"<VerifyRun {self.id} site={self.site_id} {self.status}>"
