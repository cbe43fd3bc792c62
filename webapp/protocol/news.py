"""Google News sitemap rules, apart from any storage: a site's publication name and language,
an article's publication date and title, and the two-day window of a news sitemap.

Google's rules (developers.google.com/search/docs/crawling-indexing/sitemaps/news-sitemap):
a news sitemap lists only articles published in the last two days, at most 1,000 per file
(and none dated after the run: such a date is refused as input, as a lastmod ahead is, and
one within the day of slack waits for its moment);
the publication's name is as it appears on news.google.com; its language is an ISO 639 code
of 2 or 3 letters, except zh-cn and zh-tw for Chinese; the publication date is a W3C date
with at least a complete day (YYYY-MM-DD); each article has a title.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta

from webapp.errors import InvalidValue, Note, rule_text
from webapp.protocol.common import check_text
from webapp.protocol.fields import normalize_lastmod, not_ahead

WINDOW = timedelta(days=2)  # an article is listed while it is at most this old
MAX_NEWS_PER_FILE = 1_000
MAX_NAME = 200
MAX_TITLE = 2_000
# A URL's news data in a CSV file (csv_rows), in this order.
NEWS_COLUMNS = ("news_publication_date", "news_title")
NEWS_NS = "http://www.google.com/schemas/sitemap-news/0.9"
_LANGUAGE = re.compile(r"zh-cn|zh-tw|[a-z]{2,3}")
_COMPLETE_DAY = re.compile(r"\s*\d{4}-\d{2}-\d{2}")


@dataclass(frozen=True)
class NewsData:
    """What a URL says of its article: stored in url_news, written as `news:news`."""

    publication_date: str  # normalised as lastmod is
    title: str


def check_news_name(value: str) -> str | None:
    """The publication's name; empty turns the news sitemap off."""
    text = check_text("news_name", str(value))
    if len(text) > MAX_NAME:
        raise InvalidValue("news_name", text[:40], rule_text(
            "must be at most %(limit)s characters", limit=MAX_NAME))
    return text or None


def check_news_language(value: str) -> str | None:
    """An ISO 639 code of 2 or 3 letters, or zh-cn / zh-tw; stored lower-case."""
    text = str(value).strip().lower()
    if not text:
        return None
    if not _LANGUAGE.fullmatch(text):
        raise InvalidValue("news_language", value, rule_text(
            "must be an ISO 639 language code of 2 or 3 letters (en, ja, fil), or zh-cn or "
            "zh-tw for Chinese"))
    return text


SETTINGS = {
    "news_name": (check_news_name, lambda v: v or ""),
    "news_language": (check_news_language, lambda v: v or ""),
}


def check_settings(site, values: Mapping[str, object]) -> list[InvalidValue]:
    """A news publication needs both its name and its language."""
    name = values.get("news_name", site.news_name)
    language = values.get("news_language", site.news_language)
    if name and not language:
        return [InvalidValue("news_language", "", rule_text(
            "is required when news_name is set: Google News needs the publication's language"))]
    return []


def normalize_publication_date(raw: str) -> str:
    """A W3C date with at least the day, normalised as lastmod is, and not more than a day
    ahead of now (the rule of a lastmod)."""
    text = str(raw)
    if not _COMPLETE_DAY.match(text):
        raise InvalidValue("news_publication_date", text, rule_text(
            "must be a W3C date with at least the day: YYYY-MM-DD or "
            "YYYY-MM-DDThh:mm:ss+hh:mm"))
    try:
        value = normalize_lastmod(text)
    except InvalidValue as exc:
        raise InvalidValue("news_publication_date", text, exc.said) from None
    if value is None:
        raise InvalidValue("news_publication_date", text, rule_text("is required"))
    return not_ahead("news_publication_date", text, value)


def check_news_title(raw: str) -> str:
    title = check_text("news_title", str(raw), MAX_TITLE)
    if not title:
        raise InvalidValue("news_title", raw, rule_text(
            "is required for a news article: Google News shows it"))
    if "\n" in title or "\r" in title:
        raise InvalidValue("news_title", title[:40], rule_text("must be one line"))
    return title


def check_news(date: object, title: object) -> NewsData | None:
    """A URL's news data from its two fields: both empty means none; one alone is refused."""
    date_text = "" if date is None else str(date).strip()
    title_text = "" if title is None else str(title).strip()
    if not date_text and not title_text:
        return None
    if not date_text:
        raise InvalidValue("news_publication_date", "", rule_text(
            "is required when news_title is given"))
    return NewsData(normalize_publication_date(date_text), check_news_title(title_text))


def news_cells(cells: Mapping[str, str]) -> tuple[str, str] | tuple[()] | None:
    """A CSV row's news data, checked: (publication date, title), () for none (both cells
    empty: stored news data is removed), or None when the file has no news column."""
    if not any(name in cells for name in NEWS_COLUMNS):
        return None
    news = check_news(cells.get("news_publication_date"), cells.get("news_title"))
    return () if news is None else (news.publication_date, news.title)


def published_at(publication_date: str) -> datetime:
    """The moment a stored publication date names (a day alone: its start, in UTC)."""
    if len(publication_date) == 10:
        return datetime.fromisoformat(publication_date).replace(tzinfo=UTC)
    return datetime.fromisoformat(publication_date)


def window_start(now: datetime) -> datetime:
    """The oldest publication moment a news sitemap made at `now` still lists."""
    return _aware(now) - WINDOW


def in_window(publication_date: str, now: datetime) -> bool:
    """Published at most two days before `now`, and not after it: an article dated ahead of
    the run (within the day input allows, or stored before that rule) waits for its date."""
    return window_start(now) <= published_at(publication_date) <= _aware(now)


def _aware(now: datetime) -> datetime:
    return now if now.tzinfo else now.replace(tzinfo=UTC)


def too_old_note(publication_date: str, now: datetime | None = None) -> Note | None:
    """A note for an article already out of the two-day window at `now` (the clock): it is
    stored, and listed in the urlset files, but no news sitemap will list it."""
    if published_at(publication_date) >= window_start(now or datetime.now(UTC)):
        return None
    return Note("news_publication_date", publication_date, rule_text(
        "is more than two days ago, so the news sitemap will not list the article (it lists "
        "the last two days' only); the URL is kept and stays in the other sitemaps"))


def ages_out_at(publication_date: str) -> datetime:
    """The first moment a run leaves the article out: just past two days old."""
    return published_at(publication_date) + WINDOW + timedelta(seconds=1)
