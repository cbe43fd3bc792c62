"""A site's runs (generations), the files they publish and their bodies, and the rows of
the background tasks that run them."""

from __future__ import annotations

from datetime import datetime
from typing import TYPE_CHECKING

from sqlalchemy import (
    JSON,
    BigInteger,
    ForeignKey,
    Index,
    Integer,
    LargeBinary,
    String,
    Text,
    literal_column,
    text,
)
from sqlalchemy.orm import Mapped, mapped_column, relationship

from webapp.db import Base, UTCDateTime
from webapp.models.common import utcnow

if TYPE_CHECKING:
    from webapp.models.sites import Site


class Generation(Base):
    """One run of the generator for one site, successful or not."""

    __tablename__ = "generations"
    # A site's newest run by one index probe (the sites page sorts by it); whether a site has
    # ever failed from a small index of failures alone. A run reads its site's newest
    # successful runs (its last files, the sets kept) and marks its unfinished ones failed
    # through indexes of those alone: as many rows whatever the site's history.
    __table_args__ = (
        Index("ix_generations_site_id_id", "site_id", "id"),
        Index("ix_generations_site_id_number", "site_id", "number", unique=True),
        Index("ix_generations_failed_site_id", "site_id", sqlite_where=text("status = 'failed'"),
              postgresql_where=text("status = 'failed'")),
        Index("ix_generations_succeeded_site_id_id", "site_id", "id",
              sqlite_where=text("status = 'succeeded'"),
              postgresql_where=text("status = 'succeeded'")),
        Index("ix_generations_unfinished_site_id", "site_id",
              sqlite_where=text("status IN ('running', 'publishing')"),
              postgresql_where=text("status IN ('running', 'publishing')")),
    )

    id: Mapped[int] = mapped_column(primary_key=True)
    site_id: Mapped[int] = mapped_column(ForeignKey("sites.id", ondelete="CASCADE"))
    # What people call it: its place among its site's generations, the first being 1. The
    # dashboard, the task page, the CLI (`sitemaps history`, `rollback SITE N`) and the API
    # say this number; the id is the installation's and stays in URLs and the ledger.
    number: Mapped[int] = mapped_column(Integer)
    status: Mapped[str] = mapped_column(String(16), default="running")
    started_at: Mapped[datetime] = mapped_column(UTCDateTime, default=utcnow)
    finished_at: Mapped[datetime | None] = mapped_column(UTCDateTime)
    url_count: Mapped[int] = mapped_column(Integer, default=0)
    file_count: Mapped[int] = mapped_column(Integer, default=0)
    bytes: Mapped[int] = mapped_column(BigInteger, default=0)
    error: Mapped[str | None] = mapped_column(Text)
    # Set when this generation republished the files of an older one (`sitemaps rollback`).
    rollback_of: Mapped[int | None] = mapped_column(Integer)
    # The site's change_seq when the run started: every URL change up to it is in the output.
    change_seq: Mapped[int | None] = mapped_column(BigInteger)
    # A digest of everything besides the URLs that shapes the files (header, defaults, limits,
    # names): a later run may reuse this run's files only while it is the same.
    layout: Mapped[str | None] = mapped_column(String(64))
    # Live URLs this run left out of the files by their last check, by outcome ({"broken": 3}).
    left_out: Mapped[dict | None] = mapped_column(JSON)
    # What started the run: one of TRIGGERS (None for runs recorded before it was kept).
    trigger: Mapped[str | None] = mapped_column(String(16))

    site: Mapped[Site] = relationship(back_populates="generations")
    files: Mapped[list[GenerationFile]] = relationship(
        back_populates="generation", cascade="all, delete-orphan", order_by="GenerationFile.id"
    )

    def __repr__(self) -> str:
        return f"<Generation {self.id} site={self.site_id} {self.status}>"


# Conditions on a run's status written as literals, not parameters, so that the planner can
# use the partial indexes above (a prepared statement's generic plan cannot with parameters).
SUCCEEDED_RUN = Generation.status == literal_column("'succeeded'")
UNFINISHED_RUN = Generation.status.in_([literal_column("'running'"),
                                        literal_column("'publishing'")])


# What may start a run: the site's schedule, a change of its URLs, the dashboard's button, the
# API, the command line, or a rollback to an older generation's files.
TRIGGERS = ("schedule", "change", "button", "api", "cli", "rollback")


class GenerationFile(Base):
    """One published file. The URL id range and digest let a later run rewrite only what changed."""

    __tablename__ = "generation_files"

    id: Mapped[int] = mapped_column(primary_key=True)
    generation_id: Mapped[int] = mapped_column(ForeignKey("generations.id", ondelete="CASCADE"), index=True)
    name: Mapped[str] = mapped_column(String(255))
    kind: Mapped[str] = mapped_column(String(16))  # "urlset" or "index"
    url_count: Mapped[int] = mapped_column(Integer, default=0)
    bytes: Mapped[int] = mapped_column(BigInteger)
    gzip_bytes: Mapped[int] = mapped_column(BigInteger)
    sha256: Mapped[str] = mapped_column(String(64))
    first_url_id: Mapped[int | None] = mapped_column(Integer)
    last_url_id: Mapped[int | None] = mapped_column(Integer)
    lastmod: Mapped[str] = mapped_column(String(25))

    generation: Mapped[Generation] = relationship(back_populates="files")

    def __repr__(self) -> str:
        return f"<GenerationFile {self.name} urls={self.url_count}>"


class Task(Base):
    """A piece of background work asked for by a person or a program (regenerate now, notify
    now, import, pre-flight), and how far it got: any web node can show it.

    `payload` holds what the work needs that only the asking node had (an uploaded file), so a
    worker on another machine can run it; it is dropped when the task finishes, whatever the
    outcome. A task whose worker died keeps it, with its `arguments`, to be retried."""

    __tablename__ = "tasks"

    id: Mapped[str] = mapped_column(String(32), primary_key=True)
    kind: Mapped[str] = mapped_column(String(40))
    site_id: Mapped[int | None] = mapped_column(ForeignKey("sites.id", ondelete="SET NULL"),
                                                index=True)
    site_label: Mapped[str] = mapped_column(String(200))  # the slug when it was asked for
    status: Mapped[str] = mapped_column(String(16), default="queued")  # running, done, failed
    done: Mapped[int] = mapped_column(BigInteger, default=0)
    total: Mapped[int | None] = mapped_column(BigInteger)
    message: Mapped[str] = mapped_column(Text, default="")
    result: Mapped[dict | None] = mapped_column(JSON)  # figures others read (an import's rejects)
    worker: Mapped[str | None] = mapped_column(String(160))  # host:pid:token running it
    created_at: Mapped[datetime] = mapped_column(UTCDateTime, default=utcnow, index=True)
    started_at: Mapped[datetime | None] = mapped_column(UTCDateTime)
    heartbeat_at: Mapped[datetime | None] = mapped_column(UTCDateTime)
    finished_at: Mapped[datetime | None] = mapped_column(UTCDateTime)
    payload: Mapped[bytes | None] = mapped_column(LargeBinary, deferred=True)
    arguments: Mapped[dict | None] = mapped_column(JSON)  # the task's, besides its ids

    def __repr__(self) -> str:
        return f"<Task {self.id} {self.kind} {self.status}>"


class FileBody(Base):
    """The content of a published file, stored once per digest whichever sites and generations
    publish it: its gzip bytes, in parts (FileBodyPart) so that no side holds a whole file."""

    __tablename__ = "file_bodies"

    digest: Mapped[str] = mapped_column(String(64), primary_key=True)  # SHA-256 of the content
    size: Mapped[int] = mapped_column(BigInteger)
    gzip_size: Mapped[int] = mapped_column(BigInteger)
    created_at: Mapped[datetime] = mapped_column(UTCDateTime, default=utcnow)

    def __repr__(self) -> str:
        return f"<FileBody {self.digest[:12]} {self.size} bytes>"


class FileBodyPart(Base):
    """One slice of a body's gzip bytes, in order of `position`."""

    __tablename__ = "file_body_parts"

    digest: Mapped[str] = mapped_column(ForeignKey("file_bodies.digest", ondelete="CASCADE"),
                                        primary_key=True)
    position: Mapped[int] = mapped_column(Integer, primary_key=True)
    data: Mapped[bytes] = mapped_column(LargeBinary)

    def __repr__(self) -> str:
        return f"<FileBodyPart {self.digest[:12]} #{self.position}>"


class StoredFile(Base):
    """One servable file of a generation's set: what serving needs, and the body by digest.
    Rows go when their generation is pruned; a body no row names is then removed too."""

    __tablename__ = "stored_files"

    generation_id: Mapped[int] = mapped_column(
        ForeignKey("generations.id", ondelete="CASCADE"), primary_key=True)
    name: Mapped[str] = mapped_column(String(255), primary_key=True)
    kind: Mapped[str] = mapped_column(String(16))  # "urlset", "index" or "stylesheet"
    # No cascade: a body still named here cannot be deleted.
    digest: Mapped[str] = mapped_column(ForeignKey("file_bodies.digest"), index=True)
    size: Mapped[int] = mapped_column(BigInteger)
    gzip_size: Mapped[int | None] = mapped_column(BigInteger)  # None: served without a .gz twin
    lastmod: Mapped[str | None] = mapped_column(String(25))

    def __repr__(self) -> str:
        return f"<StoredFile {self.generation_id} {self.name}>"
