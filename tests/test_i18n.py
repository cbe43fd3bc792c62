"""The dashboard in English and Japanese: which language a request gets, dates in the reader's
time zone, plurals and units, every template string marked and translated, and the CLI and
the API's machine-read fields kept English."""

from __future__ import annotations

import re
import subprocess
import sys
from datetime import datetime, timezone
from html.parser import HTMLParser
from pathlib import Path

import pytest
from babel.messages.pofile import read_po
from jinja2 import Environment, nodes
from sqlalchemy import select

from tests.builders import csrf_token, make_site
from webapp.accounts.tokens import create_token
from webapp.accounts.users import create_user
from webapp.errors import InvalidValue
from webapp.models import User
from webapp.said import english, render
from webapp.views.dashboard.tasks import shown

ROOT = Path(__file__).resolve().parents[1]
TEMPLATES = ROOT / "templates"
CATALOG = ROOT / "webapp" / "translations" / "ja" / "LC_MESSAGES" / "messages.po"
PASSWORD = "correct horse battery"
JAPANESE = re.compile(r"[\u3040-\u30ff\u4e00-\u9fff]")
# Names that Japanese writes as English does (a file name, a protocol's name).
NAMES = {"robots.txt", "IndexNow"}


pytestmark = pytest.mark.session_outside_app_context


def signed_in(app, session, role="admin", language=None, tz=None, email=None):
    """A test client signed in as a new account with this language and time zone."""
    user = create_user(session, email or f"{role}@example.com", PASSWORD, role)
    user.language, user.timezone = language, tz
    session.commit()
    client = app.test_client()
    answer = client.post("/sign-in", data={"email": user.email, "password": PASSWORD,
                                           "csrf_token": csrf_token(client)})
    assert answer.status_code == 302, answer.text
    client.csrf = csrf_token(client, "/account")
    return client


# Which language


def test_the_sign_in_page_follows_accept_language(client):
    japanese = client.get("/sign-in", headers={"Accept-Language": "ja,en;q=0.5"})
    assert '<html lang="ja">' in japanese.text
    assert "<h1>ログイン</h1>" in japanese.text and "メールアドレス" in japanese.text
    english_page = client.get("/sign-in", headers={"Accept-Language": "en-GB,en;q=0.8"})
    assert '<html lang="en">' in english_page.text and "<h1>Sign in</h1>" in english_page.text


def test_english_is_the_default_when_the_browser_asks_for_neither(client):
    answer = client.get("/sign-in", headers={"Accept-Language": "de-DE,fr;q=0.8"})
    assert '<html lang="en">' in answer.text and "<h1>Sign in</h1>" in answer.text


def test_a_refused_sign_in_is_explained_in_the_browsers_language(client):
    answer = client.post("/sign-in", headers={"Accept-Language": "ja"},
                         data={"email": "nobody@example.com", "password": "wrong password",
                               "csrf_token": csrf_token(client)})
    assert answer.status_code == 401
    assert "メールアドレスかパスワードが間違っているか" in answer.text


def test_the_sign_in_prompt_of_a_guarded_page_is_in_the_browsers_language(client):
    answer = client.get("/tokens", headers={"Accept-Language": "ja"}, follow_redirects=True)
    assert "ログインしてください。" in answer.text


def test_the_users_own_language_beats_accept_language(app, session):
    japanese = signed_in(app, session, language="ja", email="ja@example.com")
    answer = japanese.get("/tokens", headers={"Accept-Language": "en"})
    assert '<html lang="ja">' in answer.text and "<h1>API トークン</h1>" in answer.text
    english_user = signed_in(app, session, language="en", email="en@example.com")
    answer = english_user.get("/tokens", headers={"Accept-Language": "ja"})
    assert '<html lang="en">' in answer.text and "<h1>API tokens</h1>" in answer.text
    browser = signed_in(app, session, language=None, email="any@example.com")
    assert "<h1>API トークン</h1>" in browser.get("/tokens", headers={"Accept-Language": "ja"}).text


def test_the_account_page_saves_language_and_time_zone(app, session):
    client = signed_in(app, session, role="viewer")
    page = client.get("/account", headers={"Accept-Language": "en"})
    assert page.status_code == 200 and 'value="ja"' in page.text and "Asia/Tokyo" in page.text
    answer = client.post("/account", data={"language": "ja", "timezone": "Asia/Tokyo",
                                           "csrf_token": client.csrf},
                         headers={"Accept-Language": "en"})
    assert answer.status_code == 302
    after = client.get("/account", headers={"Accept-Language": "en"})
    assert "言語とタイムゾーンを保存しました。" in after.text and '<html lang="ja">' in after.text
    user = session.scalar(select(User).where(User.email == "viewer@example.com"))
    assert (user.language, user.timezone) == ("ja", "Asia/Tokyo")
    # Back to "as the browser says" and the default zone.
    client.post("/account", data={"language": "", "timezone": "", "csrf_token": client.csrf})
    session.refresh(user)
    assert (user.language, user.timezone) == (None, None)


def test_the_account_page_refuses_an_unknown_zone_or_language_naming_each(app, session):
    client = signed_in(app, session, role="viewer", language="en")
    answer = client.post("/account", data={"language": "fr", "timezone": "Mars/Olympus",
                                           "csrf_token": client.csrf})
    assert answer.status_code == 422
    assert "timezone &#39;Mars/Olympus&#39;: must be an IANA time zone name" in answer.text
    assert "language &#39;fr&#39;: must be one of en, ja" in answer.text
    user = session.scalar(select(User).where(User.email == "viewer@example.com"))
    assert (user.language, user.timezone) == ("en", None)  # nothing half-saved


def test_the_header_links_to_the_account_page(app, session):
    client = signed_in(app, session, role="viewer")
    assert 'href="/account"' in client.get("/tokens").text


# Dates, numbers, plurals


def test_times_are_shown_in_the_readers_zone_and_language_with_the_zone_named(app, session):
    other = create_user(session, "ann@example.com", PASSWORD, "viewer")
    other.last_sign_in_at = datetime(2026, 11, 25, 11, 37, tzinfo=timezone.utc)
    session.commit()
    tokyo = signed_in(app, session, language="ja", tz="Asia/Tokyo")
    page = tokyo.get("/users").text
    assert '<time datetime="2026-11-25T11:37:00+00:00">2026年11月25日 20:37 Asia/Tokyo</time>' \
        in page
    paris = signed_in(app, session, language="en", tz="Europe/Paris", email="p@example.com")
    assert ">Nov 25, 2026 12:37 Europe/Paris</time>" in paris.get("/users").text
    utc = signed_in(app, session, email="u@example.com")
    assert ">Nov 25, 2026 11:37 UTC</time>" in utc.get("/users", headers={
        "Accept-Language": "en"}).text


def _task_state(kind="regenerate", status="running", done=356, total=356, said=None,
                message=""):
    return {"kind": kind, "status": status, "done": done, "total": total, "said": said,
            "message": message}


@pytest.mark.parametrize("language, done, total, count, status", [
    ("en", 356, 356, "356 of 356 URLs", "Working…"),
    ("en", 1, 1, "1 of 1 URL", "Working…"),
    ("en", 1200, 45000, "1,200 of 45,000 URLs", "Working…"),
    ("ja", 356, 356, "356 / 356 URL", "処理中…"),
    ("ja", 1200, 45000, "1,200 / 45,000 URL", "処理中…"),
])
def test_task_progress_names_its_unit_in_the_readers_language(app, language, done, total,
                                                              count, status):
    with app.test_request_context(headers={"Accept-Language": language}):
        said = shown(_task_state(done=done, total=total))
    assert (said["count"], said["status"]) == (count, status)


def test_a_generations_outcome_gets_its_plurals_right_in_both_languages(app):
    from webapp.said import said, said_plural

    def outcome(urls, files, planned):
        return said_plural(
            "generation %(id)s: %(status)s, %(urls)s in %(num)s file; %(announcements)s.",
            "generation %(id)s: %(status)s, %(urls)s in %(num)s files; %(announcements)s.",
            files, id=7, status=said("succeeded"),
            urls=said_plural("%(num)s URL", "%(num)s URLs", urls),
            announcements=said_plural("%(num)s announcement planned",
                                      "%(num)s announcements planned", planned))

    with app.app_context():
        assert english([outcome(1, 1, 1)]) == \
            "generation 7: succeeded, 1 URL in 1 file; 1 announcement planned."
        assert english([outcome(1200, 3, 0)]) == \
            "generation 7: succeeded, 1200 URLs in 3 files; 0 announcements planned."
    with app.test_request_context(headers={"Accept-Language": "ja"}):
        assert render(outcome(1200, 3, 2)) == \
            "生成 7: 成功、1,200 件の URL を 3 個のファイルに出力、通知予定 2 件。"


def test_a_regeneration_task_reports_in_the_readers_language(app, session):
    from webapp.models import Url

    site = make_site(session)
    session.add_all(Url(site_id=site.id, loc=f"{site.base_url}p{n}") for n in range(3))
    session.commit()
    client = signed_in(app, session, role="editor", language="ja")
    answer = client.post(f"/sites/{site.slug}/regenerate", data={"csrf_token": client.csrf})
    assert answer.status_code == 302, answer.text
    page = client.get(answer.headers["Location"]).text
    assert "3 件の URL を 1 個のファイルに出力" in page and "完了しました。" in page
    state = client.get(answer.headers["Location"] + ".json").json
    assert "3 URLs in 1 file;" in state["message"]  # the API's and the CLI's words: English
    assert "3 件の URL" in state["shown"]["message"]


def test_a_rule_is_said_in_the_pages_language_and_stays_english_as_a_rule(app):
    error = None
    try:
        create_user_with_bad_email()
    except InvalidValue as exc:
        error = exc
    with app.test_request_context(headers={"Accept-Language": "ja"}):
        assert str(error) == "email 'nope': ann@example.com のようなメールアドレスを入力してください"
        assert error.rule == "must be an e-mail address such as ann@example.com"
    with app.app_context():  # the CLI: no request
        assert str(error) == "email 'nope': must be an e-mail address such as ann@example.com"


def create_user_with_bad_email():
    from webapp.accounts.users import create_user as create

    create(None, "nope", PASSWORD)


def test_a_form_error_on_the_users_page_is_in_japanese(app, session):
    client = signed_in(app, session, language="ja")
    answer = client.post("/users", data={"email": "nope", "password": PASSWORD, "role": "viewer",
                                         "csrf_token": client.csrf})
    assert answer.status_code == 422
    assert "ann@example.com のようなメールアドレスを入力してください" in answer.text
    assert "<option value=\"viewer\" selected>閲覧者</option>" in answer.text


def test_error_pages_are_translated(app, session):
    client = signed_in(app, session, language="ja")
    answer = client.get("/no-such-page")
    assert answer.status_code == 404
    assert "<h1>404 ページが見つかりません</h1>" in answer.text
    assert "このページは存在しません。" in answer.text
    own = client.get("/tasks/" + "0" * 32)
    assert own.status_code == 404 and "このタスクは存在しません" in own.text


# The CLI and the API stay English


def test_the_cli_speaks_english_whatever_the_systems_language(runner):
    environment = {"LANG": "ja_JP.UTF-8", "LC_ALL": "ja_JP.UTF-8", "LANGUAGE": "ja"}
    result = runner.invoke(args=["users", "create", "nope", "--password", PASSWORD],
                           env=environment)
    assert result.exit_code != 0
    assert "email 'nope': must be an e-mail address such as ann@example.com" in result.output
    result = runner.invoke(args=["users", "create", "ann@example.com", "--password", "x\0y"],
                           env=environment)
    assert "must not contain the NUL character" in result.output


def test_the_apis_code_and_rule_stay_english_when_the_client_asks_for_japanese(app, session):
    user = create_user(session, "api@example.com", PASSWORD, "editor")
    _, secret = create_token(session, user, "test", "write", None)
    session.commit()
    refused = app.test_client().post(
        "/api/v1/sites", data='{"name": "\\u0000", "base_url": "https://new.example/"}',
        headers={"Authorization": f"Bearer {secret}", "Content-Type": "application/json",
                 "Accept-Language": "ja"})
    assert refused.status_code == 422
    body = refused.json["error"]
    assert body["code"] == "unprocessable_entity"
    assert body["errors"][0]["rule"] == "must not contain the NUL character (\\u0000)"


# Every template string marked, every msgid translated

# Templates other helpers are marking on their own branches at the same time: the lead empties
# this set when their work is merged. Every other template must pass.
NOT_YET_MARKED: set[str] = set()  # every template is marked
# Text that is not words in any language: separators, and examples of addresses.
NOT_WORDS = {"·", "–", "…", "page-1", "page-2", "sitemap.xml", "/blog/", "/products/", "shop.example.com",
             "HTTP", "cron:0", "User-agent:", "Disallow:", "nginx", "Caddy", "robots.txt"}
VISIBLE_ATTRIBUTES = {"placeholder", "title", "aria-label", "alt", "data-confirm", "label"}
GETTEXT = {"_", "gettext", "ngettext", "pgettext", "npgettext"}
LETTER = re.compile(r"[^\W\d_]")


class _VisibleText(HTMLParser):
    """The text a person can see or hear: text nodes and visible attributes, not scripts."""

    def __init__(self):
        super().__init__(convert_charrefs=True)
        self.found: list[str] = []
        self.hidden = 0

    # Code and samples of it (an nginx block, a curl line) read the same in every language.
    HIDDEN = ("script", "style", "code", "pre", "kbd", "samp")

    def handle_starttag(self, tag, attrs):
        if tag in self.HIDDEN:
            self.hidden += 1
        attrs = dict(attrs)
        for name, value in attrs.items():
            if value and (name in VISIBLE_ATTRIBUTES or (name == "value" and (
                    tag == "button" or attrs.get("type") in ("submit", "button", "reset")))):
                self.found.append(value)

    def handle_endtag(self, tag):
        if tag in self.HIDDEN:
            self.hidden -= 1

    def handle_data(self, data):
        if not self.hidden:
            self.found.append(data)


def _words(text: str) -> list[str]:
    """Words to translate: not separators, names of things, or paths (/sitemaps/...)."""
    return [word for word in text.split()
            if word not in NOT_WORDS and not word.startswith("/") and LETTER.search(word)]


def untranslated(path: Path) -> list[str]:
    """The user-visible words of a template that no gettext call wraps: its HTML text (Jinja
    tags, expressions and comments taken out) and the string constants in its expressions that
    read as words (with a space, or a capital), outside `_()`/`{% trans %}`."""
    tree = Environment(extensions=["jinja2.ext.i18n"]).parse(path.read_text())
    translated: set[int] = set()
    for call in tree.find_all(nodes.Call):
        if isinstance(call.node, nodes.Name) and call.node.name in GETTEXT:
            translated.update(id(const) for const in call.find_all(nodes.Const))
    found = []
    for const in tree.find_all(nodes.Const):
        value = const.value
        if id(const) not in translated and isinstance(value, str) and re.search(
                r"[A-Za-z]{2}", value) and (" " in value.strip() or value[:1].isupper()):
            found.append(value)
    parser = _VisibleText()
    # Each expression or tag becomes a space: attribute values and text keep their shape.
    parser.feed(" ".join(data.data for data in tree.find_all(nodes.TemplateData)))
    parser.close()
    return found + [word for text in parser.found for word in _words(text)]


def _templates() -> list[str]:
    return sorted(str(path.relative_to(TEMPLATES)) for path in TEMPLATES.rglob("*.html"))


@pytest.mark.parametrize("name", [name for name in _templates() if name not in NOT_YET_MARKED])
def test_every_user_visible_string_of_a_template_is_marked_for_translation(name):
    assert untranslated(TEMPLATES / name) == []


def test_the_template_check_finds_unmarked_text_attributes_and_macro_labels(tmp_path):
    page = tmp_path / "page.html"
    page.write_text(
        '{% extends "base.html" %}{# a comment #}\n<h1>{{ _("Fine") }}</h1><p>Plain text</p>'
        '<input placeholder="Search here" value="{{ v }}"><button value="Go" type="submit">'
        '{{ _("Go") }}</button><a title="{{ _(\'ok\') }}" data-confirm="Sure?">·</a>'
        "{{ field('name', 'Site name', v, help=_('Translated')) }}"
        "{% trans %}Marked <b>too</b>{% endtrans %}<option>{{ r }}</option>")
    assert untranslated(page) == ["Site name", "Plain", "text", "Search", "here", "Go",
                                  "Sure?"]


def test_templates_not_yet_marked_exist():
    """The skip set names real templates, so that emptying it is all the lead has to do."""
    assert NOT_YET_MARKED <= set(_templates())


def _placeholders(text: str) -> set[str]:
    return set(re.findall(r"%\((\w+)\)[sd]", text))


def _extract(tmp_path) -> Path:
    """messages.pot as `make translations` extracts it: the same keywords and mapping."""
    makefile = (ROOT / "Makefile").read_text()
    keywords = re.findall(r"-k (\S+)", makefile)
    pot = tmp_path / "messages.pot"
    pybabel = Path(sys.executable).with_name("pybabel")
    subprocess.run([str(pybabel), "-q", "extract", "--no-location", "-F",
                    str(ROOT / "webapp" / "translations" / "babel.cfg"),
                    *[arg for keyword in keywords for arg in ("-k", keyword)],
                    "-o", str(pot), "."], cwd=ROOT, check=True, capture_output=True)
    return pot


def catalog_problems(template, japanese) -> list[str]:
    """Each msgid of `template` with no Japanese, with other placeholders, or left in English."""
    problems = []
    for message in template:
        if not message.id:
            continue
        entry = japanese.get(message.id, message.context)
        strings = ([] if entry is None else
                   list(entry.string) if isinstance(entry.string, tuple) else [entry.string])
        ids = message.id if isinstance(message.id, tuple) else (message.id,)
        if not strings or not all(strings):
            problems.append(f"no Japanese for {ids[0]!r}")
            continue
        wanted = set().union(*(_placeholders(text) for text in ids))
        for text in strings:
            if _placeholders(text) != wanted:
                problems.append(f"placeholders of {ids[0]!r} differ: {text!r}")
            # A sentence left in English: words in the msgid, no Japanese in the msgstr.
            if re.search(r"[a-z]{3}", re.sub(r"%\(\w+\)[sd]", "", ids[0])) \
                    and not JAPANESE.search(text) and ids[0] not in NAMES:
                problems.append(f"{ids[0]!r} is not translated: {text!r}")
    return problems


def test_every_marked_string_has_a_japanese_translation_with_the_same_placeholders(tmp_path):
    with open(_extract(tmp_path), "rb") as handle:
        template = read_po(handle)
    with open(CATALOG, "rb") as handle:
        japanese = read_po(handle, locale="ja")
    assert catalog_problems(template, japanese) == []


# Spaces in Japanese: none between two Japanese characters (words and particles, katakana
# compounds, full-width punctuation: サービスアカウントの、「…」を); one half-width space
# between a Japanese letter and a Latin word or a number beside it (URL を、5 件、Search
# Console の); none beside full-width punctuation (（JSON）、・URL). A placeholder is spaced as
# the value it holds reads: %(count)s 件, %(url)s を (Latin, numbers), 毎週%(weekday)s
# (Japanese words); the check leaves placeholders out.
_JA = "\u3000-\u303f\u3040-\u30ff\u4e00-\u9fff\uff00-\uffef"
_LETTER = "\u3041-\u309f\u30a1-\u30fa\u30fc\u4e00-\u9fff"
SPACE_BETWEEN_JAPANESE = re.compile(f"[{_JA}] +[{_JA}]")
NO_SPACE_BESIDE_LATIN = re.compile(f"[{_LETTER}][A-Za-z0-9]|[A-Za-z0-9][{_LETTER}]")
PLACEHOLDER = re.compile(r"%\(\w+\)[sd]")


def spacing_problems(japanese) -> list[str]:
    """Each msgstr that breaks the rule above, with the place."""
    problems = []
    for message in japanese:
        strings = message.string if isinstance(message.string, tuple) else (message.string,)
        for text in filter(None, strings):
            text = PLACEHOLDER.sub("\N{OBJECT REPLACEMENT CHARACTER}", text)
            for rule, found in (("a space between Japanese", SPACE_BETWEEN_JAPANESE),
                                ("no space beside Latin", NO_SPACE_BESIDE_LATIN)):
                problems += [f"{rule}: {text[max(0, m.start() - 10):m.end() + 10]!r}"
                             for m in found.finditer(text)]
    return problems


def test_japanese_has_no_half_width_space_between_words_and_particles():
    with open(CATALOG, "rb") as handle:
        japanese = read_po(handle, locale="ja")
    assert spacing_problems(japanese) == []


def test_japanese_words_in_parentheses_take_full_width_ones():
    """（robots.txt に従い）as the rest of the catalog writes it, not (robots.txt に従い)."""
    with open(CATALOG, "rb") as handle:
        japanese = read_po(handle, locale="ja")
    half_width = [text for message in japanese if message.id for text in (
        message.string if isinstance(message.string, tuple) else (message.string,))
        if any(JAPANESE.search(inside) for inside in re.findall(
            r"\(([^()]*)\)", PLACEHOLDER.sub("", text or "")))]
    assert half_width == []


def test_the_spacing_check_finds_each_kind_of_stray_or_missing_space():
    from babel.messages.catalog import Catalog

    japanese = Catalog(locale="ja")
    japanese.add("Service account", "サービス アカウント")
    japanese.add("Delete?", "削除しますか？ 戻せません。")
    japanese.add("%(num)s URLs", "%(num)s 件の URLを")
    japanese.add("Five", "5件")
    japanese.add("Fine", "%(num)s 件の URL を「削除」しました（JSON）・URL")
    assert [problem.split(":")[0] for problem in spacing_problems(japanese)] == [
        "a space between Japanese", "a space between Japanese", "no space beside Latin",
        "no space beside Latin"]


def test_a_name_people_write_in_japanese_is_set_in_brackets_not_spaced(app, session):
    """A site's or token's name may be Japanese, so a message cannot space it as Latin: it is
    quoted with 「」, which reads right whichever script the name is in."""
    client = signed_in(app, session, language="ja")
    created = client.post("/sites/new", data={
        "name": "日本のお店", "base_url": "https://shop.example.jp/", "encoding": "utf-8",
        "csrf_token": client.csrf}, follow_redirects=True)
    create_token(session, session.scalar(select(User)), "社内の管理画面", "read", None)
    session.commit()
    pages = [created.text] + [client.get(path).text for path in (
        "/sites/shop-example-jp/settings", "/sites/shop-example-jp/delete", "/tokens")]
    text = " ".join(pages)  # the token's question is a data-confirm attribute
    for sentence in ("「日本のお店」を作成しました。", "「日本のお店」を削除…",
                     "「日本のお店」を削除しますか？", "「社内の管理画面」を無効にしますか？"):
        assert sentence in text


def test_the_catalog_check_finds_missing_english_and_mismatched_translations():
    from babel.messages.catalog import Catalog

    template, japanese = Catalog(), Catalog(locale="ja")
    for msgid in ("Missing", "Saved %(url)s.", "Left in English", "OK: %(finding)s"):
        template.add(msgid)
    template.add(("%(num)s file", "%(num)s files"))
    japanese.add("Saved %(url)s.", "%(loc)s を保存しました。")
    japanese.add("Left in English", "Left in English")
    japanese.add("OK: %(finding)s", "OK: %(finding)s")
    japanese.add(("%(num)s file", "%(num)s files"), ("%(num)s 個のファイル",))
    assert catalog_problems(template, japanese) == [
        "no Japanese for 'Missing'",
        "placeholders of 'Saved %(url)s.' differ: '%(loc)s を保存しました。'",
        "'Left in English' is not translated: 'Left in English'"]


@pytest.mark.parametrize("schedule, english, japanese", [
    ("off", "Off", "オフ"),
    ("every 6h", "Every 6 hours", "6 時間ごと"),
    ("every 1m", "Every 1 minute", "1 分ごと"),
    ("cron:30 3 * * *", "Daily at 03:30", "毎日 03:30"),
    ("cron:0 4 * * 1", "Monday at 04:00", "毎週月曜日 04:00"),
    ("cron:*/5 1 * * *", "cron:*/5 1 * * *", "cron:*/5 1 * * *"),  # custom: as written
])
def test_a_schedule_is_described_in_the_readers_words(app, schedule, english, japanese):
    from webapp.schedules.picker import describe

    for language, expected in (("en", english), ("ja", japanese)):
        with app.test_request_context(headers={"Accept-Language": language}):
            assert describe(schedule) == expected
