"""A site's URLs and what each carries: images, videos, a news article, its alternates."""

from __future__ import annotations

from datetime import datetime
from typing import TYPE_CHECKING

from sqlalchemy import (
    JSON,
    BigInteger,
    Boolean,
    Float,
    ForeignKey,
    Index,
    Integer,
    String,
    Text,
    UniqueConstraint,
)
from sqlalchemy.orm import Mapped, mapped_column, relationship

from webapp.db import Base, UTCDateTime
from webapp.models.common import URL_LENGTH, Timestamps

if TYPE_CHECKING:
    from webapp.models.sites import Site


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
