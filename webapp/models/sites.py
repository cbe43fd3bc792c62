"""A site: where it is served, how its sitemaps are built, and its engines' settings."""

from __future__ import annotations

from datetime import datetime
from typing import TYPE_CHECKING

from sqlalchemy import BigInteger, Boolean, Float, Integer, String, Text, false
from sqlalchemy.orm import Mapped, mapped_column, relationship

from webapp.db import Base, UTCDateTime
from webapp.models.common import (
    SITES_FILLFACTOR,
    URL_LENGTH,
    Timestamps,
    new_indexnow_key,
    new_storage_key,
)

if TYPE_CHECKING:
    from webapp.models.notify import ServiceAccountKey
    from webapp.models.runs import Generation
    from webapp.models.urls import Url


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
    leave_out: Mapped[str] = mapped_column(String(64),
                                           default="broken,noindex,canonical,blocked",
                                           server_default="broken,noindex,canonical,blocked")
    verify_schedule: Mapped[str] = mapped_column(String(64), default="off", server_default="off")
    verify_next_run_at: Mapped[datetime | None] = mapped_column(UTCDateTime)
    user_agent: Mapped[str | None] = mapped_column(String(300))
    verify_ignore: Mapped[str | None] = mapped_column(Text)
    # Google News (webapp.protocol.news): the publication's name and language; a site with a name
    # publishes a news sitemap of its articles of the last two days.
    news_name: Mapped[str | None] = mapped_column(String(200))
    news_language: Mapped[str | None] = mapped_column(String(7))
    # When the oldest article of the published news files turns two days old: due then.
    news_due_at: Mapped[datetime | None] = mapped_column(UTCDateTime)

    urls: Mapped[list[Url]] = relationship(back_populates="site", passive_deletes=True)
    generations: Mapped[list[Generation]] = relationship(back_populates="site", passive_deletes=True)

    def __repr__(self) -> str:
        return f"<Site {self.id} {self.slug!r}>"
