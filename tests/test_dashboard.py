"""The browser dashboard through Flask's test client: sign-in, roles on every route, CSRF, and
what each page shows and changes."""

from __future__ import annotations

import gzip
import io
import re
from datetime import timedelta
from pathlib import Path

import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st
from sqlalchemy import delete, func, select, update

from tests.builders import csrf_token, make_site, make_urls
from tests.probes import wait_for
from webapp import jobs
from webapp.models import (
    Delivery,
    Generation,
    SignInThrottle,
    Site,
    Url,
    UrlImage,
    User,
    utcnow,
)
from webapp.urls import health, save_url
from webapp.accounts.users import create_user
from webapp.views.http import IdConverter

PASSWORD = "correct horse"


pytestmark = pytest.mark.session_outside_app_context


def sign_in(client, email, password=PASSWORD):
    return client.post("/sign-in", data={"email": email, "password": password,
                                         "csrf_token": csrf_token(client)})


@pytest.fixture
def as_role(app, session):
    """A test client signed in with an account of the given role."""

    def signed_in(role: str):
        email = f"{role}@example.com"
        if session.scalar(select(User.id).where(User.email == email)) is None:
            create_user(session, email, PASSWORD, role)
            session.commit()
        client = app.test_client()
        assert sign_in(client, email).status_code == 302
        client.csrf = csrf_token(client, "/")
        return client

    return signed_in


@pytest.fixture
def shop(session):
    site = make_site(session)
    make_urls(session, site, 3, lastmod="2026-01-01")
    return site


def post(client, path, **data):
    return client.post(path, data={"csrf_token": client.csrf, **data})


def wait_for_task(client, location) -> dict:
    return wait_for(lambda: (state := client.get(location + ".json").json)["status"]
                    != "running" and state, 60, f"task {location} to finish")


# Access

PAGES = ["/", "/sites/shop", "/sites/shop/urls", "/sites/shop/import", "/sites/shop/generations",
         "/sites/shop/announcements", "/sites/shop/settings", "/sites/shop/urls.csv",
         "/sites/shop/urls/1", "/tokens", "/sites/shop/discover", "/sites/shop/engines"]
EDITOR_PAGES = ["/sites/new", "/sites/shop/delete"]
EDITOR_POSTS = ["/sites/new", "/sites/shop/settings", "/sites/shop/delete", "/sites/shop/regenerate",
                "/sites/shop/notify", "/sites/shop/preflight", "/sites/shop/rotate-key",
                "/sites/shop/urls", "/sites/shop/urls/1", "/sites/shop/urls/delete",
                "/sites/shop/import", "/sites/shop/generations/1/rollback",
                "/sites/shop/announcements/1/retry", "/sites/shop/discover",
                "/sites/shop/discover/accept", "/sites/shop/discover/ignore",
                "/sites/shop/discover/delete-excluded", "/sites/shop/engines/indexnow/resubmit",
                "/sites/shop/warnings/future-lastmod/dismiss"]
ADMIN_ROUTES = [("GET", "/users"), ("POST", "/users"), ("POST", "/users/1"),
                ("POST", "/users/1/delete")]


@pytest.mark.parametrize("path", PAGES + EDITOR_PAGES + ["/users", "/tasks/" + "0" * 32])
def test_every_page_asks_for_sign_in(client, shop, path):
    answer = client.get(path)
    assert answer.status_code == 302 and answer.headers["Location"].startswith("/sign-in?next=")


def test_every_form_post_needs_the_csrf_token(as_role, shop):
    editor = as_role("admin")
    for path in EDITOR_POSTS + [path for method, path in ADMIN_ROUTES if method == "POST"]:
        answer = editor.post(path, data={"name": "x"})
        assert answer.status_code == 400, path
        assert "CSRF" in answer.text


def test_a_viewer_reads_every_page_and_changes_nothing(as_role, shop, session):
    viewer = as_role("viewer")
    for path in PAGES:
        assert viewer.get(path).status_code == 200, path
    for path in EDITOR_PAGES:
        assert viewer.get(path).status_code == 403, path
    for path in EDITOR_POSTS:
        answer = post(viewer, path, name="x", confirm="shop", loc=f"{shop.base_url}new")
        assert answer.status_code == 403, path
        assert "needs the editor role" in answer.text
    for method, path in ADMIN_ROUTES:
        assert viewer.open(path, method=method, data={"csrf_token": viewer.csrf}).status_code == 403
    session.expire_all()
    assert session.scalar(select(func.count()).select_from(Url)) == 3
    assert session.scalar(select(func.count()).select_from(Site)) == 1
    page = viewer.get("/sites/shop").text
    assert "Regenerate now" not in page and "New site" not in viewer.get("/").text


def test_an_editor_may_not_manage_accounts(as_role, shop):
    editor = as_role("editor")
    for method, path in ADMIN_ROUTES:
        assert editor.open(path, method=method, data={"csrf_token": editor.csrf}).status_code == 403
    assert "Users" not in editor.get("/").text


def test_sign_in_pauses_after_repeated_failures(client, session):
    create_user(session, "ann@example.com", PASSWORD, "editor")
    session.commit()
    before = utcnow()
    for _ in range(5):
        answer = sign_in(client, "ann@example.com", "wrong password")
        assert answer.status_code == 401 and "Wrong e-mail address or password" in answer.text
    answer = sign_in(client, "ann@example.com", PASSWORD)  # the right one, but paused now
    assert answer.status_code == 401 and "too many failed sign-ins" in answer.text
    paused = session.scalars(select(SignInThrottle.locked_until)).all()
    # A minute from the fifth failure, which came between `before` and now (however long the
    # sign-ins took on a busy machine).
    pause = max(until or before for until in paused)
    assert before + timedelta(minutes=1) <= pause <= utcnow() + timedelta(minutes=1)
    session.execute(update(SignInThrottle).values(locked_until=utcnow() - timedelta(seconds=1)))
    session.commit()
    assert sign_in(client, "ann@example.com", PASSWORD).status_code == 302


def test_unknown_accounts_get_the_same_answer(client):
    answer = sign_in(client, "nobody@example.com", "whatever1")
    assert answer.status_code == 401 and "Wrong e-mail address or password" in answer.text


def test_sign_in_returns_to_the_page_asked_for_but_never_to_another_host(client, session, shop):
    create_user(session, "ann@example.com", PASSWORD, "viewer")
    session.commit()
    data = {"email": "ann@example.com", "password": PASSWORD, "csrf_token": csrf_token(client)}
    answer = client.post("/sign-in?next=/sites/shop", data=data)
    assert answer.headers["Location"] == "/sites/shop"
    other = client.application.test_client()
    data["csrf_token"] = csrf_token(other)
    answer = other.post("/sign-in?next=//evil.example/", data=data)
    assert answer.headers["Location"] == "/"


@pytest.mark.parametrize("number", ["\u00b2", "\u0661\u00b2", "9" * 30])
def test_page_numbers_and_counts_that_are_not_plain_digits_are_no_error(as_role, session, shop,
                                                                         number):
    """Superscript digits (isdigit() says yes, int() says no) and numbers past any id, in a
    pager's `after` or the URL form's video count, read as none: never a 500."""
    editor = as_role("editor")
    assert editor.get(f"/sites/shop/discover?after={number}").status_code == 200
    url_id = session.scalar(select(Url.id).where(Url.site_id == shop.id))
    answer = post(editor, f"/sites/shop/urls/{url_id}", loc=f"{shop.base_url}page/0",
                  video_count=number)
    assert answer.status_code in (302, 422)


def test_a_new_password_signs_out_other_sessions(as_role, app, session):
    admin = as_role("admin")
    user = session.scalar(select(User).where(User.email == "admin@example.com"))
    assert post(admin, f"/users/{user.id}", password="another secret").status_code == 302
    assert admin.get("/").status_code == 302  # this session's token no longer matches


def test_pages_carry_security_headers_and_cookie_flags(as_role, client):
    answer = client.get("/sign-in")
    assert "frame-ancestors 'none'" in answer.headers["Content-Security-Policy"]
    assert answer.headers["X-Content-Type-Options"] == "nosniff"
    assert answer.headers["X-Frame-Options"] == "DENY"
    cookie = answer.headers["Set-Cookie"]
    assert "HttpOnly" in cookie and "SameSite=Lax" in cookie
    assert as_role("viewer").get("/").headers["Cache-Control"] == "no-store"


# Sites

def test_an_editor_creates_edits_and_deletes_a_site(as_role, session, app):
    editor = as_role("editor")
    answer = post(editor, "/sites/new", name="Blog", base_url="ftp://blog.example.com/")
    assert answer.status_code == 422 and "http" in answer.text and 'aria-invalid="true"' in answer.text
    answer = post(editor, "/sites/new", name="Blog", base_url="https://blog.example.com/")
    assert answer.headers["Location"] == "/sites/blog"
    settings = editor.get("/sites/blog/settings").text
    for name in ("schedule_mode", "indexnow_enabled", "ping_urls", "robots_txt", "gsc_credentials"):
        assert f'name="{name}"' in settings
    answer = post(editor, "/sites/blog/settings", schedule="often")
    assert answer.status_code == 422 and "schedule &#39;often&#39;" in answer.text
    answer = post(editor, "/sites/blog/settings", schedule="every 2h", default_priority="0.4")
    assert answer.status_code == 302
    site = session.scalar(select(Site).where(Site.slug == "blog"))
    assert (site.schedule, site.default_priority) == ("every 2h", 0.4)
    old_key = site.indexnow_key
    post(editor, "/sites/blog/rotate-key")
    session.refresh(site)
    assert site.indexnow_key != old_key
    assert post(editor, "/sites/blog/delete", confirm="wrong").headers["Location"].endswith(
        "/sites/blog/delete")
    assert post(editor, "/sites/blog/delete", confirm="blog").headers["Location"] == "/"
    session.expire_all()
    assert session.scalar(select(Site).where(Site.slug == "blog")) is None


def test_the_sites_page_shows_counts_runs_and_announcements(as_role, app, session, shop):
    jobs.regenerate(shop.id, app)
    session.add(Delivery(site_id=shop.id, engine="indexnow", status="failed", attempts=1,
                         attempt_limit=4, url_count=3))
    session.commit()
    page = as_role("viewer").get("/").text
    assert "Shop" in page and ">3</td>" in page and "succeeded" in page
    assert "<li>IndexNow <span class=\"status s-failed\">failed" in page


def test_regenerate_now_runs_in_the_background_and_reports_progress(as_role, app, session, shop):
    editor = as_role("editor")
    answer = post(editor, "/sites/shop/regenerate")
    location = answer.headers["Location"]
    assert location.startswith("/tasks/")
    assert 'data-task="' in editor.get(location).text
    state = wait_for_task(editor, location)
    assert state["status"] == "done" and "succeeded, 3 URLs" in state["message"]
    assert (state["done"], state["total"]) == (3, 3)
    assert session.scalar(select(Generation.status)) == "succeeded"


def test_health_warnings_name_what_to_fix(as_role, session):
    site = make_site(session)
    make_urls(session, site, 12, lastmod="2026-01-01", priority=0.9)
    # Stored before input refused a lastmod more than a day ahead: health still names it.
    url, _ = save_url(session, site, f"{site.base_url}future")
    url.lastmod = "2999-01-01"
    session.commit()
    page = as_role("viewer").get("/sites/shop").text
    assert "Every URL has a high priority" not in page  # the future one has none
    assert "1 URLs have a lastmod in the future" in page
    assert "12 of 13 URLs share the lastmod 2026-01-01" in page


@settings(max_examples=40, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.lists(st.tuples(st.sampled_from([None, "2026-01-01", "2026-01-02", "2026-02-01"]),
                          st.sampled_from([None, 0.5, 0.8, 1.0]), st.booleans()), max_size=30),
       st.sampled_from([None, 0.5, 0.9]))
@example([("2026-01-01", 1.0, False)] * 10 + [(None, 0.5, True)], None)  # all high, a majority
@example([("2026-01-01", None, False)] * 10, 0.9)  # high by the site's default
@example([("2026-01-01", 0.8, False)] * 5 + [("2026-01-02", 0.8, False)] * 5, None)  # a tie
def test_the_lastmod_and_priority_warnings_match_counting_every_url(session, rows, default):
    """Found from the middle row of the lastmod index and the first URL below 0.8, checked
    against counting every live URL."""
    site = session.scalar(select(Site)) or make_site(session)
    site.default_priority = default
    session.execute(delete(Url))
    session.add_all(Url(site_id=site.id, loc=f"{site.base_url}{n}", lastmod=lastmod,
                        priority=priority, deleted_at=utcnow() if deleted else None)
                    for n, (lastmod, priority, deleted) in enumerate(rows))
    session.commit()
    live = [(lastmod, priority) for lastmod, priority, deleted in rows if not deleted]
    lastmods = [lastmod for lastmod, _ in live]
    expected = [f"{lastmods.count(value)} of {len(live)} URLs share the lastmod {value}"
                for value in sorted(set(lastmods) - {None})
                if len(live) >= 10 and lastmods.count(value) > len(live) / 2]
    if len(live) >= 10 and all((p if p is not None else default or 0) >= 0.8 for _, p in live):
        expected.insert(0, "Every URL has a high priority")
    titles = [w.title for w in health.warnings(session, site)
              if "share" in w.title or "priority" in w.title]
    assert titles == expected


# URLs

def test_the_url_list_pages_by_keyset_and_searches_by_path(as_role, session):
    site = make_site(session)
    make_urls(session, site, 120)
    viewer = as_role("viewer")
    first = viewer.get("/sites/shop/urls").text
    shown = re.findall(r'/urls/\d+">([^<]+)</a>', first)
    assert len(shown) == 50 and shown == sorted(shown)
    next_link = re.search(r'href="([^"]+)" rel="next"', first).group(1).replace("&amp;", "&")
    second = re.findall(r'/urls/\d+">([^<]+)</a>', viewer.get(next_link).text)
    assert second[0] > shown[-1] and not set(second) & set(shown)
    found = re.findall(r'/urls/\d+">([^<]+)</a>', viewer.get("/sites/shop/urls?q=/page/11").text)
    assert found == [f"{site.base_url}page/11"] + [f"{site.base_url}page/11{n}" for n in range(10)]
    newest = re.findall(r'/urls/\d+">([^<]+)</a>', viewer.get("/sites/shop/urls?sort=newest").text)
    assert newest[0] == f"{site.base_url}page/119"


def test_urls_are_added_edited_and_deleted_with_messages_by_field(as_role, session, shop):
    editor = as_role("editor")
    answer = post(editor, "/sites/shop/urls", loc=f"{shop.base_url}new", lastmod="yesterday")
    assert answer.status_code == 422 and "lastmod &#39;yesterday&#39;" in answer.text
    assert 'id="e-lastmod"' in answer.text
    assert post(editor, "/sites/shop/urls", loc=f"{shop.base_url}new", lastmod="2026-02-02",
                priority="0.7").status_code == 302
    url = session.scalar(select(Url).where(Url.loc == f"{shop.base_url}new"))
    answer = post(editor, f"/sites/shop/urls/{url.id}", lastmod="2026-03-03", priority="2")
    assert answer.status_code == 422 and "priority" in answer.text
    answer = post(editor, f"/sites/shop/urls/{url.id}", lastmod="2026-03-03",
                  images=f"{shop.base_url}a.jpg", alternates=f"en={url.loc}\nde={shop.base_url}de")
    assert answer.status_code == 302
    session.refresh(url)
    assert url.lastmod == "2026-03-03" and [i.loc for i in url.images] == [f"{shop.base_url}a.jpg"]
    ids = session.scalars(select(Url.id).where(Url.site_id == shop.id)).all()
    editor.post("/sites/shop/urls/delete", data={"csrf_token": editor.csrf, "id": ids[:2]})
    session.expire_all()
    assert session.scalar(select(func.count()).select_from(Url).where(
        Url.deleted_at.is_not(None))) == 2
    assert "(deleted)" in editor.get("/sites/shop/urls?status=deleted").text


def test_adding_a_url_that_exists_keeps_the_fields_left_empty_and_says_what_changed(
        as_role, session, shop):
    editor = as_role("editor")
    loc = f"{shop.base_url}page/0"
    post(editor, f"/sites/shop/urls/{shop_url_id(session, loc)}", lastmod="2026-01-01",
         changefreq="daily", priority="0.3")
    answer = post(editor, "/sites/shop/urls", loc=loc, priority="0.9")
    url = session.scalar(select(Url).where(Url.loc == loc))
    assert answer.status_code == 302 and answer.location.endswith(f"/sites/shop/urls/{url.id}")
    assert (url.lastmod, url.changefreq, url.priority) == ("2026-01-01", "daily", 0.9)
    page = editor.get(answer.location).text
    assert f"Updated {loc}, which was already in this site." in page
    assert "Priority changed from 0.3 to 0.9." in page
    assert "The fields you left empty kept their stored values" in page
    assert 'value="2026-01-01"' in page  # the page shows every value it has now
    same = editor.get(post(editor, "/sites/shop/urls", loc=loc).location).text
    assert f"{loc} is already in this site with these values; nothing changed." in same
    session.expire_all()
    assert (url.lastmod, url.changefreq, url.priority) == ("2026-01-01", "daily", 0.9)


def shop_url_id(session, loc) -> int:
    return session.scalar(select(Url.id).where(Url.loc == loc))


def test_adding_a_url_with_a_fragment_stores_the_page_once_and_says_so(as_role, session, shop):
    editor = as_role("editor")
    answer = post(editor, "/sites/shop/urls", loc=f"{shop.base_url}new#reviews")
    page = editor.get(answer.location).text
    assert "the fragment #reviews was removed" in page and f"Added {shop.base_url}new." in page
    assert session.scalars(select(Url.loc).where(Url.loc.contains("new"))).all() == [
        f"{shop.base_url}new"]


def test_every_field_error_of_a_form_is_shown_at_once(as_role, session, shop):
    editor = as_role("editor")
    answer = post(editor, "/sites/shop/urls", loc="ftp://x", lastmod="yesterday",
                  changefreq="often", priority="2")
    assert answer.status_code == 422
    for name in ("loc", "lastmod", "changefreq", "priority"):
        assert f'id="e-{name}"' in answer.text, name
    url_id = shop_url_id(session, f"{shop.base_url}page/0")
    answer = post(editor, f"/sites/shop/urls/{url_id}", lastmod="soon", priority="-1",
                  images="not a url", alternates="de")
    assert answer.status_code == 422
    for name in ("lastmod", "priority", "images", "alternates"):
        assert f'id="e-{name}"' in answer.text, name
    answer = post(editor, "/sites/new", name=" ", base_url="blog.example.com", encoding="rot13",
                  sitemap_url="https://blog.example.com/maps")
    assert answer.status_code == 422
    for name in ("name", "base_url", "encoding"):
        assert f'id="e-{name}"' in answer.text, name
    answer = post(editor, "/sites/shop/settings", schedule="often", timezone="Mars/Base",
                  max_urls_per_file="0", default_priority="3")
    assert answer.status_code == 422
    for name in ("schedule", "timezone", "max_urls_per_file", "default_priority"):
        assert f'id="e-{name}"' in answer.text, name
    assert session.scalar(select(func.count()).select_from(Site)) == 1
    session.expire_all()
    assert session.get(Site, shop.id).max_urls_per_file != 0


def test_a_nul_character_in_a_form_or_query_is_a_clear_400(as_role, session, shop):
    editor = as_role("editor")
    answer = post(editor, "/sites/shop/urls", loc=f"{shop.base_url}new\x00", lastmod="2026-02-02")
    assert answer.status_code == 400 and "&#39;loc&#39; contains a NUL" in answer.text
    answer = editor.get("/sites/shop/urls?q=a%00b")
    assert answer.status_code == 400 and "&#39;q&#39; contains a NUL" in answer.text
    assert session.scalar(select(func.count()).select_from(Url).where(
        Url.loc.contains("new"))) == 0


def test_a_url_of_another_site_is_not_found(as_role, session, shop):
    other = make_site(session, name="Blog", base_url="https://blog.example.com/")
    make_urls(session, other, 1)
    url_id = session.scalar(select(Url.id).where(Url.site_id == other.id))
    assert as_role("viewer").get(f"/sites/shop/urls/{url_id}").status_code == 404


def test_export_is_a_csv_the_import_reads_back(as_role, shop):
    answer = as_role("viewer").get("/sites/shop/urls.csv")
    assert answer.mimetype == "text/csv"
    lines = answer.text.splitlines()
    assert lines[0] == ("loc,lastmod,changefreq,priority,images,image_titles,image_captions,"
                        "alternates")
    assert lines[1] == f"{shop.base_url}page/0,2026-01-01,,,,,,"
    assert len(lines) == 4


def test_the_cli_export_is_the_dashboards_and_imports_back_into_a_fresh_site(as_role, runner,
                                                                          session, shop,
                                                                          tmp_path):
    save_url(session, shop, f"{shop.base_url}page/0", {"changefreq": "daily", "priority": "0.8"},
             images=[f"{shop.base_url}a.jpg", "https://cdn.example.net/b.jpg"],
             alternates=[f"en={shop.base_url}page/0", f"de={shop.base_url}de/page/0"])
    session.flush()
    session.execute(update(UrlImage).where(UrlImage.loc == f"{shop.base_url}a.jpg").values(
        title="Front, \"quoted\"\nsecond line", caption="C:\\new"))
    session.commit()
    downloaded = as_role("viewer").get("/sites/shop/urls.csv").get_data()
    assert runner.invoke(args=["urls", "export", "shop", str(tmp_path / "urls.csv")]).exit_code == 0
    assert (tmp_path / "urls.csv").read_bytes() == downloaded
    assert runner.invoke(args=["urls", "export", "shop", "-"]).stdout_bytes == downloaded
    assert b'Front, ""quoted""\\nsecond line' in downloaded  # one line per image, escaped
    copy = make_site(session, "Copy", shop.base_url, sitemap_url=f"{shop.base_url}copy.xml")
    result = runner.invoke(args=["urls", "import", copy.slug, str(tmp_path / "urls.csv")])
    assert result.exit_code == 0 and result.stdout.startswith("added 3,"), result.output

    def stored(site):
        session.expire_all()
        return [(u.loc, u.lastmod, u.changefreq, u.priority,
                 [(i.loc, i.title, i.caption) for i in u.images],
                 [(a.hreflang, a.href) for a in u.alternates])
                for u in session.scalars(select(Url).where(Url.site_id == site.id)
                                         .order_by(Url.loc))]

    assert stored(copy) == stored(shop)
    assert stored(copy)[0][4][0] == (f"{shop.base_url}a.jpg", 'Front, "quoted"\nsecond line',
                                     "C:\\new")


def test_an_uploaded_gzip_list_and_a_shift_jis_csv_are_imported(as_role, session, shop):
    editor = as_role("editor")
    for name, content, encoding in (
            ("urls.txt.gz", gzip.compress(f"{shop.base_url}gz-1\n".encode()), "utf-8"),
            ("urls.csv", f"loc\n{shop.base_url}ソフト\n".encode("cp932"), "shift_jis")):
        answer = editor.post("/sites/shop/import", content_type="multipart/form-data", data={
            "csrf_token": editor.csrf, "file": (io.BytesIO(content), name), "encoding": encoding})
        state = wait_for_task(editor, answer.headers["Location"])
        assert state["message"].startswith("added 1, "), state
    assert session.scalar(select(func.count()).select_from(Url)) == 5


def test_a_shift_jis_upload_read_as_utf8_says_which_line_and_encoding(as_role, session, shop):
    editor = as_role("editor")
    page = editor.get("/sites/shop/import").text
    assert '<option value="shift_jis">Shift_JIS</option>' in page
    answer = editor.post("/sites/shop/import", content_type="multipart/form-data", data={
        "csrf_token": editor.csrf, "encoding": "utf-8", "file": (io.BytesIO(
            f"loc\n{shop.base_url}ok\n{shop.base_url}ソフト\n".encode("cp932")), "urls.csv")})
    state = wait_for_task(editor, answer.headers["Location"])
    assert state["status"] == "failed"
    assert state["message"].startswith("line 3 of the file is not UTF-8 text: the file looks "
                                       "like Shift_JIS. Choose the encoding shift_jis")
    assert session.scalar(select(func.count()).select_from(Url)) == 3  # nothing of it stored
    answer = editor.post("/sites/shop/import", content_type="multipart/form-data", data={
        "csrf_token": editor.csrf, "encoding": "latin-9", "file": (io.BytesIO(b"x"), "urls.csv")})
    assert answer.status_code == 422 and "encoding &#39;latin-9&#39;: must be one of" in answer.text


def test_an_export_returns_its_database_connection_when_the_download_ends(app, as_role, shop):
    # The rows are streamed after the request's own session was closed: the stream must close
    # what it opened, or the connection stays "idle in transaction" (holding a lock on the
    # urls table, so a TRUNCATE or migration waits) until garbage collection finds it.
    viewer = as_role("viewer")
    pool = app.extensions["db_engine"].pool
    before = pool.checkedout()
    answer = viewer.get("/sites/shop/urls.csv")
    assert len(answer.get_data(as_text=True).splitlines()) == 4
    answer.close()  # as a WSGI server does once the body is sent
    assert pool.checkedout() == before


def test_import_of_a_pasted_list_reports_rejections(as_role, session, shop):
    editor = as_role("editor")
    answer = post(editor, "/sites/shop/import",
                  pasted=f"{shop.base_url}one\nhttps://elsewhere.example/x\n{shop.base_url}two")
    state = wait_for_task(editor, answer.headers["Location"])
    assert state["status"] == "done"
    assert state["message"].startswith("added 2, updated 0")
    assert "line 2: loc 'https://elsewhere.example/x': is outside the site" in state["message"]


def test_import_of_an_uploaded_csv_file(as_role, session, shop):
    editor = as_role("editor")
    data = {"csrf_token": editor.csrf, "file": (io.BytesIO(
        f"loc,lastmod\n{shop.base_url}csv-1,2026-04-04\n".encode()), "urls.csv")}
    answer = editor.post("/sites/shop/import", data=data, content_type="multipart/form-data")
    assert wait_for_task(editor, answer.headers["Location"])["message"].startswith("added 1")
    assert session.scalar(select(Url.lastmod).where(Url.loc == f"{shop.base_url}csv-1")) == \
        "2026-04-04"


def test_import_of_a_sitemap_index_fetched_from_a_url(as_role, session, engine):
    base = engine.url_for("/")
    make_site(session, base_url=base)
    ns = 'xmlns="http://www.sitemaps.org/schemas/sitemap/0.9"'
    engine.expect_request("/sitemap.xml").respond_with_data(
        f'\ufeff<?xml version="1.0"?>\n<sitemapindex {ns}>\n  <sitemap><loc> {base}part-1.xml.gz '
        f'</loc></sitemap>\n</sitemapindex>')
    engine.expect_request("/part-1.xml.gz").respond_with_data(gzip.compress(
        f'<urlset {ns} xmlns:image="http://www.google.com/schemas/sitemap-image/1.1"><url>'
        f'<loc>{base}a</loc><lastmod>2026-05-05</lastmod><image:image><image:loc>{base}i.jpg'
        f'</image:loc></image:image></url><url><loc>\n {base}b\n</loc></url></urlset>'.encode()))
    editor = as_role("editor")
    answer = post(editor, "/sites/shop/import", sitemap_url=base + "sitemap.xml")
    state = wait_for_task(editor, answer.headers["Location"])
    assert state["status"] == "done" and state["message"].startswith("added 2"), state
    assert session.scalar(select(Url.lastmod).where(Url.loc == f"{base}a")) == "2026-05-05"


def test_the_import_form_rewrites_an_http_sitemaps_origin_when_asked(as_role, session, shop):
    editor = as_role("editor")
    sitemap = ('<urlset xmlns="http://www.sitemaps.org/schemas/sitemap/0.9">\n'
               '<url><loc>http://shop.example.com/old</loc></url>\n</urlset>').encode()
    assert 'name="rewrite_origin"' in editor.get("/sites/shop/import").text
    for rewrite, outcome in (({}, "the scheme differs"), ({"rewrite_origin": "on"}, "added 1,")):
        form = {"csrf_token": editor.csrf, "file": (io.BytesIO(sitemap), "sitemap.xml"), **rewrite}
        answer = editor.post("/sites/shop/import", data=form, content_type="multipart/form-data")
        state = wait_for_task(editor, answer.headers["Location"])
        assert outcome in state["message"], state
    assert session.scalar(select(Url.loc).where(Url.loc == "https://shop.example.com/old"))


def test_a_malformed_sitemap_is_refused_whole(as_role, session, shop):
    editor = as_role("editor")
    data = {"csrf_token": editor.csrf, "file": (io.BytesIO(
        b'<urlset xmlns="http://www.sitemaps.org/schemas/sitemap/0.9"><url><loc>'
        + f"{shop.base_url}ok".encode() + b"</loc></url><url><loc>broken"), "sitemap.xml")}
    answer = editor.post("/sites/shop/import", data=data, content_type="multipart/form-data")
    state = wait_for_task(editor, answer.headers["Location"])
    assert state["status"] == "failed" and "not well-formed XML" in state["message"]
    assert session.scalar(select(func.count()).select_from(Url)) == 3


def test_an_import_with_nothing_to_import_says_so(as_role, shop):
    answer = post(as_role("editor"), "/sites/shop/import")
    assert answer.status_code == 422 and "choose a file" in answer.text


# History and announcements

def test_generations_show_the_diff_and_roll_back(as_role, app, session, shop):
    first = jobs.regenerate(shop.id, app)
    save_url(session, shop, f"{shop.base_url}added")
    session.commit()
    second = jobs.regenerate(shop.id, app)
    editor = as_role("editor")
    page = editor.get(f"/sites/shop/generations/{second.id}").text
    assert "1 added, 0 removed, 0 changed" in page and f"{shop.base_url}added" in page
    assert "Roll back to this" in editor.get("/sites/shop/generations").text
    answer = post(editor, f"/sites/shop/generations/{first.id}/rollback")
    assert answer.status_code == 302
    rolled = session.scalar(select(Generation).order_by(Generation.id.desc()).limit(1))
    assert rolled.rollback_of == first.id


def test_the_ledger_explains_statuses_and_retries(as_role, session, shop, engine):
    shop.indexnow_endpoint = engine.url_for("/indexnow")
    shop.indexnow_enabled = True
    delivery = Delivery(site_id=shop.id, engine="indexnow", status="failed", attempts=1,
                        attempt_limit=4, url_count=1, urls=f"{shop.base_url}page/0",
                        http_status=403, outcome="403 Forbidden: the key is not valid")
    session.add(delivery)
    session.commit()
    engine.expect_request("/indexnow").respond_with_data("", status=200)
    editor = as_role("editor")
    page = editor.get("/sites/shop/announcements").text
    assert "403 Forbidden: the key is not valid" in page and "keep the key file online" in page
    answer = post(editor, f"/sites/shop/announcements/{delivery.id}/retry")
    assert "delivered" in editor.get(answer.headers["Location"]).text
    session.refresh(delivery)
    assert (delivery.status, delivery.attempts) == ("delivered", 2)


# Users

def test_admins_manage_accounts_and_keep_one_admin(as_role, session):
    admin = as_role("admin")
    answer = post(admin, "/users", email="not an address", password="long enough now",
                  role="viewer")
    assert answer.status_code == 422 and "email" in answer.text
    assert post(admin, "/users", email="bob@example.com", password="long enough now",
                role="editor").status_code == 302
    bob = session.scalar(select(User).where(User.email == "bob@example.com"))
    post(admin, f"/users/{bob.id}", role="viewer")
    session.refresh(bob)
    assert bob.role == "viewer"
    me = session.scalar(select(User).where(User.email == "admin@example.com"))
    answer = post(admin, f"/users/{me.id}", role="viewer")
    assert "the last admin cannot stop being one" in admin.get(answer.headers["Location"]).text
    post(admin, f"/users/{bob.id}/delete")
    session.expire_all()
    assert session.scalar(select(User).where(User.email == "bob@example.com")) is None


def test_the_lastmod_order_pages_without_gaps_or_repeats(as_role, session):
    site = make_site(session)
    for n in range(60):
        save_url(session, site, f"{site.base_url}p/{n}", {"lastmod": f"2026-01-{1 + n % 3:02d}"})
    session.commit()
    viewer = as_role("viewer")
    page = viewer.get("/sites/shop/urls?sort=lastmod").text
    first = re.findall(r'/urls/\d+">([^<]+)</a>', page)
    next_link = re.search(r'href="([^"]+)" rel="next"', page).group(1).replace("&amp;", "&")
    second = re.findall(r'/urls/\d+">([^<]+)</a>', viewer.get(next_link).text)
    assert len(first) == 50 and len(second) == 10
    assert sorted(first + second) == sorted(f"{site.base_url}p/{n}" for n in range(60))
    assert all(f"{site.base_url}p/{n}" in first for n in range(2, 60, 3))  # newest day first


def test_rows_rejected_by_the_last_import_show_in_the_sites_health(as_role, session, shop):
    editor = as_role("editor")
    answer = post(editor, "/sites/shop/import", pasted="https://elsewhere.example/x")
    wait_for_task(editor, answer.headers["Location"])
    page = editor.get("/sites/shop").text
    assert "The last import rejected 1 row<" in page and "is outside the site" in page
    # The import belongs to the site, not to its slug: it follows a rename, and a new site
    # that takes the old slug does not inherit it.
    session.expire_all()
    session.get(Site, shop.id).slug = "store"
    session.commit()
    make_site(session, "Shop", "https://shop2.example.com/")
    assert "The last import rejected 1 row<" in editor.get("/sites/store").text
    assert "The last import rejected" not in editor.get("/sites/shop").text


@pytest.mark.parametrize("path", [
    "/sites/shop/urls?sort=newest&after=99999999999999999999999",
    "/sites/shop/urls?sort=newest&after=%C2%B2",
    "/sites/shop/urls?sort=lastmod&after=x|99999999999999999999999",
    # Past the id columns (32 bits on PostgreSQL), within 18 digits.
    "/sites/shop/urls?sort=newest&after=2147483648",
    "/sites/shop/urls?sort=lastmod&after=x|2147483648",
    "/sites/shop/urls/2147483648",
    "/sites/shop/generations/2147483648",
    "/sites/shop/urls?slug=x&_external=1&_anchor=y",
    "/sites/shop/urls/99999999999999999999999",
    "/sites/shop/generations/99999999999999999999999",
])
def test_odd_addresses_get_a_page_or_a_404_never_a_500(as_role, session, path):
    site = make_site(session)
    make_urls(session, site, 60)
    answer = as_role("viewer").get(path)
    assert answer.status_code in (200, 404)
    if "_anchor" in path:
        assert "_external" not in answer.text and "#y" not in answer.text


@pytest.mark.parametrize("address, words", [
    ("http://[::1", "sitemap_url"), ("http://127.0.0.1:1/sitemap.xml", "the site&#39;s host"),
    ("https://shop.example.com:99999/x", "sitemap_url"),
])
def test_an_import_address_off_the_sites_host_is_refused_and_leaves_nothing(as_role, app, shop,
                                                                             address, words):
    answer = post(as_role("editor"), "/sites/shop/import", sitemap_url=address)
    assert answer.status_code == 422 and words in answer.text
    uploads = Path(app.config["INSTANCE_PATH"]) / "uploads"
    assert not list(uploads.glob("*")) if uploads.exists() else True


def test_bulk_delete_ignores_ids_that_are_not_ids(as_role, session, shop):
    editor = as_role("editor")
    answer = editor.post("/sites/shop/urls/delete", data={
        "csrf_token": editor.csrf, "id": ["²", "99999999999999999999999", "x", "2147483648"]})
    assert answer.status_code == 302
    assert len(session.scalars(select(Url).where(Url.deleted_at.is_(None))).all()) == 3


def test_an_id_past_the_id_columns_is_a_404_on_every_route_that_takes_one(app, as_role, session,
                                                                            shop):
    admin = as_role("admin")
    routes = [rule for rule in app.url_map.iter_rules()
              if any(isinstance(converter, IdConverter)
                     for converter in rule._converters.values())]
    assert len(routes) >= 6
    for rule in routes:
        for number in (2**31, 2**32, 10**17):
            values = {name: number if isinstance(converter, IdConverter) else "shop"
                      for name, converter in rule._converters.items()}
            path = rule.build(values, append_unknown=False)[1]
            method = "GET" if "GET" in rule.methods else "POST"
            answer = admin.open(path, method=method, data={"csrf_token": admin.csrf})
            assert answer.status_code == 404, (method, path, answer.status_code)


def test_saving_a_url_keeps_the_titles_and_captions_of_its_images(as_role, session, shop):
    """The edit page names images by their addresses; saving it (or adding one image) must
    not erase the titles and captions an import or the CSV stored for them."""
    editor = as_role("editor")
    url = session.scalar(select(Url).where(Url.loc == f"{shop.base_url}page/0"))
    url.images = [UrlImage(loc=f"{shop.base_url}a.jpg", title="A shoe", caption="Red",
                           position=0)]
    session.commit()
    page = editor.get(f"/sites/shop/urls/{url.id}")
    assert f"{shop.base_url}a.jpg" in page.text
    answer = post(editor, f"/sites/shop/urls/{url.id}",
                  images=f"{shop.base_url}a.jpg\n{shop.base_url}b.jpg")
    assert answer.status_code == 302
    session.expire_all()
    assert [(i.loc, i.title, i.caption) for i in session.get(Url, url.id).images] == [
        (f"{shop.base_url}a.jpg", "A shoe", "Red"), (f"{shop.base_url}b.jpg", None, None)]
