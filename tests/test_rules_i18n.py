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
