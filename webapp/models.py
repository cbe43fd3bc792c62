"""Typed SQLAlchemy models: what is stored, and nothing about how it is used."""

from __future__ import annotations

import uuid
from datetime import UTC, datetime

from sqlalchemy import (
    JSON,
    BigInteger,
    Boolean,
    Float,
    ForeignKey,
    Index,
    Integer,
    LargeBinary,
    String,
    Text,
    UniqueConstraint,
    false,
    func,
    literal_column,
    text,
)
from sqlalchemy.orm import Mapped, mapped_column, relationship

from webapp.db import Base, UTCDateTime

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


class Site(Timestamps, Base):
    __tablename__ = "sites"
    # Every run rewrites its site's row (lease, schedule, published set): room left on each
    # page lets PostgreSQL write the new version beside the old one, touching no index (a
    # "HOT" update), instead of a new place and an entry in each index per run.
    __table_args__ = {"postgresql_with": {"fillfactor": SITES_FILLFACTOR}}

    id: Mapped[int] = mapped_column(primary_key=True)
    slug: Mapped[str] = mapped_column(String(64), unique=True)
    name: Mapped[str] = mapped_column(String(200))
    base_url: Mapped[str] = mapped_column(String(URL_LENGTH))
    sitemap_url: Mapped[str] = mapped_column(String(URL_LENGTH))
    encoding: Mapped[str] = mapped_column(String(32), default="utf-8")
    default_changefreq: Mapped[str | None] = mapped_column(String(7))
    default_priority: Mapped[float | None] = mapped_column(Float)
    max_urls_per_file: Mapped[int] = mapped_column(Integer, default=50_000)
    # robots.txt served on the site's host; None means the default template.
    robots_txt: Mapped[str | None] = mapped_column(Text)
    # Whether sitemap files point browsers at an XSL stylesheet that renders them as a table.
    # Off for new sites: browsers are dropping XSLT, and the server renders the human view.
    stylesheet: Mapped[bool] = mapped_column(Boolean, default=False, server_default=false())
    indexnow_key: Mapped[str] = mapped_column(String(128), default=new_indexnow_key)
    # Names the site's folder of published files. Random rather than the id, so a database
    # that is reset (ids start again at 1) never picks up another site's files.
    storage_key: Mapped[str] = mapped_column(String(32), unique=True, default=new_storage_key)
    # Raised by every transaction that adds, changes or deletes URLs of the site; the URLs it
    # touched carry the new value. Announcements read it as a position in the site's changes.
    change_seq: Mapped[int] = mapped_column(BigInteger, default=0, server_default="0")
    indexnow_enabled: Mapped[bool] = mapped_column(Boolean, default=False, server_default=false())
    # None means the INDEXNOW_ENDPOINT setting.
    indexnow_endpoint: Mapped[str | None] = mapped_column(String(URL_LENGTH))
    # "root": /<key>.txt on the site's host; "sitemap": beside the sitemap, sent as keyLocation.
    indexnow_key_location: Mapped[str] = mapped_column(String(8), default="root",
                                                       server_default="root")
    gsc_property: Mapped[str | None] = mapped_column(String(URL_LENGTH))
    gsc_credentials: Mapped[str | None] = mapped_column(String(4096))  # a service-account file
    # A service account uploaded in the dashboard (wins over the file in gsc_credentials).
    # Loaded with the site (one more query per load, not per site), so that a site used after
    # its session has closed (a pre-flight check, a send) still knows it.
    service_account: Mapped[ServiceAccountKey | None] = relationship(passive_deletes=True,
                                                                     lazy="selectin")
    gsc_endpoint: Mapped[str | None] = mapped_column(String(URL_LENGTH))
    ping_urls: Mapped[str | None] = mapped_column(Text)  # templates, one per line
    # When to regenerate: `every 6h`, `cron:0 3 * * *` (in `timezone`) or `off`; and this many
    # seconds after the last of a burst of URL changes.
    schedule: Mapped[str] = mapped_column(String(64), default="every 6h",
                                          server_default="every 6h")
    change_delay: Mapped[int] = mapped_column(Integer, default=60, server_default="60")
    timezone: Mapped[str] = mapped_column(String(64), default="UTC", server_default="UTC")
    next_run_at: Mapped[datetime | None] = mapped_column(UTCDateTime)
    changed_at: Mapped[datetime | None] = mapped_column(UTCDateTime)  # the last URL change
    # The first change not yet generated: a site edited without pause still runs in time.
    pending_since: Mapped[datetime | None] = mapped_column(UTCDateTime)
    # After a failed run, changes wait until then before they trigger another.
    retry_at: Mapped[datetime | None] = mapped_column(UTCDateTime)
    generated_seq: Mapped[int] = mapped_column(BigInteger, default=0, server_default="0")
    # Live URLs, kept by every transaction that adds or deletes some (webapp.urls.changes):
    # lists of thousands of sites show it without counting every URL per view.
    url_count: Mapped[int] = mapped_column(Integer, default=0, server_default="0")
    # Who is generating the site now (host:pid), until when at the latest.
    run_owner: Mapped[str | None] = mapped_column(String(160))
    run_lease_until: Mapped[datetime | None] = mapped_column(UTCDateTime)
    # When the regeneration task already in the queue for this site is due: a burst of
    # changes enqueues one task, not one per change (tasks.soon).
    run_queued_until: Mapped[datetime | None] = mapped_column(UTCDateTime)
    # The generation every node serves, switched by a compare-and-set that only moves it
    # forward, in the transaction that records the run as succeeded (see sitemaps.publish).
    published_generation_id: Mapped[int | None] = mapped_column(Integer)
    # Exclusion rules (webapp.urls.exclusions): path globs or `re:` patterns, one per line;
    # query parameter globs to strip, comma-separated. None: none.
    exclude: Mapped[str | None] = mapped_column(Text)
    strip_params: Mapped[str | None] = mapped_column(String(1000))
    # Sections (webapp.sitemaps.sections): `NAME PATTERN` per line, each written to files of
    # its own; None: none. `sections_assigned` is the definition urls.section was last
    # computed with (each URL's section is recomputed in bulk when they differ).
    sections: Mapped[str | None] = mapped_column(Text)
    sections_assigned: Mapped[str | None] = mapped_column(Text)
    # What a discovery crawl does with the new URLs it finds: "review" (a list to accept or
    # ignore) or "add" (added at once).
    discover_mode: Mapped[str] = mapped_column(String(8), default="review",
                                               server_default="review")
    # Verification (webapp.verify): where a published lastmod comes from (given, content,
    # newest), which outcomes of a URL's last check leave it out of the sitemap (a comma
    # list), when to verify (`schedule`'s syntax) and next, the User-Agent the checks send
    # (None: the default) and patterns of text that do not count as a change (one a line).
    lastmod_source: Mapped[str] = mapped_column(String(8), default="given",
                                                server_default="given")
    leave_out: Mapped[str] = mapped_column(String(64), default="broken,noindex,canonical",
                                           server_default="broken,noindex,canonical")
    verify_schedule: Mapped[str] = mapped_column(String(64), default="off", server_default="off")
    verify_next_run_at: Mapped[datetime | None] = mapped_column(UTCDateTime)
    user_agent: Mapped[str | None] = mapped_column(String(300))
    verify_ignore: Mapped[str | None] = mapped_column(Text)
    # Google News (webapp.news): the publication's name and language; a site with a name
    # publishes a news sitemap of its articles of the last two days.
    news_name: Mapped[str | None] = mapped_column(String(200))
    news_language: Mapped[str | None] = mapped_column(String(7))
    # When the oldest article of the published news files turns two days old: due then.
    news_due_at: Mapped[datetime | None] = mapped_column(UTCDateTime)

    urls: Mapped[list[Url]] = relationship(back_populates="site", passive_deletes=True)
    generations: Mapped[list[Generation]] = relationship(back_populates="site", passive_deletes=True)

    def __repr__(self) -> str:
        return f"<Site {self.id} {self.slug!r}>"


class Url(Timestamps, Base):
    """One page of a site. Deleting keeps the row (`deleted_at`) so search engines can be told."""

    __tablename__ = "urls"
    __table_args__ = (
        UniqueConstraint("site_id", "loc"),
        Index("ix_urls_site_id_id", "site_id", "id"),
        Index("ix_urls_site_id_change_seq", "site_id", "change_seq"),
        # The URL list's sort; with deleted_at, the overview's checks on live URLs' lastmods.
        Index("ix_urls_site_id_lastmod_id_deleted_at", "site_id", "lastmod", "id", "deleted_at"),
        # Each section of a site streamed in id order (webapp.sitemaps.sections).
        Index("ix_urls_site_id_section_id", "site_id", "section", "id"),
    )

    id: Mapped[int] = mapped_column(primary_key=True)
    site_id: Mapped[int] = mapped_column(ForeignKey("sites.id", ondelete="CASCADE"))
    loc: Mapped[str] = mapped_column(String(URL_LENGTH))
    # Stored in the one form the generator emits: YYYY-MM-DD or YYYY-MM-DDThh:mm:ss+00:00.
    lastmod: Mapped[str | None] = mapped_column(String(25))
    changefreq: Mapped[str | None] = mapped_column(String(7))
    priority: Mapped[float | None] = mapped_column(Float)
    deleted_at: Mapped[datetime | None] = mapped_column(UTCDateTime)
    # The site's change_seq of the transaction that last added, changed or deleted this URL.
    change_seq: Mapped[int] = mapped_column(BigInteger, default=0, server_default="0")
    # The site section the URL is published in, "" for none (the default files); None until
    # a generation of a site with sections assigns it (webapp.sitemaps.sections).
    section: Mapped[str | None] = mapped_column(String(40))

    site: Mapped[Site] = relationship(back_populates="urls")
    images: Mapped[list[UrlImage]] = relationship(
        back_populates="url", cascade="all, delete-orphan", order_by="UrlImage.position"
    )
    alternates: Mapped[list[UrlAlternate]] = relationship(
        back_populates="url", cascade="all, delete-orphan", order_by="UrlAlternate.hreflang"
    )
    videos: Mapped[list[UrlVideo]] = relationship(
        back_populates="url", cascade="all, delete-orphan", order_by="UrlVideo.position"
    )
    news: Mapped[UrlNews | None] = relationship(cascade="all, delete-orphan",
                                                 passive_deletes=True)

    def __repr__(self) -> str:
        return f"<Url {self.id} {self.loc!r}>"


class UrlImage(Base):
    """An `image:image` entry of a page (Google image sitemap extension)."""

    __tablename__ = "url_images"

    id: Mapped[int] = mapped_column(primary_key=True)
    url_id: Mapped[int] = mapped_column(ForeignKey("urls.id", ondelete="CASCADE"), index=True)
    position: Mapped[int] = mapped_column(Integer, default=0)
    loc: Mapped[str] = mapped_column(String(URL_LENGTH))
    title: Mapped[str | None] = mapped_column(Text)
    caption: Mapped[str | None] = mapped_column(Text)

    url: Mapped[Url] = relationship(back_populates="images")

    def __repr__(self) -> str:
        return f"<UrlImage {self.id} {self.loc!r}>"


class UrlVideo(Base):
    """A `video:video` entry of a page (Google video sitemap extension), in the normalised
    form `webapp.urls.videos.normalize_video` gives: what the generator writes as it is."""

    __tablename__ = "url_videos"

    id: Mapped[int] = mapped_column(primary_key=True)
    url_id: Mapped[int] = mapped_column(ForeignKey("urls.id", ondelete="CASCADE"), index=True)
    position: Mapped[int] = mapped_column(Integer, default=0)
    thumbnail_loc: Mapped[str] = mapped_column(String(URL_LENGTH))
    title: Mapped[str] = mapped_column(Text)
    description: Mapped[str] = mapped_column(Text)
    content_loc: Mapped[str | None] = mapped_column(String(URL_LENGTH))
    player_loc: Mapped[str | None] = mapped_column(String(URL_LENGTH))
    duration: Mapped[int | None] = mapped_column(Integer)  # seconds
    # W3C dates as lastmod stores them: YYYY-MM-DD or YYYY-MM-DDThh:mm:ss+00:00.
    expiration_date: Mapped[str | None] = mapped_column(String(25))
    rating: Mapped[float | None] = mapped_column(Float)
    view_count: Mapped[int | None] = mapped_column(BigInteger)
    publication_date: Mapped[str | None] = mapped_column(String(25))
    family_friendly: Mapped[bool | None] = mapped_column(Boolean)
    restriction_relationship: Mapped[str | None] = mapped_column(String(5))  # allow, deny
    # Space-separated upper-case ISO 3166 alpha-2 codes: "JP US".
    restriction_countries: Mapped[str | None] = mapped_column(Text)
    platform_relationship: Mapped[str | None] = mapped_column(String(5))
    platforms: Mapped[str | None] = mapped_column(String(20))  # "web mobile tv"
    requires_subscription: Mapped[bool | None] = mapped_column(Boolean)
    uploader: Mapped[str | None] = mapped_column(String(255))
    uploader_info: Mapped[str | None] = mapped_column(String(URL_LENGTH))
    live: Mapped[bool | None] = mapped_column(Boolean)
    tags: Mapped[list[str]] = mapped_column(JSON, default=list)  # at most 32

    url: Mapped[Url] = relationship(back_populates="videos")

    def __repr__(self) -> str:
        return f"<UrlVideo {self.id} {self.title!r}>"
class UrlNews(Base):
    """A page's Google News article data (`news:news`): one row per URL at most."""

    __tablename__ = "url_news"
    # A news sitemap reads the articles of the last two days, of every site: few of many.
    __table_args__ = (Index("ix_url_news_publication_date", "publication_date"),)

    url_id: Mapped[int] = mapped_column(ForeignKey("urls.id", ondelete="CASCADE"),
                                        primary_key=True)
    # In the one form lastmod is stored in: YYYY-MM-DD or YYYY-MM-DDThh:mm:ss+00:00.
    publication_date: Mapped[str] = mapped_column(String(25))
    title: Mapped[str] = mapped_column(Text)

    def __repr__(self) -> str:
        return f"<UrlNews {self.url_id} {self.publication_date}>"


class UrlAlternate(Base):
    """An hreflang alternate of a page, written as `xhtml:link rel="alternate"`."""

    __tablename__ = "url_alternates"
    __table_args__ = (UniqueConstraint("url_id", "hreflang"),)

    id: Mapped[int] = mapped_column(primary_key=True)
    url_id: Mapped[int] = mapped_column(ForeignKey("urls.id", ondelete="CASCADE"))
    hreflang: Mapped[str] = mapped_column(String(35))
    href: Mapped[str] = mapped_column(String(URL_LENGTH))

    url: Mapped[Url] = relationship(back_populates="alternates")

    def __repr__(self) -> str:
        return f"<UrlAlternate {self.hreflang} {self.href!r}>"


class Generation(Base):
    """One run of the generator for one site, successful or not."""

    __tablename__ = "generations"
    # A site's newest run by one index probe (the sites page sorts by it); whether a site has
    # ever failed from a small index of failures alone. A run reads its site's newest
    # successful runs (its last files, the sets kept) and marks its unfinished ones failed
    # through indexes of those alone: as many rows whatever the site's history.
    __table_args__ = (
        Index("ix_generations_site_id_id", "site_id", "id"),
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
class ServiceAccountKey(Base):
    """A site's Search Console service-account key, uploaded in the dashboard and stored sealed
    (encrypted); only its e-mail address and upload time are ever shown again."""

    __tablename__ = "service_account_keys"

    site_id: Mapped[int] = mapped_column(ForeignKey("sites.id", ondelete="CASCADE"),
                                         primary_key=True)
    client_email: Mapped[str] = mapped_column(String(320))
    sealed: Mapped[str] = mapped_column(Text)  # the JSON key file, encrypted (webapp.accounts.sealing)
    uploaded_at: Mapped[datetime] = mapped_column(UTCDateTime)

    def __repr__(self) -> str:
        return f"<ServiceAccountKey site={self.site_id} {self.client_email!r}>"
