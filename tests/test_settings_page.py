"""A site's settings page: human labels and the right control for each setting, the schedule
picker and its preview, the robots.txt editor and its preview, the Search Console service
account (uploaded, sealed, tested against a fake token endpoint), the IndexNow key file check
against a fake site, the "How to publish" page, and the XSL stylesheet off by default."""

from __future__ import annotations

import json
import re
from datetime import UTC, datetime

import pytest
from alembic import command
from sqlalchemy import select, text
from werkzeug import Response

from tests.builders import free_port, make_site, make_urls, signed_in_page
from tests.conftest import alembic_config
from tests.test_api import Api
from tests.test_dashboard import as_role, post  # noqa: F401  (fixtures)
from tests.test_notify import service_account_file
from webapp import jobs, notify
from webapp.accounts import sealing
from webapp.accounts.tokens import create_token
from webapp.db import make_engine
from webapp.errors import InvalidValue
from webapp.models import Delivery, ServiceAccountKey, Site, User
from webapp.schedules import picker as schedule_picker
from webapp.sites import publish_guide

SETTINGS = "/sites/shop/settings"


pytestmark = pytest.mark.session_outside_app_context


@pytest.fixture
def shop(session):
    return make_site(session)


def reload(session, site) -> Site:
    session.expire_all()
    return session.get(Site, site.id)


# Labels and controls

def test_every_setting_has_a_label_help_and_its_control(as_role, shop):
    page = as_role("viewer").get(SETTINGS).text
    for label in ("Announce with IndexNow", "Default change frequency", "Key file location",
                  "Time zone", "robots.txt", "Regenerate", "URL encoding", "XSL stylesheet"):
        assert f">{label}</label>" in page, label
    for name in ("stylesheet", "indexnow_enabled"):  # a switch that can be turned off
        assert f'<input type="hidden" name="{name}" value="off">' in page
        assert re.search(rf'type="checkbox" class="switch" role="switch" id="f-{name}"', page)
    for name in ("default_changefreq", "indexnow_key_location", "encoding", "schedule_mode"):
        assert re.search(rf'<select id="f-[\w-]+" name="{name}"', page), name
    assert '<option value="weekly">' in page and '<option value="sitemap">' in page
    assert 'list="timezones"' in page and '<option value="Asia/Tokyo">' in page
    assert '<textarea id="f-robots_txt" name="robots_txt"' in page


def test_a_switch_turns_off_when_unchecked_and_on_when_checked(as_role, session, shop):  # noqa: F811
    editor = as_role("editor")
    answer = editor.post(SETTINGS, data={"csrf_token": editor.csrf,
                                         "indexnow_enabled": ["off", "on"]})
    assert answer.status_code == 302
    assert reload(session, shop).indexnow_enabled is True
    assert post(editor, SETTINGS, indexnow_enabled="off").status_code == 302  # unchecked
    assert reload(session, shop).indexnow_enabled is False


def test_new_sites_are_made_with_the_xsl_stylesheet_off(as_role, session):  # noqa: F811
    editor = as_role("editor")
    assert post(editor, "/sites/new", name="Blog", base_url="https://blog.example.com/",
                encoding="euc_jp").status_code == 302
    site = session.scalar(select(Site).where(Site.slug == "blog"))
    assert (site.stylesheet, site.encoding) == (False, "euc_jp")
    new_site = editor.get("/sites/new").text
    assert '<select id="f-encoding" name="encoding"' in new_site and "Shift_JIS" in new_site


def test_the_databases_default_leaves_the_stylesheet_off(app, session):
    session.execute(text("INSERT INTO sites (slug, name, base_url, sitemap_url, encoding, "
                         "max_urls_per_file, indexnow_key, storage_key) VALUES ('raw', 'Raw', "
                         "'https://raw.example.com/', 'https://raw.example.com/sitemap.xml', "
                         "'utf-8', 50000, 'k1234567', 's1')"))
    session.commit()
    assert session.scalar(select(Site.stylesheet).where(Site.slug == "raw")) is False


@pytest.mark.parametrize("database_url", ["sqlite"], indirect=True)
def test_sites_made_before_the_migration_keep_their_stylesheet(database_url):
    config = alembic_config(database_url)
    command.downgrade(config, "0015")
    engine = make_engine(database_url)
    try:
        with engine.begin() as connection:
            connection.execute(text(
                "INSERT INTO sites (slug, name, base_url, sitemap_url, encoding, "
                "max_urls_per_file, indexnow_key, storage_key) VALUES ('old', 'Old', "
                "'https://old.example.com/', 'https://old.example.com/sitemap.xml', 'utf-8', "
                "50000, 'k1234567', 's1')"))
        command.upgrade(config, "head")
        with engine.connect() as connection:
            assert connection.execute(text("SELECT stylesheet FROM sites")).scalar() in (1, True)
    finally:
        engine.dispose()


# The schedule picker

@pytest.mark.parametrize(("fields", "schedule"), [
    ({"mode": "minutes", "every": "30"}, "every 30m"),
    ({"mode": "hours", "every": "6"}, "every 6h"),
    ({"mode": "daily", "time": "03:30"}, "cron:30 3 * * *"),
    ({"mode": "weekly", "time": "22:05", "weekday": "0"}, "cron:5 22 * * 0"),
    ({"mode": "custom", "custom": "0 3 * * 1-5"}, "cron:0 3 * * 1-5"),
    ({"mode": "custom", "custom": "every 90s"}, "every 90s"),
    ({"mode": "off"}, "off"),
])
def test_the_picker_writes_the_schedule_syntax_and_reads_it_back(fields, schedule):
    form = {f"schedule_{key}": value for key, value in fields.items()}
    assert schedule_picker.compose(form) == schedule
    state = schedule_picker.state(schedule)
    assert state["mode"] == fields["mode"]
    assert schedule_picker.compose({f"schedule_{k}": v for k, v in state.items()}) == schedule


@pytest.mark.parametrize(("fields", "words"), [
    ({"mode": "minutes", "every": "0"}, "at least 1"),
    ({"mode": "hours", "every": "x"}, "whole number"),
    ({"mode": "daily", "time": "25:00"}, "HH:MM"),
    ({"mode": "weekly", "time": "03:00", "weekday": "9"}, "day of the week"),
    ({"mode": "custom", "custom": "often"}, "cron"),
    ({"mode": "sometimes"}, "how often"),
])
def test_the_picker_names_what_is_wrong(fields, words):
    with pytest.raises(InvalidValue) as raised:
        schedule_picker.compose({f"schedule_{key}": value for key, value in fields.items()})
    assert raised.value.field == "schedule" and words in str(raised.value)


def test_the_picker_saves_the_schedule_and_previews_three_runs_in_the_sites_zone(
        as_role, session, shop):  # noqa: F811
    editor = as_role("editor")
    answer = post(editor, SETTINGS, schedule_mode="daily", schedule_time="03:00",
                  schedule_every="", schedule_weekday="1", schedule_custom="",
                  timezone="Asia/Tokyo")
    assert answer.status_code == 302
    site = reload(session, shop)
    assert (site.schedule, site.timezone) == ("cron:0 3 * * *", "Asia/Tokyo")
    assert site.next_run_at.astimezone(UTC).hour == 18  # 03:00 in Tokyo
    page = editor.get(SETTINGS).text
    runs = re.search(r'<ol id="schedule-runs">(.*?)</ol>', page, re.S).group(1)
    assert len(re.findall(r"<li>[\d-]+ \(\w+\) 03:00 (JST|\+0900)</li>", runs)) == 3, runs
    assert '<option value="daily" selected>' in page and 'value="03:00"' in page


def test_the_preview_endpoint_follows_the_fields_being_edited(as_role, shop):
    viewer = as_role("viewer")
    answer = viewer.get(f"{SETTINGS}/schedule-preview", query_string={
        "schedule_mode": "weekly", "schedule_time": "09:15", "schedule_weekday": "1",
        "timezone": "Europe/Paris"})
    assert answer.json["schedule"] == "cron:15 9 * * 1" and answer.json["error"] is None
    runs = [datetime.strptime(run[:10], "%Y-%m-%d") for run in answer.json["runs"]]
    assert len(runs) == 3 and all(run.weekday() == 0 for run in runs)
    assert all(" 09:15 " in run for run in answer.json["runs"])
    bad = viewer.get(f"{SETTINGS}/schedule-preview",
                     query_string={"schedule_mode": "custom", "schedule_custom": "soon"}).json
    assert bad["runs"] == [] and "schedule" in bad["error"]
    zone = viewer.get(f"{SETTINGS}/schedule-preview", query_string={
        "schedule_mode": "hours", "schedule_every": "2", "timezone": "Mars/Base"}).json
    assert "timezone" in zone["error"]


def test_every_settings_error_is_shown_at_once_the_pickers_too(as_role, session, shop):  # noqa: F811
    editor = as_role("editor")
    answer = post(editor, SETTINGS, schedule_mode="daily", schedule_time="7 o'clock",
                  timezone="Mars/Base", max_urls_per_file="0", name="Renamed")
    assert answer.status_code == 422
    for name in ("schedule", "timezone", "max_urls_per_file"):
        assert f'id="e-{name}"' in answer.text, name
    assert 'value="7 o&#39;clock"' in answer.text and 'value="Mars/Base"' in answer.text
    site = reload(session, shop)
    assert (site.name, site.schedule, site.timezone) == ("Shop", "every 6h", "UTC")


# robots.txt

def test_robots_txt_round_trips_real_line_breaks_and_backslashes(as_role, runner, session, shop):  # noqa: F811
    editor = as_role("editor")
    typed = "User-agent: *\r\nDisallow: /cart\r\nDisallow: /a\\nb\r\n"
    assert post(editor, SETTINGS, robots_txt=typed).status_code == 302
    stored = reload(session, shop).robots_txt
    assert stored == "User-agent: *\nDisallow: /cart\nDisallow: /a\\nb\n"
    page = editor.get(SETTINGS).text
    assert "Disallow: /cart\nDisallow: /a\\nb\n</textarea>" in page
    assert post(editor, SETTINGS, robots_txt=typed).status_code == 302
    assert reload(session, shop).robots_txt == stored  # unchanged: nothing to save
    shown = runner.invoke(args=["sites", "show", "shop"]).stdout
    assert "robots_txt=User-agent: *\\nDisallow: /cart\\nDisallow: /a\\\\nb\\n" in shown


def test_the_robots_preview_is_what_the_host_will_serve(app, as_role, session, shop):  # noqa: F811
    viewer = as_role("viewer")
    preview = viewer.post(f"{SETTINGS}/robots-preview",
                          data={"csrf_token": viewer.csrf, "robots_txt": "User-agent: *\r\n"
                                "Disallow: /tmp\r\n"}).json
    assert preview["text"] == "User-agent: *\nDisallow: /tmp\n"  # nothing published: no line
    make_urls(session, shop, 2)
    jobs.regenerate(shop.id, app)
    preview = viewer.post(f"{SETTINGS}/robots-preview",
                          data={"csrf_token": viewer.csrf, "robots_txt": "User-agent: *\r\n"
                                "Disallow: /tmp\r\n"}).json
    assert preview["text"].endswith(f"Sitemap: {shop.sitemap_url}\n")
    editor = as_role("editor")
    post(editor, SETTINGS, robots_txt="User-agent: *\r\nDisallow: /tmp\r\n")
    served = app.test_client().get("/robots.txt", base_url="https://shop.example.com")
    assert served.text == preview["text"]
    assert "Sitemap: https://shop.example.com/sitemap.xml" in editor.get(SETTINGS).text
    assert viewer.post(f"{SETTINGS}/robots-preview", data={"robots_txt": "x"}).status_code == 400


# Search Console: the uploaded service account

def key_file(tmp_path, uri: str, **changes) -> bytes:
    info = json.loads(service_account_file(tmp_path, uri).read_text())
    info.update(changes)
    return json.dumps({name: value for name, value in info.items() if value is not None}).encode()


def upload(client, data: bytes, slug="shop"):
    import io
    return client.post(f"/sites/{slug}/search-console-key", content_type="multipart/form-data",
                       data={"csrf_token": client.csrf, "key_file": (io.BytesIO(data), "key.json")})


def test_an_admin_uploads_the_key_and_it_is_stored_sealed_and_never_shown(
        app, as_role, session, shop, tmp_path):  # noqa: F811
    admin = as_role("admin")
    data = key_file(tmp_path, "https://oauth2.googleapis.com/token")
    private_key = json.loads(data)["private_key"]
    assert upload(admin, data).status_code == 302
    stored = session.scalar(select(ServiceAccountKey))
    assert stored.client_email == "robot@test-project.iam.gserviceaccount.com"
    assert "PRIVATE KEY" not in stored.sealed and "robot@" not in stored.sealed
    assert json.loads(sealing.unseal(app.config, stored.sealed))["private_key"] == private_key
    page = admin.get(SETTINGS).text
    assert "robot@test-project.iam.gserviceaccount.com" in page and "PRIVATE KEY" not in page
    assert "Replace the key" in page and "Remove the uploaded key" in page
    assert admin.post("/sites/shop/search-console-key/delete",
                      data={"csrf_token": admin.csrf}).status_code == 302
    assert session.scalar(select(ServiceAccountKey)) is None


@pytest.mark.parametrize(("changes", "words"), [
    ({"type": "authorized_user"}, '"type" is "authorized_user"'),
    ({"client_email": None, "token_uri": None}, "lacks client_email, token_uri"),
    ({"private_key": "-----BEGIN PRIVATE KEY-----\nnot a key\n"}, "private_key is not"),
    ({"token_uri": "file:///etc/passwd"}, "is not an http"),
    ({"client_email": "x" * 400}, "client_email is not an e-mail address"),
])
def test_an_upload_that_is_not_a_service_account_key_says_what_is_wrong(
        as_role, session, shop, tmp_path, changes, words):  # noqa: F811
    answer = upload(as_role("admin"), key_file(tmp_path, "https://oauth2.googleapis.com/token",
                                               **changes))
    assert answer.status_code == 422
    message = re.search(r'id="e-key_file">([^<]*)<', answer.text).group(1)
    assert words in message.replace("&#34;", '"').replace("&quot;", '"'), message
    assert session.scalar(select(ServiceAccountKey)) is None


@pytest.mark.parametrize(("data", "words"), [
    (b"", "Choose the JSON key file"), (b"{not json", "not JSON (line 1, column 2"),
    (b"\xff\xfe\x00", "not text"), (b"[1, 2]", "holds no object"),
    # Nested deeper than the parser goes: 32 KB, well within the size a key file may have.
    (b"[" * 32_000, "not a key file"), (b'{"a":' * 10_000, "not a key file")])
def test_an_upload_that_is_not_json_says_so(as_role, session, shop, data, words):  # noqa: F811
    answer = upload(as_role("admin"), data)
    assert answer.status_code == 422 and words in answer.text
    assert session.scalar(select(ServiceAccountKey)) is None


def test_a_deeply_nested_upload_is_refused_in_the_pages_language(as_role, session, shop):  # noqa: F811
    import io
    admin = as_role("admin")
    answer = admin.post(
        "/sites/shop/search-console-key", headers={"Accept-Language": "ja"},
        content_type="multipart/form-data",
        data={"csrf_token": admin.csrf, "key_file": (io.BytesIO(b"[" * 32_000), "k.json")})
    assert answer.status_code == 422
    message = re.search(r'id="e-key_file">([^<]*)<', answer.text).group(1)
    assert "キーファイルではありません" in message, message
    assert session.scalar(select(ServiceAccountKey)) is None


def test_a_key_file_on_the_server_nested_too_deeply_is_refused_by_name(runner, shop, tmp_path):
    path = tmp_path / "key.json"
    path.write_bytes(b"[" * 32_000)
    result = runner.invoke(args=["sites", "set", "shop", f"gsc_credentials={path}"])
    assert result.exit_code == 1 and "Traceback" not in result.output, result.output
    assert "gsc_credentials" in result.output and "not a key file" in result.output


def test_editors_cannot_upload_remove_or_test_the_key(as_role, session, shop, tmp_path):  # noqa: F811
    editor = as_role("editor")
    assert upload(editor, key_file(tmp_path, "https://oauth2.googleapis.com/token")
                  ).status_code == 403
    for path in ("/search-console-key/delete", "/search-console-key/test"):
        assert post(editor, f"/sites/shop{path}").status_code == 403
    assert session.scalar(select(ServiceAccountKey)) is None
    page = editor.get(SETTINGS).text
    assert 'name="key_file"' not in page and "Only an admin can upload" in page


def test_site_scoped_api_tokens_cannot_set_the_service_account(app, session, shop):
    user = User(email="admin@example.com", role="admin", password_hash="x")
    session.add(user)
    session.flush()
    _, secret = create_token(session, user, "cms", "write", [shop])
    session.commit()
    api = Api(app.test_client(), secret)
    answer = api.patch("/sites/shop", {"gsc_credentials": "/srv/key.json"})
    assert answer.status_code in (403, 422)
    for field in ("service_account", "gsc_key"):
        assert api.patch("/sites/shop", {field: "{}"}).status_code == 422
    assert api.post("/sites/shop/search-console-key").status_code in (401, 404, 405)
    assert reload(session, shop).gsc_credentials is None
    assert session.scalar(select(ServiceAccountKey)) is None


def test_announcements_use_the_uploaded_key_over_the_file(app, as_role, session, engine,
                                                          tmp_path):
    app.config["GSC_ENDPOINT"] = engine.url_for("/")
    (tmp_path / "file").mkdir()
    on_disk = service_account_file(tmp_path / "file", engine.url_for("/token-of-the-file"))
    site = make_site(session, name="Shop", base_url=engine.url_for("/"),
                     gsc_property="sc-domain:example.com", gsc_credentials=str(on_disk))
    upload(as_role("admin"), key_file(tmp_path, engine.url_for("/token-of-the-upload")))
    engine.expect_request("/token-of-the-upload", method="POST").respond_with_json(
        {"access_token": "uploaded-token", "expires_in": 3600, "token_type": "Bearer"})
    engine.expect_request(re.compile("/webmasters/.*"), method="PUT").respond_with_data(
        "", status=204)
    make_urls(session, site, 1)
    jobs.regenerate(site.id, app)
    notify.notify_site(site.id, app)
    [delivery] = session.scalars(select(Delivery)).all()
    assert (delivery.status, delivery.http_status) == ("delivered", 204)
    paths = [request.path for request, _ in engine.log]
    assert paths[0] == "/token-of-the-upload" and "/token-of-the-file" not in paths
    assert engine.log[-1][0].headers["Authorization"] == "Bearer uploaded-token"


def test_a_site_with_only_an_uploaded_key_and_a_property_can_send(app, session, shop):
    shop.gsc_property = "sc-domain:example.com"
    session.commit()
    assert "gsc" in notify.blocked(shop, app.config)
    shop.service_account = ServiceAccountKey(client_email="a@b.c", sealed="x",
                                             uploaded_at=datetime.now(UTC))
    session.commit()
    assert "gsc" not in notify.blocked(shop, app.config)
    with app.extensions["db_sessionmaker"]() as other:  # a pre-flight check's detached site
        detached = other.get(Site, shop.id)
    assert "gsc" not in notify.blocked(detached, app.config)


# Test connection

@pytest.fixture
def connected(app, as_role, session, engine, tmp_path):  # noqa: F811
    """An admin's client, and a site whose uploaded key's token address is the fake engine."""
    app.config["GSC_ENDPOINT"] = engine.url_for("/")
    make_site(session, base_url="https://shop.example.com/", gsc_property="sc-domain:example.com")
    admin = as_role("admin")
    assert upload(admin, key_file(tmp_path, engine.url_for("/token"))).status_code == 302
    return admin


def test_test_connection_exchanges_a_token_and_lists_the_properties(connected, engine):
    engine.expect_request("/token", method="POST").respond_with_json(
        {"access_token": "token-9", "expires_in": 3600, "token_type": "Bearer"})
    engine.expect_request("/webmasters/v3/sites", method="GET").respond_with_json({"siteEntry": [
        {"siteUrl": "sc-domain:example.com", "permissionLevel": "siteOwner"},
        {"siteUrl": "https://blog.example.org/", "permissionLevel": "siteFullUser"}]})
    page = post(connected, "/sites/shop/search-console-key/test").text
    result = re.search(r'id="gsc-test">(.*?)</div>', page, re.S).group(1)
    assert "Connected" in result and "sees 2 properties" in result
    assert "sc-domain:example.com</code> (siteOwner)" in result
    assert "https://blog.example.org/</code> (siteFullUser)" in result
    token_request, listing = (request for request, _ in engine.log)
    assert "assertion=" in token_request.get_data(as_text=True)
    assert listing.headers["Authorization"] == "Bearer token-9"


def test_a_key_whose_token_uri_is_not_googles_is_refused(app, as_role, session, engine,
                                                         tmp_path):
    """The server POSTs to an uploaded key's token_uri: only Google's token address (or one on
    GSC_ENDPOINT's scheme, host and port) is taken, or any reachable host would get it."""
    make_site(session)
    admin = as_role("admin")
    answer = upload(admin, key_file(tmp_path, engine.url_for("/internal/admin")))
    assert answer.status_code == 422
    assert "is not Google&#39;s token address https://oauth2.googleapis.com/token" in answer.text
    assert session.scalar(select(ServiceAccountKey)) is None
    assert engine.log == []


def test_test_connection_shows_only_the_oauth_error_of_a_refused_token(connected, engine):
    """Whatever else the token address answers is not echoed on the page."""
    engine.expect_request("/token", method="POST").respond_with_data(
        "<h1>INSIDE-SECRET admin page</h1>", status=400, content_type="text/html")
    page = post(connected, "/sites/shop/search-console-key/test").text
    assert "refused the service account without an OAuth error" in page
    assert "INSIDE-SECRET" not in page


def test_test_connection_says_plainly_when_the_list_is_nested_too_deeply(connected, engine):
    engine.expect_request("/token", method="POST").respond_with_json(
        {"access_token": "token-9", "expires_in": 3600, "token_type": "Bearer"})
    engine.expect_request("/webmasters/v3/sites", method="GET").respond_with_data(
        "[" * 32_000, content_type="application/json")
    answer = post(connected, "/sites/shop/search-console-key/test")
    assert answer.status_code < 500
    assert "did not answer with Search Console&#39;s list of properties" in answer.text


def test_test_connection_refuses_a_token_reply_larger_than_64_kb(connected, engine):
    engine.expect_request("/token", method="POST").respond_with_json(
        {"access_token": "x" * 100_000, "expires_in": 3600, "token_type": "Bearer"})
    page = post(connected, "/sites/shop/search-console-key/test").text
    result = re.search(r'id="gsc-test">(.*?)</div>', page, re.S).group(1)
    assert "Not connected" in result and "answered more than 64 KB" in result


@pytest.mark.parametrize(("answer", "words"), [
    (Response(json.dumps({"error": "invalid_grant", "error_description":
                          "Invalid JWT Signature."}), 400, content_type="application/json"),
     "refused the key (invalid_grant: Invalid JWT Signature.)"),
    (Response(json.dumps({"error": "unauthorized_client", "error_description":
                          "Client is unauthorized to retrieve access tokens"}), 401,
              content_type="application/json"),
     "refused the service account: unauthorized_client"),
])
def test_test_connection_explains_a_refused_token(connected, engine, answer, words):
    engine.expect_request("/token", method="POST").respond_with_response(answer)
    page = post(connected, "/sites/shop/search-console-key/test").text
    result = re.search(r'id="gsc-test">(.*?)</div>', page, re.S).group(1)
    assert "Not connected" in result and words in result.replace("&#39;", "'"), result
    assert [request.path for request, _ in engine.log] == ["/token"]


def test_test_connection_says_when_the_token_address_is_unreachable(app, as_role, session,
                                                                    tmp_path):
    port = free_port()
    app.config["GSC_ENDPOINT"] = f"http://127.0.0.1:{port}/"
    make_site(session, gsc_property="sc-domain:example.com")
    admin = as_role("admin")
    upload(admin, key_file(tmp_path, f"http://127.0.0.1:{port}/token"))
    page = post(admin, "/sites/shop/search-console-key/test").text
    result = re.search(r'id="gsc-test">(.*?)</div>', page, re.S).group(1)
    assert "Not connected" in result and "127.0.0.1" in result
    assert "refused the connection" in result and "Errno" not in result
    assert "will try again" not in result


def test_test_connection_says_when_the_stored_key_cannot_be_decrypted(app, connected, engine):
    app.config["CREDENTIALS_KEY"] = "another-key-entirely-0123456789"
    page = post(connected, "/sites/shop/search-console-key/test").text
    assert "cannot be decrypted with CREDENTIALS_KEY" in page and engine.log == []


def test_test_connection_says_when_listing_the_properties_is_refused(connected, engine):
    engine.expect_request("/token").respond_with_json(
        {"access_token": "t", "expires_in": 3600, "token_type": "Bearer"})
    engine.expect_request("/webmasters/v3/sites").respond_with_data("no", status=403)
    page = post(connected, "/sites/shop/search-console-key/test").text
    assert "list of properties failed: 403" in page


# Sealing and rotation

def test_a_key_rotated_in_keeps_what_the_old_one_sealed_until_it_is_resealed(app, runner,
                                                                            session):
    old = {"SECRET_KEY": "s", "CREDENTIALS_KEY": "the-old-key-0123456789"}
    new = {"SECRET_KEY": "s", "CREDENTIALS_KEY": "the-new-key-0123456789"}
    rotating = {**new, "CREDENTIALS_OLD_KEYS": ("the-old-key-0123456789",)}
    sealed = sealing.seal(old, b"secret")
    with pytest.raises(sealing.CannotOpen):
        sealing.unseal(new, sealed)
    assert sealing.unseal(rotating, sealed) == b"secret"
    assert sealing.unseal(new, sealing.reseal(rotating, sealed)) == b"secret"
    assert sealing.unseal({"SECRET_KEY": "s"}, sealing.seal({"SECRET_KEY": "s"}, b"x")) == b"x"
    with pytest.raises(sealing.CannotOpen):  # SECRET_KEY's derived key is not CREDENTIALS_KEY
        sealing.unseal(new, sealing.seal({"SECRET_KEY": "s"}, b"x"))


def test_the_credentials_keys_come_from_the_environment_and_must_be_long_enough(tmp_path):
    from webapp.config import ConfigError, load

    base = {"INSTANCE_PATH": str(tmp_path)}
    assert load(environ=base)["CREDENTIALS_KEY"] is None  # then SECRET_KEY's derived key
    settings = load(environ={**base, "CREDENTIALS_KEY": "k" * 16,
                             "CREDENTIALS_OLD_KEYS": " old-key-0123456789 , older-key-0123456789"})
    assert settings["CREDENTIALS_KEY"] == "k" * 16
    assert settings["CREDENTIALS_OLD_KEYS"] == ("old-key-0123456789", "older-key-0123456789")
    for name in ("CREDENTIALS_KEY", "CREDENTIALS_OLD_KEYS"):
        with pytest.raises(ConfigError, match=f"{name}: a key must be at least 16 characters"):
            load(environ={**base, name: "short"})


def test_the_rotate_command_reseals_every_stored_key(app, runner, session):
    site = make_site(session)
    app.config["CREDENTIALS_KEY"] = "the-old-key-0123456789"
    site.service_account = ServiceAccountKey(client_email="a@b.c", uploaded_at=datetime.now(UTC),
                                             sealed=sealing.seal(app.config, b"{}"))
    session.commit()
    app.config.update(CREDENTIALS_KEY="the-new-key-0123456789",
                      CREDENTIALS_OLD_KEYS=("the-old-key-0123456789",))
    result = runner.invoke(args=["credentials", "rotate"])
    assert result.exit_code == 0 and "1 key sealed again" in result.stdout
    session.expire_all()
    sealed = session.scalar(select(ServiceAccountKey.sealed))
    assert sealing.unseal({"CREDENTIALS_KEY": "the-new-key-0123456789"}, sealed) == b"{}"
    app.config.update(CREDENTIALS_OLD_KEYS=())
    app.config["CREDENTIALS_KEY"] = "a-third-key-0123456789"
    result = runner.invoke(args=["credentials", "rotate"])
    assert result.exit_code == 1 and "shop" in result.output and "cannot be decrypted" in result.output


# IndexNow: the key file as an engine fetches it

@pytest.fixture
def key_site(app, session, engine):
    app.config["NOTIFY_TIMEOUT"] = 10  # two fetches per test on a busy machine: no time-outs
    return make_site(session, base_url=engine.url_for("/"), indexnow_key="testkey-0123456789",
                     indexnow_enabled=True)


@pytest.mark.parametrize(("answer", "outcome", "words"), [
    (Response("testkey-0123456789\n", content_type="text/plain; charset=utf-8"), "ok",
     "holds the right key"),
    (Response("not found", 404), "not_found", "is not found (404)"),
    (Response("another-key", content_type="text/plain"), "wrong_content",
     "does not contain exactly the key testkey-0123456789"),
    (Response("", 301, headers={"Location": "https://elsewhere.example/key.txt"}),
     "redirected", "redirected to https://elsewhere.example/key.txt"),
    (Response("testkey-0123456789", content_type="text/html"), "content_type",
     "served as text/html"),
    (Response("down", 503), "refused", "503"),
])
def test_verify_key_file_says_what_an_engine_would_find(app, as_role, key_site, engine, answer,
                                                         outcome, words):
    engine.expect_request("/testkey-0123456789.txt").respond_with_response(answer)
    check = notify.indexnow.verify_key_file(key_site, app.config)
    assert check.outcome == outcome and words in check.message, check.message
    editor = as_role("editor")
    answer = post(editor, f"/sites/{key_site.slug}/indexnow/verify")
    assert answer.status_code == 302  # the result is shown on the settings page it goes to
    assert answer.headers["Location"].endswith(f"/sites/{key_site.slug}/settings#indexnow-key")
    page = editor.get(answer.headers["Location"]).text
    shown = re.search(r'id="key-check">(.*?)</p>', page, re.S).group(1)
    assert words in shown.replace("&#39;", "'")
    assert ("Problem" in shown) == (outcome not in ("ok", "content_type"))
    assert "another-key" not in page  # what the address holds instead is not shown


def test_verify_key_file_says_when_the_site_is_unreachable(app, session):
    site = make_site(session, base_url=f"http://127.0.0.1:{free_port()}/")
    check = notify.indexnow.verify_key_file(site, app.config)
    assert check.outcome == "unreachable" and "cannot be reached" in check.message
    assert "will try again" not in check.message


def test_only_editors_verify_and_every_new_form_needs_its_csrf_token(as_role, shop):
    viewer, admin = as_role("viewer"), as_role("admin")
    assert post(viewer, "/sites/shop/indexnow/verify").status_code == 403
    for path in ("/indexnow/verify", "/search-console-key", "/search-console-key/delete",
                 "/search-console-key/test", "/settings/robots-preview"):
        answer = admin.post(f"/sites/shop{path}", data={})
        assert answer.status_code == 400 and "CSRF" in answer.text, path


# How to publish

def test_the_publish_page_names_the_addresses_and_gives_proxy_snippets(as_role, shop):
    page = as_role("viewer").get("/sites/shop/publish").text
    assert ">How to publish</a>" in page  # the tab
    for address in ("https://shop.example.com/sitemap.xml", "https://shop.example.com/robots.txt",
                    f"https://shop.example.com/{shop.indexnow_key}.txt",
                    "http://localhost/sitemaps/shop/sitemap.xml",
                    "http://localhost/sitemaps/shop/view/sitemap.xml"):
        assert address in page, address
    assert "location = /robots.txt {" in page and "proxy_pass http://localhost;" in page
    assert "proxy_set_header Host shop.example.com;" in page
    assert "reverse_proxy @sitemap_dashboard localhost {" in page and "PROXY_COUNT=1" in page
    assert "User-agent: *\nDisallow:\n" in page  # the robots.txt it will serve


def test_the_nginx_location_passes_exactly_the_sitemap_files(session):
    site = make_site(session, base_url="https://shop.example.com/maps/",
                     sitemap_url="https://shop.example.com/maps/sitemap.xml",
                     indexnow_key_location="sitemap")
    snippet = publish_guide.nginx(site, "http://10.0.0.5:8000")
    pattern = re.search(r'location ~ "([^"]+)"', snippet).group(1)
    for path in ("/maps/sitemap.xml", "/maps/sitemap.xml.gz", "/maps/sitemap-12.xml",
                 "/maps/sitemap-3.xml.gz"):
        assert re.fullmatch(pattern, path), path
    for path in ("/maps/sitemap-x.xml", "/sitemap.xml", "/maps/sitemapXxml", "/maps/other.xml",
                 "/maps/sitemap-0.xml", "/maps/sitemap-news.xml", "/maps/sitemap.xml.gz.gz"):
        assert not re.fullmatch(pattern, path), path
    assert f"location = /maps/{site.indexnow_key}.txt {{" in snippet
    assert ".xsl" not in snippet  # no stylesheet: nothing to pass


def test_the_snippets_follow_the_news_and_stylesheet_settings(session):
    """The nginx regex once missed sitemap-news.xml: each snippet now comes from the names
    the site's settings make it publish (files.families)."""
    site = make_site(session, news_name="Shop News", news_language="en", stylesheet=True,
                     sections="blog /blog/")
    snippet = publish_guide.nginx(site, "http://10.0.0.5:8000")
    pattern = re.search(r'location ~ "([^"]+)"', snippet).group(1)
    for path in ("/sitemap-news.xml", "/sitemap-news.xml.gz", "/sitemap-news-2.xml",
                 "/sitemap-blog-1.xml", "/sitemap-2.xml.gz"):
        assert re.fullmatch(pattern, path), path
    for path in ("/sitemap-news-1.xml", "/sitemap-blog.xml", "/sitemap-shop-1.xml"):
        assert not re.fullmatch(pattern, path), path
    assert "location = /sitemap.xsl {" in snippet
    caddy = re.search(r"path_regexp `([^`]+)`", publish_guide.caddy(site, "http://h:1"))
    for path in ("/robots.txt", f"/{site.indexnow_key}.txt", "/sitemap.xsl",
                 "/sitemap-news-2.xml.gz", "/sitemap-blog-3.xml"):
        assert re.fullmatch(caddy.group(1), path), path
    for path in ("/robots.txtx", "/sitemap.xsl.gz", "/sitemap-news-1.xml", "/index.html"):
        assert not re.fullmatch(caddy.group(1), path), path


def test_a_sitemap_on_another_host_gets_a_block_per_host(session):
    site = make_site(session, base_url="https://shop.example.com/",
                     sitemap_url="https://cdn.example.com/shop/sitemap.xml")
    hosts = publish_guide.host_paths(site)
    assert [host.origin for host in hosts] == ["https://shop.example.com",
                                               "https://cdn.example.com"]
    caddy = publish_guide.caddy(site, "http://127.0.0.1:5000")
    assert "https://shop.example.com {" in caddy and "https://cdn.example.com {" in caddy
    [_, files] = re.findall(r"path_regexp `([^`]+)`", caddy)
    assert re.fullmatch(files, "/shop/sitemap-2.xml.gz")
    assert not re.fullmatch(files, "/robots.txt")


# In a browser: the previews follow the editing, and every page fits a phone

def test_the_previews_follow_the_editing_and_the_pages_fit_a_phone(app, session, tmp_path,
                                                                   request):
    from tests.builders import served
    from tests.test_e2e import CHROMIUM, shot
    from webapp.accounts.users import create_user

    if not app.config["DATABASE_URL"].startswith("sqlite"):
        pytest.skip("the browser path is the same on both databases; it runs on SQLite")
    import os
    if not os.path.exists(CHROMIUM):
        pytest.skip(f"no Chromium at {CHROMIUM}")
    from playwright.sync_api import expect

    create_user(session, "owner@example.com", "correct horse", "admin")
    site = make_site(session, name="Shop", robots_txt="User-agent: *\nDisallow: /cart\n",
                     schedule="cron:0 3 * * *", timezone="Asia/Tokyo")
    make_urls(session, site, 3)
    jobs.regenerate(site.id, app)
    browser = request.getfixturevalue("browser")  # the test process's Chromium
    with served(app) as base:
        for language in ("en", "ja"):
            for width in (1280, 390):
                page = signed_in_page(browser, base, "owner@example.com", "correct horse",
                                      width, language)
                for name, path in (("settings", SETTINGS), ("new-site", "/sites/new"),
                                   ("publish", "/sites/shop/publish")):
                    page.goto(base + path)
                    assert page.evaluate("document.documentElement.scrollWidth") <= width
                    shot(page, f"settings/{name}-{language}-{width}")
                page.context.close()
        page = signed_in_page(browser, base, "owner@example.com", "correct horse")
        page.goto(base + SETTINGS)
        runs = page.locator("#schedule-runs li")
        expect(runs).to_have_count(3)
        expect(runs.first).to_contain_text("03:00")
        assert page.locator("#f-schedule-every").is_hidden()  # only the mode's parts show
        page.select_option("#f-schedule", "weekly")
        page.select_option("#f-schedule-weekday", "0")
        page.fill("#f-schedule-time", "09:45")
        expect(runs.first).to_contain_text("09:45")
        for run in runs.all_inner_texts():
            assert "(Sun)" in run, run
        page.select_option("#f-schedule", "custom")
        page.fill("#f-schedule-custom", "whenever")
        expect(page.locator("#schedule-preview-error")).to_contain_text("schedule")
        robots = page.locator("#robots-preview")
        expect(robots).to_contain_text("Sitemap: https://shop.example.com/sitemap.xml")
        page.fill("#f-robots_txt", "User-agent: *\nDisallow: /private\n")
        expect(robots).to_contain_text("Disallow: /private")
        expect(robots).not_to_contain_text("/cart")
        page.select_option("#f-schedule", "weekly")
        page.get_by_role("button", name="Save settings").click()
        expect(page.get_by_text("Saved.")).to_be_visible()
    session.expire_all()
    saved = session.get(Site, site.id)
    assert (saved.schedule, saved.robots_txt) == ("cron:45 9 * * 0",
                                                  "User-agent: *\nDisallow: /private\n")


def test_the_pages_read_in_japanese_plurals_too(app, as_role, session, shop):  # noqa: F811
    make_urls(session, shop, 1)
    jobs.regenerate(shop.id, app)
    viewer = as_role("viewer")
    japanese = {"Accept-Language": "ja"}
    settings = viewer.get(SETTINGS, headers=japanese).text
    assert ">IndexNow で通知する</label>" in settings and "次の 3 回の実行:" in settings
    assert "現在公開中: 1 ファイル:" in viewer.get("/sites/shop/publish", headers=japanese).text
    assert "サイトを作成" in as_role("editor").get("/sites/new", headers=japanese).text


@pytest.mark.parametrize("reply", ["token", "listing"])
def test_an_answer_nested_past_pythons_depth_is_said_not_a_500(connected, engine, reply):
    """JSON nested deeper than Python's recursion limit raises RecursionError, not ValueError:
    an engine's answer like that is one it did not give, in words."""
    deep = "[" * 60_000
    token = {"access_token": "token-9", "expires_in": 3600, "token_type": "Bearer"}
    if reply == "token":
        engine.expect_request("/token", method="POST").respond_with_data(
            deep, content_type="application/json")
    else:
        engine.expect_request("/token", method="POST").respond_with_json(token)
        engine.expect_request("/webmasters/v3/sites", method="GET").respond_with_data(
            deep, content_type="application/json")
    answer = post(connected, "/sites/shop/search-console-key/test")
    assert answer.status_code == 200
    result = re.search(r'id="gsc-test">(.*?)</div>', answer.text, re.S).group(1)
    assert "Not connected" in result
