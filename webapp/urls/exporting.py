"""A site's live URLs as the CSV the import reads back: every field, images, alternates and
videos and news included (csv_rows names the columns; the video and news columns only for a
site with videos or news articles). The dashboard's download and `flask urls export` write
the same text, streamed in pieces, so a site of any size takes bounded memory."""

from __future__ import annotations

import csv
import io
from collections import defaultdict
from collections.abc import Iterator

from sqlalchemy import exists, select
from sqlalchemy.orm import Session

from webapp.models import Site, Url, UrlAlternate, UrlImage, UrlNews, UrlVideo
from webapp.protocol.news import NEWS_COLUMNS
from webapp.urls.csv_rows import CSV_COLUMNS, export_row
from webapp.urls.news import news_of
from webapp.urls.video_cells import VIDEO_COLUMNS
from webapp.urls.video_store import videos_of

BATCH = 5000  # URLs per piece of text, and per query of their images and alternates


def csv_chunks(session: Session, site: Site) -> Iterator[str]:
    """The site's live URLs in id order as CSV text, header first, in pieces."""
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\n")
    with_videos = session.scalar(select(exists().where(
        UrlVideo.url_id == Url.id, Url.site_id == site.id, Url.deleted_at.is_(None))))
    with_news = session.scalar(select(exists().where(
        UrlNews.url_id == Url.id, Url.site_id == site.id, Url.deleted_at.is_(None))))
    left_out = (() if with_videos else VIDEO_COLUMNS) + (() if with_news else NEWS_COLUMNS)
    writer.writerow([name for name in CSV_COLUMNS if name not in left_out])
    last_id = 0
    while True:
        rows = session.execute(
            select(Url.id, Url.loc, Url.lastmod, Url.changefreq, Url.priority)
            .where(Url.site_id == site.id, Url.deleted_at.is_(None), Url.id > last_id)
            .order_by(Url.id).limit(BATCH)).all()
        if not rows:
            break
        first_id, last_id = rows[0].id, rows[-1].id
        images, alternates = _extensions(session, site, first_id, last_id)
        videos = videos_of(session, [row.id for row in rows]) if with_videos else {}
        news = news_of(session, [row.id for row in rows]) if with_news else {}
        for url_id, *fields in rows:
            article = news.get(url_id)
            cells = export_row(*fields, images.get(url_id, ()), alternates.get(url_id, ()),
                               videos.get(url_id, []) if with_videos else None,
                               article and (article.publication_date, article.title))
            writer.writerow(cells if with_news else cells[:-len(NEWS_COLUMNS)])
        yield out.getvalue()
        out.seek(0)
        out.truncate()
    if out.tell():
        yield out.getvalue()


def _extensions(session: Session, site: Site, first_id: int, last_id: int) -> tuple[dict, dict]:
    """The images and alternates of the site's live URLs with ids from first_id to last_id."""
    urls = (Url.site_id == site.id, Url.deleted_at.is_(None), Url.id.between(first_id, last_id))
    images: dict[int, list] = defaultdict(list)
    for url_id, *image in session.execute(
            select(UrlImage.url_id, UrlImage.loc, UrlImage.title, UrlImage.caption)
            .join(Url, Url.id == UrlImage.url_id).where(*urls)
            .order_by(UrlImage.url_id, UrlImage.position, UrlImage.id)):
        images[url_id].append(tuple(image))
    alternates: dict[int, list] = defaultdict(list)
    for url_id, *pair in session.execute(
            select(UrlAlternate.url_id, UrlAlternate.hreflang, UrlAlternate.href)
            .join(Url, Url.id == UrlAlternate.url_id).where(*urls)
            .order_by(UrlAlternate.url_id, UrlAlternate.hreflang)):
        alternates[url_id].append(tuple(pair))
    return images, alternates
