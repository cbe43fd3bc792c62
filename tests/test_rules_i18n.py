"""The rules of bad input in the reader's language: Japanese on Japanese dashboard pages,
English everywhere else (no request, the CLI, the API's `rule`), and the same English words as
before whatever the language (API clients and tests compare them)."""

from __future__ import annotations

import pickle
import subprocess
import sys
from pathlib import Path

import pytest
from flask_babel import force_locale

from tests.builders import make_site
from tests.test_api import api_as  # noqa: F401  (fixture)
from tests.test_dashboard import as_role, post  # noqa: F401  (fixtures)
from webapp.errors import InvalidValue, in_english, rule_text
from webapp.protocol import ProtocolError, normalize_priority, normalize_url
from webapp.sites import update_site

ROOT = Path(__file__).resolve().parents[1]
JA = {"Accept-Language": "ja"}
EN = {"Accept-Language": "en"}


pytestmark = pytest.mark.session_outside_app_context


@pytest.fixture
def shop(session):
    return make_site(session)


# The rule type


def test_a_rule_text_is_english_outside_an_app_and_keeps_its_english_words():
    with pytest.raises(ProtocolError) as raised:
        normalize_priority("7")
    assert raised.value.rule == "must be from 0.0 to 1.0 (0.5 is the default)"
    assert str(raised.value) == "priority '7': must be from 0.0 to 1.0 (0.5 is the default)"
    with pytest.raises(ProtocolError) as raised:
        normalize_url("https://shop.example.com/" + "a" * 3000)
    assert raised.value.rule == "is 3025 characters once encoded; the limit is 2048"


def test_a_rule_text_is_read_in_the_language_of_the_app_at_hand(app):
    said = rule_text("must be at most %(limit)s characters", limit=200)
    with app.test_request_context(headers=JA):
        assert str(said) == "200 文字以内にしてください"
        assert in_english(said) == "must be at most 200 characters"
        error = InvalidValue("name", "x" * 201, said)
        assert str(error).endswith(": 200 文字以内にしてください")
        assert error.rule == "must be at most 200 characters"
    with app.test_request_context(headers=EN):
        assert str(said) == "must be at most 200 characters"
    with app.app_context(), force_locale("ja"):
        assert str(said) == "200 文字以内にしてください"


def test_a_rule_inside_a_rule_is_read_in_the_same_language(app):
    said = rule_text("line %(line)s: %(rule)s", line=3,
                     rule=rule_text("re: needs a regular expression after it"))
    assert in_english(said) == "line 3: re: needs a regular expression after it"
    with app.test_request_context(headers=JA):
        assert str(said) == "3 行目: re: の後に正規表現を書いてください"


def test_an_error_with_a_rule_text_survives_pickling():
    """The import's row checker hands errors between processes."""
    error = InvalidValue("priority", "7", rule_text("must be one of %(choices)s", choices="a, b"))
    copy = pickle.loads(pickle.dumps(error))
    assert (copy.field, copy.value, copy.rule) == ("priority", "7", "must be one of a, b")


def test_the_csv_row_checker_still_runs_without_flask():
    code = (
        "import sys\n"
        "from webapp.errors import InvalidValue\n"
        "from webapp.urls import csv_rows\n"
        "from webapp.protocol import normalize_priority\n"
        "try:\n"
        "    normalize_priority('2')\n"
        "except InvalidValue as exc:\n"
        "    print(exc)\n"
        "assert not {'flask', 'flask_babel'} & set(sys.modules), sorted(sys.modules)\n"
    )
    run = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True,
                         timeout=60)
    assert run.returncode == 0, run.stderr
    assert run.stdout.strip() == "priority '2': must be from 0.0 to 1.0 (0.5 is the default)"


# Dashboard forms


def test_the_add_url_form_says_its_rules_in_japanese_for_a_japanese_browser(as_role, shop):  # noqa: F811
    editor = as_role("editor")
    fields = {"loc": "ftp://x", "priority": "2", "changefreq": "often"}
    japanese = editor.post(f"/sites/{shop.slug}/urls", headers=JA,
                           data={"csrf_token": editor.csrf, **fields})
    assert japanese.status_code == 422
    assert "http:// か https:// で始まる絶対 URL を指定してください" in japanese.text
    assert "0.0～1.0 で指定してください（デフォルトは 0.5）" in japanese.text
    assert "always, hourly, daily, weekly, monthly, yearly, never のいずれかを指定してください" \
        in japanese.text
    assert "must be an absolute URL" not in japanese.text
    english = post(editor, f"/sites/{shop.slug}/urls", **fields)
    assert english.status_code == 422
    assert "must be an absolute URL starting with http:// or https://" in english.text
    assert "must be from 0.0 to 1.0 (0.5 is the default)" in english.text
    assert "指定してください" not in english.text


def test_the_settings_page_says_its_rules_in_japanese_for_a_japanese_browser(as_role, shop):  # noqa: F811
    editor = as_role("editor")
    fields = {"max_urls_per_file": "0", "exclude": "/tmp/*\ntmp", "change_delay": "-1"}
    japanese = editor.post(f"/sites/{shop.slug}/settings", headers=JA,
                           data={"csrf_token": editor.csrf, **fields})
    assert japanese.status_code == 422
    assert "1～50000 の整数を指定してください" in japanese.text
    assert "2 行目: glob は URL のパスと照合されるため" in japanese.text
    assert "0～86400 の秒数を指定してください" in japanese.text
    english = post(editor, f"/sites/{shop.slug}/settings", **fields)
    assert english.status_code == 422
    assert "must be a whole number from 1 to 50000" in english.text
    assert "line 2: a glob is matched against the URL&#39;s path" in english.text
    assert "must be a number of seconds from 0 to 86400" in english.text


def test_the_new_site_form_says_its_rules_in_japanese(as_role):  # noqa: F811
    admin = as_role("admin")
    answer = admin.post("/sites/new", headers=JA, data={
        "csrf_token": admin.csrf, "name": "Blog", "base_url": "https://blog.example.com/?x=1"})
    assert answer.status_code == 422
    assert "クエリ（?...）やフラグメント（#...）は付けないでください" in answer.text


# Where English stays


def test_the_apis_rule_stays_english_for_a_japanese_client(api_as, shop):  # noqa: F811
    api = api_as("editor")
    answer = api.post(f"/sites/{shop.slug}/urls", {"urls": [
        {"loc": "https://elsewhere.example/x"}, {"loc": "https://shop.example.com/a",
                                                 "priority": 5}]}, headers=JA)
    assert answer.status_code == 200, answer.text
    rules = [error["rule"] for error in answer.json["errors"]]
    assert rules == ["is outside the site: every URL must start with https://shop.example.com/ "
                     "(same scheme, host, port and path)",
                     "must be from 0.0 to 1.0 (0.5 is the default)"]


def test_the_cli_and_domain_functions_stay_english(session, shop):
    with pytest.raises(InvalidValue) as raised:
        update_site(session, shop, {"max_urls_per_file": "0"})
    assert str(raised.value) == "max_urls_per_file '0': must be a whole number from 1 to 50000"


def test_a_rule_names_a_base_url_with_its_host_as_people_read_it_and_the_api_as_stored(
        app, session):  # noqa: F811
    """例え.jp is stored as https://xn--r8jz45g.jp/: the dashboard's rule says the name, the
    English of the API and the CLI (and what a worker stores) keep the stored form."""
    from webapp.errors import said_of
    from webapp.protocol import Scope
    from webapp.said import english, render

    site = make_site(session, "例え", "https://例え.jp/")
    assert site.base_url == "https://xn--r8jz45g.jp/"
    with pytest.raises(ProtocolError) as raised:
        Scope(site.base_url).normalize("https://other.example/page")
    with app.test_request_context(headers=JA):
        assert "URL はすべて https://例え.jp/ で始めてください" in str(raised.value)
        assert "https://例え.jp/" in render(said_of(raised.value.said))
        assert in_english(raised.value.said).endswith(
            "every URL must start with https://xn--r8jz45g.jp/ (same scheme, host, port and path)")
        assert "https://xn--r8jz45g.jp/" in english([said_of(raised.value.said)])
    with app.test_request_context(headers=EN):
        assert "every URL must start with https://例え.jp/" in str(raised.value)
    assert "https://xn--r8jz45g.jp/" in str(raised.value)  # no app at hand: as stored


def test_the_cli_names_an_international_site_as_stored(runner):
    """The CLI stays as stored (an app is at hand there, a reader is not): the value and the
    URL in the rule both in the xn-- form, never the two forms in one line."""
    assert runner.invoke(args=["sites", "create", "Rei", "https://例え.jp/a/"]).stdout == "rei\n"
    result = runner.invoke(args=["urls", "add", "rei", "https://other.example/x"])
    assert result.stderr == (
        "Error: loc 'https://other.example/x': is outside the site: every URL must start with "
        "https://xn--r8jz45g.jp/a/ (same scheme, host, port and path)\n")
    result = runner.invoke(args=["sites", "set", "rei", "sitemap_url=https://例え.jp/b/sitemap.xml"])
    assert result.stderr == (
        "Error: sitemap_url 'https://xn--r8jz45g.jp/b/sitemap.xml': can only list URLs under "
        "https://xn--r8jz45g.jp/b/, but the site's base_url is https://xn--r8jz45g.jp/a/; put "
        "the sitemap at the site's root\n")
    result = runner.invoke(args=["sites", "create", "Rei two", "https://例え.jp/c/",
                                 "--sitemap-url", "https://maps.example.net/c/sitemap.xml"])
    assert result.stderr == (
        "Note: the sitemap is on https://maps.example.net but the pages are on "
        "https://xn--r8jz45g.jp: search engines accept it only if "
        "https://xn--r8jz45g.jp/robots.txt has the line "
        "'Sitemap: https://maps.example.net/c/sitemap.xml' (cross-submission)\n")


def test_the_settings_page_names_an_international_site_as_people_read_it(
        app, as_role, session):  # noqa: F811
    """The error's value and the URLs its rule names, on the Japanese page: 例え.jp, as the
    rest of the dashboard writes it; the cross-host note of the site's page too."""
    site = make_site(session, "例え", "https://例え.jp/a/",
                     sitemap_url="https://maps.例え.jp/sitemap.xml")
    editor = as_role("editor")
    answer = editor.post(f"/sites/{site.slug}/settings", headers=JA, data={
        "csrf_token": editor.csrf, "sitemap_url": "https://例え.jp/b/sitemap.xml"})
    assert answer.status_code == 422
    assert ("sitemap_url &#39;https://例え.jp/b/sitemap.xml&#39;: このサイトマップには "
            "https://例え.jp/b/ 以下の URL しか載せられませんが、サイトの base_url は "
            "https://例え.jp/a/ です") in answer.text
    answer = editor.post(f"/sites/{site.slug}/settings", headers=JA, data={
        "csrf_token": editor.csrf, "indexnow_key_location": "sitemap"})
    assert answer.status_code == 422
    assert "サイトのページ（https://例え.jp/a/）がサイトマップのフォルダ（https://maps.例え.jp/）" \
        in answer.text
    page = editor.get(f"/sites/{site.slug}", headers=JA).text
    assert ("サイトマップは https://maps.例え.jp にありますが、ページは https://例え.jp "
            "にあります。検索エンジンがこれを受け付けるのは https://例え.jp/robots.txt に "
            "&#39;Sitemap: https://maps.xn--r8jz45g.jp/sitemap.xml&#39; の行がある場合だけです"
            ) in page
    with app.test_request_context(headers=EN):  # the API's rule: as stored
        with pytest.raises(InvalidValue) as raised:
            update_site(session, site, {"indexnow_key_location": "sitemap"})
        assert raised.value.rule == (
            "needs the site's pages (https://xn--r8jz45g.jp/a/) under the sitemap's folder "
            "(https://maps.xn--r8jz45g.jp/): IndexNow accepts only URLs under the key file's "
            "folder")


def test_a_stored_rejection_names_the_url_as_its_reader_reads_it(app, session):  # noqa: F811
    """A worker stores a rejected row's line; the Japanese page reads the value and the rule
    with 例え.jp, the CLI's and the API's English keep the stored form."""
    from webapp.protocol import Scope
    from webapp.said import english, render

    with pytest.raises(ProtocolError) as raised:
        Scope("https://xn--r8jz45g.jp/").normalize("https://xn--r8jz45g.jp.evil.example/x")
    line = raised.value.said_line()
    with app.test_request_context(headers=JA):
        assert render(line) == (
            "loc 'https://例え.jp.evil.example/x': サイトの外です。URL はすべて https://例え.jp/ "
            "で始めてください（スキーム、ホスト、ポート、パスが同じ）")
        assert english([line]) == (
            "loc 'https://xn--r8jz45g.jp.evil.example/x': is outside the site: every URL must "
            "start with https://xn--r8jz45g.jp/ (same scheme, host, port and path)")


def test_the_api_names_an_international_site_as_stored(api_as, session):  # noqa: F811
    """A program reads the API: its message names URLs as the API stores and returns them,
    so that in English the message ends with the rule, whatever the client's language."""
    site = make_site(session, "例え", "https://例え.jp/")
    api = api_as("editor")
    for headers in (EN, JA):
        answer = api.post(f"/sites/{site.slug}/urls",
                          {"urls": [{"loc": "https://other.example/x"}]}, headers=headers)
        assert answer.status_code == 200, answer.text
        [error] = answer.json["errors"]
        assert "https://xn--r8jz45g.jp/" in error["message"] and "例え" not in error["message"]
    assert error["rule"] == ("is outside the site: every URL must start with "
                             "https://xn--r8jz45g.jp/ (same scheme, host, port and path)")
    answer = api.post(f"/sites/{site.slug}/urls", {"urls": [{"loc": "https://other.example/x"}]},
                      headers=EN)
    assert answer.json["errors"][0]["message"].endswith(error["rule"])
