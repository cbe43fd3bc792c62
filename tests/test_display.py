"""URLs as people read them: decoded for display only, never where they are stored or sent."""

from __future__ import annotations

import re
import unicodedata

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from lxml import etree

from tests.builders import make_site
from webapp import jobs
from webapp.models import Delivery, Site, Url
from webapp.protocol import ProtocolError, normalize_url
from webapp.urls import save_url
from webapp.accounts.users import create_user
from webapp.views.display import readable_url

ENCODINGS = ["utf-8", "euc-jp", "shift_jis"]
# Path text as people type it: Japanese, accented Latin, Cyrillic, ASCII and delimiters,
# and the characters that must never be shown decoded (controls, bidi, spaces, fullwidth
# delimiters, escapes of reserved characters).
SEGMENT = st.lists(st.sampled_from(list(
    "abcXYZ019-_.~/?=&+;日本語の記事東京サイトマップｶﾅ表ßéü путьΩ%#"
    "\u202e\u200b\u0000\u3000\uff0f\uff1f\uff05") + ["%2F", "%3F", "%23", "%25", "%20", "%E3%81",
                                                       "%ff", "%C3%A9"]),
    max_size=30).map("".join)
HOSTS = st.sampled_from(["shop.example.com", "例え.jp", "bücher.de", "пример.рф", "한국.kr",
                         "xn--80ak6aa92e.com", "ex.jp:8080"])


def _url(host: str, text: str, encoding: str) -> str | None:
    try:
        return normalize_url(f"https://{host}/{text}", encoding)
    except ProtocolError:
        return None


@settings(max_examples=400, deadline=None)
@given(HOSTS, SEGMENT, st.sampled_from(ENCODINGS))
def test_what_is_shown_normalises_back_to_the_url_as_stored(host, text, encoding):
    stored = _url(host, text, encoding)
    if stored is None:
        return
    shown = readable_url(stored, encoding)
    assert normalize_url(shown, encoding) == stored
    assert readable_url(shown, encoding) == shown  # showing twice changes nothing


@settings(max_examples=300, deadline=None)
@given(HOSTS, SEGMENT)
def test_nothing_invisible_or_delimiting_is_ever_decoded(host, text):
    stored = _url(host, text, "utf-8")
    if stored is None:
        return
    shown = readable_url(stored)
    hidden = [char for char in shown if not char.isascii() and (
        unicodedata.category(char) in {"Cc", "Cf", "Zs", "Zl", "Zp", "Co", "Cn"}
        or set(unicodedata.normalize("NFKC", char)) & set("/?#%"))]
    assert hidden == []
    # every escape of an ASCII byte is left as it was
    assert re.findall(r"%[0-7][0-9A-F]", shown) == re.findall(r"%[0-7][0-9A-F]", stored)


@pytest.mark.parametrize(("stored", "encoding", "shown"), [
    ("https://xn--r8jz45g.jp/%E6%97%A5%E6%9C%AC%E8%AA%9E%E3%81%AE%E8%A8%98%E4%BA%8B", "utf-8",
     "https://例え.jp/日本語の記事"),
    ("https://ex.jp/a%2Fb%3Fc%23d%25e%20f?q=%E6%9D%B1%E4%BA%AC", "utf-8",
     "https://ex.jp/a%2Fb%3Fc%23d%25e%20f?q=東京"),
    ("https://ex.jp/%A5%B5%A5%A4%A5%C8", "euc-jp", "https://ex.jp/サイト"),
    ("https://ex.jp/%83T%83C%83g", "shift_jis", "https://ex.jp/%83T%83C%83g"),  # trail bytes
    ("https://ex.jp/%A5%B5", "utf-8", "https://ex.jp/%A5%B5"),  # not UTF-8: left as it is
    ("https://ex.jp/a%E2%80%AEb%E2%80%8Bc", "utf-8", "https://ex.jp/a%E2%80%AEb%E2%80%8Bc"),
    ("https://ex.jp/%EF%BC%8F%EF%BC%9F", "utf-8", "https://ex.jp/%EF%BC%8F%EF%BC%9F"),
    ("https://xn--80ak6aa92e.com/", "utf-8", "https://xn--80ak6aa92e.com/"),  # аррӏе: a spoof
    ("https://xn--e1afmkfd.xn--p1ai/", "utf-8", "https://пример.рф/"),
    ("https://xn--pple-43d.com/", "utf-8", "https://xn--pple-43d.com/"),  # Cyrillic а + Latin
])
def test_urls_are_decoded_where_it_is_safe(stored, encoding, shown):
    assert readable_url(stored, encoding) == shown


def sign_in(client, email: str, password: str) -> None:
    csrf = re.search(r'name="csrf_token" value="([^"]+)"', client.get("/sign-in").text).group(1)
    answer = client.post("/sign-in", data={"email": email, "password": password,
                                           "csrf_token": csrf})
    assert answer.status_code == 302


def test_pages_show_urls_decoded_and_keep_them_encoded(app, client):
    with app.extensions["db_sessionmaker"]() as session:
        site = make_site(session, name="日本のお店", base_url="https://例え.jp/")
        loc = normalize_url("https://例え.jp/日本語の記事")
        session.add(Url(site_id=site.id, loc=loc))
        site.url_count = 1
        create_user(session, "ann@example.com", "correct horse", "viewer")
        session.commit()
        slug = site.slug
    sign_in(client, "ann@example.com", "correct horse")

    listing = client.get(f"/sites/{slug}/urls").get_data(as_text=True)
    assert "https://例え.jp/日本語の記事</a>" in listing
    assert f'title="{loc}"' in listing  # the stored form on hover
    url_id = re.search(rf"/sites/{slug}/urls/(\d+)", listing).group(1)
    edit = client.get(f"/sites/{slug}/urls/{url_id}").get_data(as_text=True)
    assert ">https://例え.jp/日本語の記事</a>" in edit and f'href="{loc}"' in edit
    sites = client.get("/").get_data(as_text=True)
    assert "https://例え.jp/sitemap.xml" in sites
    exported = client.get(f"/sites/{slug}/urls.csv").get_data(as_text=True)
    assert loc in exported and "日本語" not in exported


def test_the_public_sitemap_view_shows_urls_decoded_and_links_them_encoded(app, client):
    with app.extensions["db_sessionmaker"]() as session:
        site = make_site(session, name="日本のお店", base_url="https://例え.jp/")
        loc = normalize_url("https://例え.jp/日本語の記事?q=%2F")
        save_url(session, site, loc, {})
        session.commit()
        site_id, slug = site.id, site.slug
    jobs.regenerate(site_id, app)
    with client.get(f"/sitemaps/{slug}/view/sitemap.xml") as answer:
        page = etree.fromstring(answer.data, etree.HTMLParser())
    assert page.xpath("//tbody//a/text()") == ["https://例え.jp/日本語の記事?q=%2F"]
    assert page.xpath("//tbody//a/@href") == [loc] and page.xpath("//tbody//a/@title") == [loc]
    with client.get(f"/sitemaps/{slug}/sitemap.xml") as published:
        assert loc.encode() in published.data  # published encoded


def test_the_overview_and_a_generations_diff_show_urls_decoded(app, client):
    with app.extensions["db_sessionmaker"]() as session:
        site = make_site(session, name="日本のお店", base_url="https://例え.jp/")
        loc = normalize_url("https://例え.jp/日本語の記事")
        save_url(session, site, normalize_url("https://例え.jp/"), {})
        session.commit()
        create_user(session, "ann@example.com", "correct horse", "viewer")
        session.commit()
        site_id, slug = site.id, site.slug
    first = jobs.regenerate(site_id, app)
    with app.extensions["db_sessionmaker"]() as session:
        save_url(session, session.get(Site, site_id), loc, {})
        session.commit()
    second = jobs.regenerate(site_id, app)
    assert (first.status, second.status) == ("succeeded", "succeeded")
    sign_in(client, "ann@example.com", "correct horse")
    overview = client.get(f"/sites/{slug}").get_data(as_text=True)
    assert ">https://例え.jp/sitemap.xml</a>" in overview
    diff = client.get(f"/sites/{slug}/generations/{second.id}").get_data(as_text=True)
    assert f'<li title="{loc}">https://例え.jp/日本語の記事</li>' in diff


def test_the_message_after_adding_a_url_shows_it_decoded(app, client):
    with app.extensions["db_sessionmaker"]() as session:
        site = make_site(session, name="日本のお店", base_url="https://例え.jp/")
        create_user(session, "ed@example.com", "correct horse", "editor")
        session.commit()
        slug = site.slug
    sign_in(client, "ed@example.com", "correct horse")
    form = client.get(f"/sites/{slug}/urls").get_data(as_text=True)
    token = re.search(r'name="csrf_token" value="([^"]+)"', form).group(1)
    page = client.post(f"/sites/{slug}/urls", data={
        "csrf_token": token, "loc": "https://例え.jp/日本語の記事"}, follow_redirects=True)
    assert "Added https://例え.jp/日本語の記事." in page.get_data(as_text=True)


def test_the_import_discover_and_engine_pages_name_the_site_decoded(app, client):
    """Placeholders, help and the targets announced read as the rest of the dashboard does."""
    with app.extensions["db_sessionmaker"]() as session:
        site = make_site(session, name="日本のお店", base_url="https://例え.jp/")
        session.add(Delivery(site_id=site.id, engine="gsc", target=site.sitemap_url,
                             status="failed", attempt_limit=4))
        session.add(Delivery(site_id=site.id, engine="ping", status="delivered", attempt_limit=4,
                             target="https://xn--r8jz45g.jp/ping?sitemap={sitemap}"))
        create_user(session, "ed@example.com", "correct horse", "editor")
        session.commit()
        slug = site.slug
    sign_in(client, "ed@example.com", "correct horse")
    for page in ("import", "discover", "announcements", "engines"):
        text = client.get(f"/sites/{slug}/{page}").get_data(as_text=True)
        # hovering shows the stored form; links go to it and to the slug (xn--r8jz45g-jp)
        shown = re.sub(r'(title|href|action)="[^"]*"', "", text)
        assert "https://例え.jp/" in shown and "xn--" not in shown, (page, re.findall(
            r".{60}xn--.{30}", shown, re.DOTALL))
    settings = client.get(f"/sites/{slug}/settings").get_data(as_text=True)
    assert "What /robots.txt on 例え.jp will answer:" in settings
