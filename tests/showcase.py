"""A dashboard as people run it, for the browser tests and the README's tour: a Japanese shop
with long and Japanese URLs, images and language versions, two sections, a few generations
and announcements, a finished task and a finished "Test my setup" (some files right, some wrong), an ordinary second site, an empty third one, three accounts
and a token."""

from __future__ import annotations

from datetime import timedelta

from flask import Flask

from webapp import jobs, tasks
from webapp.accounts.tokens import create_token
from webapp.accounts.users import create_user
from webapp.models import Delivery, Site, utcnow
from webapp.protocol import normalize_url
from webapp.protocol.news import check_news
from webapp.sites import create_site, update_site
from webapp.urls import check_url, save_news, save_url, write_url

PASSWORD = "correct horse battery"
BASE = "https://例え.jp/"
LONG = ("products/outdoor/hiking-and-trekking/waterproof-breathable-lightweight-three-layer-"
        "shell-jacket-for-alpine-conditions-2026-edition?colour=forest-green&size=extra-large"
        "&utm_source=newsletter&utm_campaign=autumn-sale-2026")
ARTICLE = normalize_url(f"{BASE}日本語の記事/登山用品の選び方-初心者向けガイド")
ENGLISH = normalize_url(f"{BASE}en/articles/choosing-hiking-gear")
VIDEO = {"thumbnail_loc": f"{BASE}動画/登山靴の選び方.jpg", "title": "初心者向け：登山靴の選び方",
         "description": "足の形に合う登山靴の選び方を、店のスタッフが7分で説明します。",
         "content_loc": "https://video.example.net/hiking-boots.mp4", "duration": "420",
         "publication_date": "2026-11-20", "family_friendly": "yes",
         "restriction_relationship": "allow", "restriction_countries": "JP",
         "uploader": "Mountain Gear", "uploader_info": f"{BASE}about", "tags": ["登山", "初心者"]}


def seed_showcase(app: Flask) -> dict:
    """Seed the database of `app`; the ids and slugs the page paths need."""
    sessions = app.extensions["db_sessionmaker"]
    with sessions() as session:
        admin = create_user(session, "owner@example.com", PASSWORD, "admin")
        create_user(session, "editor@example.com", PASSWORD, "editor")
        create_user(session, "viewer@example.com", PASSWORD, "viewer")
        site, _ = create_site(session, "日本のアウトドア用品店 Mountain Gear", BASE,
                              settings={"change_delay": "0", "sections":
                                        "articles /日本語の記事/\\nproducts /products/*"})
        shop, _ = create_site(session, "Example Shop", "https://shop.example.com/")
        empty, _ = create_site(session, "Nothing here yet", "https://empty.example.com/")
        for n in range(12):
            save_url(session, site, normalize_url(f"{BASE}{LONG}&page={n}"),
                     {"lastmod": f"2026-11-0{1 + n % 9}", "changefreq": "weekly",
                      "priority": "0.6"},
                     images=[normalize_url(f"{BASE}画像/ジャケット-{n}-正面から見た写真.jpg")])
        article, _ = save_url(session, site, ARTICLE, {"lastmod": "2026-11-20"},
                              alternates=[f"ja={ARTICLE}", f"en={ENGLISH}"])
        save_url(session, site, ENGLISH, {}, alternates=[f"ja={ARTICLE}", f"en={ENGLISH}"])
        write_url(session, site, check_url(site, ARTICLE, videos=[VIDEO]))
        # A news publisher: the article's edit page shows its Google News fields filled.
        update_site(session, site, {"news_name": "山の道具ニュース", "news_language": "ja"})
        save_news(session, site, ARTICLE, check_news(
            "2026-11-20T09:00:00+09:00", "冬山に向けたジャケットの選び方"))
        for path in ("", "shoes", "shoes/red-running-shoes", "about"):
            save_url(session, shop, f"https://shop.example.com/{path}", {"lastmod": "2026-11-24"})
        create_token(session, admin, "CMS on www", "write", [site])
        session.commit()
        ids = {"slug": site.slug, "empty_slug": empty.slug, "site_id": site.id,
               "shop_id": shop.id, "japanese_url_id": article.id,
               "url_id": min(url.id for url in site.urls)}
    jobs.regenerate(ids["shop_id"], app)
    generations = []
    for lastmod in ("2026-11-21", "2026-11-22", "2026-11-23"):
        generations.append(jobs.regenerate(ids["site_id"], app).id)
        with sessions() as session:
            save_url(session, session.get(Site, ids["site_id"]), ARTICLE, {"lastmod": lastmod})
            session.commit()
    with sessions() as session:
        site = session.get(Site, ids["site_id"])
        now = utcnow()
        session.add_all([
            Delivery(site_id=site.id, engine="indexnow", generation_id=generations[-1],
                     url_count=14, status="delivered", attempts=1, attempt_limit=4,
                     http_status=200, outcome="200: the URLs were received", created_at=now),
            Delivery(site_id=site.id, engine="gsc", generation_id=generations[-1],
                     target=site.sitemap_url, status="failed", attempts=4, attempt_limit=4,
                     http_status=403, created_at=now - timedelta(hours=1),
                     outcome="403: the service account is not an owner of the property"),
            Delivery(site_id=site.id, engine="indexnow", generation_id=generations[0],
                     url_count=3, status="pending", attempts=1, attempt_limit=4,
                     next_attempt_at=now + timedelta(minutes=5), created_at=now),
        ])
        update_site(session, site, {"indexnow_enabled": "on"})
        ids["task_id"] = tasks.start(session, app, "regenerate", site)
        ids["setup_task_id"] = _finished_setup_check(session, site)
        session.commit()
    ids["generation_id"] = generations[-1]
    return ids


def _finished_setup_check(session, site: Site) -> str:
    """A "Test my setup" as it ends on a host that passes some files and not others (the
    showcase's hosts are not reachable from here, so its outcome is written as a worker
    would write it)."""
    from webapp.said import english, said, said_plural
    from webapp.sites.setup_check import Outcome, said_lines
    from webapp.tasks import records

    folder = site.sitemap_url.rsplit("/", 1)[0]
    outcomes = [
        Outcome("", True, said("%(url)s answered %(status)s (%(type)s) and names the sitemap",
                               url=f"{site.base_url}robots.txt", status=200,
                               type="text/plain; charset=utf-8")),
        Outcome("", True, said("%(url)s answered %(status)s with the published file "
                               "(%(type)s)", url=site.sitemap_url, status=200,
                               type="application/xml; charset=utf-8")),
        Outcome("", False, said("%(url)s answered %(status)s: the site's server does not pass "
                                "it to this app", url=f"{folder}/sitemap-news.xml",
                                status=404)),
        Outcome("", False, said(
            "%(url)s answered %(status)s (%(type)s), but not with the file this app "
            "publishes: the site's server answers it itself, or keeps an old copy",
            url=f"{folder}/sitemap-blog-1.xml", status=200, type="text/html")),
        Outcome("", None, said(
            "%(url)s was not fetched: this server's setting %(setting)s keeps it from "
            "sending there (%(reason)s)", url=f"{site.base_url}{site.indexnow_key}.txt",
            setting="OUTBOUND_ALLOW", reason=said(
                "%(host)s resolves to %(kind)s; the server sends nothing there unless the "
                "operator allows it (OUTBOUND_ALLOW)", host="10.0.0.5",
                kind=said("a private address")))),
    ]
    lines = said_lines(outcomes, [said_plural(
        "%(num)s more sitemap file not checked (at most %(max)s are)",
        "%(num)s more sitemap files not checked (at most %(max)s are)", 3, max=20)])
    task = records.create(session, "setup check", site)
    task.status, task.message, task.finished_at = "done", english(lines), utcnow()
    task.result = {"said": lines}
    return task.id
