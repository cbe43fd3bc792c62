"""A site's exclusion rules (`exclude`) and tracking parameters (`strip_params`) on every
path a URL comes in by: the settings themselves, the dashboard's add and edit forms, CSV and
list imports (inline and in the worker process), sitemap imports, pasted URLs, the JSON API,
the command line; and what stored URLs the rules match."""

from __future__ import annotations

import io

import pytest
from hypothesis import given
from hypothesis import strategies as st
from sqlalchemy import select

from tests.builders import csrf_token, make_site
from tests.probes import wait_for
from webapp.errors import InvalidValue
from webapp.models import Site, Url
from webapp.outbound import Policy
from webapp.sites import site_settings, update_site
from webapp.accounts.tokens import create_token
from webapp.urls import Rules, import_opened, import_urls, open_import
from webapp.urls.exclusions import (
    MAX_RULE_LENGTH,
    MAX_RULE_PROGRAM,
    MAX_RULES,
    compile_rule,
    program_size,
)
from webapp.urls.rule_cost import MAX_RULE_WORK
from webapp.accounts.users import create_user

SHOP = "https://shop.example.com/"
RULES = {"exclude": "/tmp/*\\nre:\\.php$", "strip_params": "utm_*,gclid"}
PASSWORD = "correct horse"


pytestmark = pytest.mark.session_outside_app_context


@pytest.fixture
def shop(session):
    site = make_site(session)
    update_site(session, site, RULES)
    session.commit()
    return site


def live(session) -> set[str]:
    session.expire_all()
    return set(session.scalars(select(Url.loc).where(Url.deleted_at.is_(None))))


# --- the settings ------------------------------------------------------------------------------

def test_the_rules_are_settings_shown_as_sites_set_takes_them(session, shop):
    shown = site_settings(shop)
    assert shown["exclude"] == "/tmp/*\\nre:\\\\.php$"
    assert shown["strip_params"] == "utm_*,gclid"
    update_site(session, shop, {"exclude": shown["exclude"]})  # round trip
    assert shop.exclude == "/tmp/*\nre:\\.php$"


@pytest.mark.parametrize("value, message", [
    ("/ok/*\\nre:(unclosed", "line 2: is not a valid regular expression (missing ): "
                             "(unclosed)"),
    ("re:(a)\\\\1", "line 1: is not a valid regular expression (invalid escape sequence: \\1)"),
    ("re:(?=look)", "line 1: is not a valid regular expression"),
    ("tmp/*", "line 1: a glob is matched against the URL's path, so it starts with / or *"),
    ("re:", "line 1: re: needs a regular expression after it"),
    ("/" + "a" * MAX_RULE_LENGTH, f"line 1: a rule may be at most {MAX_RULE_LENGTH} characters"),
    ("\\n".join(f"/r{n}/*" for n in range(MAX_RULES + 1)),
     f"a site may have at most {MAX_RULES} exclusion rules"),
])
def test_a_bad_rule_is_refused_naming_its_line_and_the_rule(session, shop, value, message):
    with pytest.raises(InvalidValue) as refused:
        update_site(session, shop, {"exclude": value})
    assert refused.value.field == "exclude"
    assert message in str(refused.value)


def test_strip_params_takes_parameter_names_only(session, shop):
    with pytest.raises(InvalidValue, match="strip_params 'utm source'"):
        update_site(session, shop, {"strip_params": "utm source"})


def test_a_pattern_that_backtracks_forever_in_python_runs_in_linear_time(session, shop):
    update_site(session, shop, {"exclude": "re:^/(a+)+$"})
    evil = SHOP + "a" * 2000 + "!"
    # Python's re takes longer than the age of the universe on this; RE2 does not backtrack.
    assert Rules.of(shop).excluding(evil) is None


# --- the rules themselves --------------------------------------------------------------------

def test_rules_too_costly_together_are_refused_naming_the_rule(app, session, shop):
    """Each rule is within the cap, but joined into the one matcher every URL meets they are
    over it: refused on saving (a 422 naming the rule that tips it), never stored."""
    rules = "\n".join(f"re:/{n}[a-z]{{300}}" for n in range(10))
    client = sign_in(app, session)
    answer = client.post("/sites/shop/settings", data={"csrf_token": client.csrf,
                                                       "exclude": rules})
    assert answer.status_code == 422
    assert "together the rules are too costly to run from this rule on" in answer.text
    assert "re:/6[a-z]{300}" in answer.text  # the seventh: 7 x 306 instructions pass 2,000
    session.expire_all()
    assert session.get(Site, shop.id).exclude == "/tmp/*\nre:\\.php$"
    assert client.get("/sites/shop/settings").status_code == 200


# The probe's rule: 0.3 s to search a path of 2,000 characters; and one just under the cap.
COSTLY = "re:(a|aa){0,1000}$"
JUST_UNDER = "re:(a|aa){0,82}$"


def test_a_rule_too_costly_to_run_is_refused_naming_it_wherever_rules_are_set(app, session,
                                                                              shop, runner):
    """The cost is RE2's program size, which multiplies the time of every search: the probe's
    rule has twelve times the cap's; one a few instructions under it is taken."""
    assert compile_rule(JUST_UNDER).programsize <= MAX_RULE_PROGRAM \
        < compile_rule("re:(a|aa){0,83}$").programsize
    assert compile_rule(COSTLY).programsize > 10 * MAX_RULE_PROGRAM
    client = sign_in(app, session)
    form = client.post("/sites/shop/settings", data={"csrf_token": client.csrf,
                                                     "exclude": f"/tmp/*\n{COSTLY}"})
    japanese = client.post("/sites/shop/settings", headers={"Accept-Language": "ja"},
                           data={"csrf_token": client.csrf, "exclude": COSTLY})
    user = create_user(session, "cms@example.com", PASSWORD, "editor")
    _, secret = create_token(session, user, "cms", "write", None)
    session.commit()
    api = app.test_client().patch("/api/v1/sites/shop", json={"exclude": [COSTLY]},
                                  headers={"Authorization": f"Bearer {secret}"})
    cli = runner.invoke(args=["sites", "set", "shop", f"exclude={COSTLY}"])

    assert form.status_code == 422
    assert "line 2: is too costly to run: RE2 compiles it to 6004 instructions" in form.text
    assert "(a|aa){0,1000}$" in form.text
    assert japanese.status_code == 422 and "実行の負荷が大きすぎます" in japanese.text
    assert api.status_code == 422
    [error] = api.get_json()["error"]["errors"]
    assert error["field"] == "exclude" and COSTLY in error["message"]
    assert error["rule"].startswith("line 1: is too costly to run")
    assert cli.exit_code != 0 and COSTLY in cli.output and "too costly" in cli.output
    session.expire_all()
    assert session.get(Site, shop.id).exclude == "/tmp/*\nre:\\.php$"
    update_site(session, shop, {"exclude": JUST_UNDER})
    assert Rules.of(shop).excluding(SHOP + "aa") == JUST_UNDER


def test_an_upsert_that_would_hold_a_web_thread_long_is_refused_before_any_is_checked(
        app, session, shop):
    """The costliest rules the caps accept still take tens of milliseconds on a URL of 2,048
    characters: a request may ask at most MAX_RULE_WORK of them (characters searched times
    the program size), refused whole beyond it with how many characters fit."""
    update_site(session, shop, {"exclude": "\n".join(
        f"re:(?:a|b)*{c}(?:a|b){{480}}(?:x|y)*" for c in "abab")})
    user = create_user(session, "cms@example.com", PASSWORD, "editor")
    _, secret = create_token(session, user, "cms", "write", None)
    session.commit()
    size = program_size(Rules.of(shop).exclude)
    fit = MAX_RULE_WORK // (size * 2_000)  # URLs of 2,000 characters
    client = app.test_client()
    headers = {"Authorization": f"Bearer {secret}"}

    refused = client.post("/api/v1/sites/shop/urls", headers=headers, json={"urls": [
        {"loc": f"{SHOP}{n:06d}".ljust(2_000, "x")} for n in range(fit + 1)]})
    assert refused.status_code == 422
    [error] = refused.get_json()["error"]["errors"]
    assert error["field"] == "urls"
    assert f"URLs of at most {MAX_RULE_WORK // size} characters together" in error["message"]
    assert live(session) == set()
    taken = client.post("/api/v1/sites/shop/urls", headers=headers, json={"urls": [
        {"loc": SHOP + f"p{n}"} for n in range(1000)]})
    assert taken.status_code == 200 and taken.get_json()["created"] == 1000


def test_stored_rules_over_the_cap_still_apply_and_the_settings_page_names_them(app, session,
                                                                              shop):
    """Rules saved before the cap are kept as they are, never dropped: they apply, and the
    settings page says which are over it."""
    shop.exclude = f"/tmp/*\n{COSTLY}"  # as saved before the cap
    session.commit()
    client = sign_in(app, session)
    page = client.get("/sites/shop/settings")
    assert page.status_code == 200
    assert "These rules were saved before their cost was capped" in page.text
    assert COSTLY in page.text.split("These rules were saved before")[1].split("</strong>")[0]
    assert Rules.of(shop).excluding(SHOP + "tmp/a") == "/tmp/*"
    assert Rules.of(shop).excluding(SHOP + "aaaa") == COSTLY


def test_alternates_inside_the_site_meet_its_rules(session, shop):
    """An hreflang href inside the site is published as an xhtml:link: an excluded one is
    refused naming the rule, a stripped parameter is taken off and noted; other hosts are
    left as they are."""
    from webapp.urls import check_url
    with pytest.raises(InvalidValue, match=r"is excluded by the site's rule `/tmp/\*`"):
        check_url(shop, SHOP + "en", {}, None, [f"en={SHOP}en", f"de={SHOP}tmp/secret"])
    checked = check_url(shop, SHOP + "en", {}, None, [
        f"en={SHOP}en", f"fr={SHOP}fr?utm_source=x&size=4",
        "it=https://shop.example.it/tmp/a?utm_source=x"])
    assert checked.alternates == {"en": SHOP + "en", "fr": SHOP + "fr?size=4",
                                  "it": "https://shop.example.it/tmp/a?utm_source=x"}
    assert any(note.field == "alternate" and "utm_source were removed" in str(note)
               for note in checked.notes)


def test_globs_match_the_whole_path_stored_or_decoded_and_regexes_search_it():
    rules = Rules(exclude=("/tmp/*", "re:\\.php$", "/ブログ/*"))
    assert rules.excluding(SHOP + "tmp/a/b") == "/tmp/*"
    assert rules.excluding(SHOP + "tmp") is None
    assert rules.excluding(SHOP + "x/tmp/a") is None  # a glob matches from the root
    assert rules.excluding(SHOP + "index.php") == "re:\\.php$"
    assert rules.excluding(SHOP + "index.php?x=.php") == "re:\\.php$"
    assert rules.excluding(SHOP + "index.phtml?a=.php") is None  # the query is not the path
    assert rules.excluding(SHOP + "%E3%83%96%E3%83%AD%E3%82%B0/1") == "/ブログ/*"


NAME = st.text(alphabet="abcdefgxyz_", min_size=1, max_size=8)
VALUE = st.text(alphabet="abc019-.", max_size=5)


@given(st.lists(st.tuples(st.one_of(NAME, st.sampled_from(["utm_source", "UTM_Medium",
                                                             "gclid"])), VALUE), max_size=8))
def test_stripping_is_idempotent_and_keeps_the_other_parameters_in_order(pairs):
    rules = Rules(strip_params=("utm_*", "gclid"))
    query = "&".join(f"{name}={value}" for name, value in pairs)
    url = SHOP + "page" + (f"?{query}" if query else "")
    stripped, removed = rules.strip(url)
    tracking = [name.lower().startswith("utm_") or name.lower() == "gclid" for name, _ in pairs]
    kept = [f"{name}={value}" for (name, value), drop in zip(pairs, tracking) if not drop]
    assert stripped == SHOP + "page" + ("?" + "&".join(kept) if kept else "")
    assert removed == [name for (name, _), drop in zip(pairs, tracking) if drop]
    assert rules.strip(stripped) == (stripped, [])


# --- every input path ------------------------------------------------------------------------

def sign_in(app, session, role="editor"):
    create_user(session, f"{role}@example.com", PASSWORD, role)
    session.commit()
    client = app.test_client()
    token = csrf_token(client)
    assert client.post("/sign-in", data={"email": f"{role}@example.com", "password": PASSWORD,
                                         "csrf_token": token}).status_code == 302
    client.csrf = csrf_token(client, "/")
    return client


def test_the_add_form_refuses_an_excluded_url_and_notes_stripped_parameters(app, session, shop):
    client = sign_in(app, session)
    refused = client.post("/sites/shop/urls", data={"csrf_token": client.csrf,
                                                    "loc": SHOP + "tmp/draft"})
    added = client.post("/sites/shop/urls", data={"csrf_token": client.csrf,
                                                  "loc": SHOP + "shoes?utm_source=x&size=4"},
                        follow_redirects=True)

    assert refused.status_code == 422
    assert "is excluded by the site&#39;s rule `/tmp/*`" in refused.text
    assert "the query parameters utm_source were removed" in added.text
    assert live(session) == {SHOP + "shoes?size=4"}


def test_the_edit_form_refuses_to_save_a_url_the_rules_now_exclude(app, session, shop):
    url = Url(site_id=shop.id, loc=SHOP + "old.php")  # stored before the rule
    session.add(url)
    session.commit()
    client = sign_in(app, session)
    answer = client.post(f"/sites/shop/urls/{url.id}", data={"csrf_token": client.csrf,
                                                             "priority": "0.5"})
    assert answer.status_code == 422 and "re:\\.php$" in answer.text


CSV = (f"loc,priority\n{SHOP}a,0.5\n{SHOP}tmp/1,0.5\n{SHOP}tmp/2,0.5\n{SHOP}x.php,0.5\n"
       f"{SHOP}b?gclid=9&id=3,0.5\n")
LIST = f"{SHOP}a\n{SHOP}tmp/1\n{SHOP}tmp/2\n{SHOP}x.php\n{SHOP}b?gclid=9&id=3\n"


@pytest.mark.parametrize("text", [CSV, LIST], ids=["csv", "list"])
@pytest.mark.parametrize("parallel", [False, True], ids=["inline", "worker process"])
def test_csv_and_list_imports_count_excluded_rows_by_rule(session, shop, text, parallel):
    report = import_urls(session, shop, io.StringIO(text), parallel=parallel)
    session.commit()

    summary = report.summary().splitlines()
    assert summary[0] == "added 2, updated 0, unchanged 0, rejected 0, excluded 3; " \
                         "1 kept with a note (listed below)"
    assert summary[1:3] == ["excluded by rule `/tmp/*`: 2", "excluded by rule `re:\\.php$`: 1"]
    assert "the query parameters gclid were removed" in report.english_notes()[0][1]
    assert live(session) == {SHOP + "a", SHOP + "b?id=3"}


def test_a_sitemap_import_counts_excluded_entries_by_rule(session, shop):
    sitemap = ('<?xml version="1.0" encoding="UTF-8"?>\n'
               '<urlset xmlns="http://www.sitemaps.org/schemas/sitemap/0.9">\n'
               + "".join(f"<url><loc>{SHOP}{path}</loc></url>\n"
                         for path in ("a", "tmp/1", "y.php", "c?utm_source=feed"))
               + "</urlset>\n").encode()
    policy = Policy.of({"NOTIFY_TIMEOUT": 1, "OUTBOUND_ALLOW": ""})
    with open_import(sitemap, "sitemap.xml", shop.base_url, None, policy) as opened:
        report = import_opened(session, shop, opened)
    session.commit()

    assert "excluded by rule `/tmp/*`: 1" in report.summary()
    assert "excluded by rule `re:\\.php$`: 1" in report.summary()
    assert live(session) == {SHOP + "a", SHOP + "c"}


def test_pasted_urls_are_excluded_in_the_dashboards_import(app, session, shop):
    client = sign_in(app, session)
    answer = client.post("/sites/shop/import", data={"csrf_token": client.csrf, "pasted": LIST})
    assert answer.status_code == 302
    task = wait_for(lambda: (state := client.get(answer.location + ".json").json)["status"]
                    in ("done", "failed") and state, 30, "the import")
    assert task["status"] == "done", task
    assert "excluded by rule `/tmp/*`: 2" in task["message"]
    assert live(session) == {SHOP + "a", SHOP + "b?id=3"}


def test_the_api_refuses_excluded_items_by_index_and_counts_them_by_rule(app, session, shop):
    user = create_user(session, "cms@example.com", PASSWORD, "editor")
    _, secret = create_token(session, user, "cms", "write", None)
    session.commit()
    client = app.test_client()
    headers = {"Authorization": f"Bearer {secret}"}
    answer = client.post("/api/v1/sites/shop/urls", headers=headers, json={"urls": [
        {"loc": SHOP + "a"}, {"loc": SHOP + "tmp/x"}, {"loc": SHOP + "b?utm_medium=m"}]})

    body = answer.get_json()
    assert answer.status_code == 200, body
    assert body["created"] == 2 and body["excluded"] == {"/tmp/*": 1}
    assert body["errors"] == [{"index": 1, "field": "loc",
                               "rule": "is excluded by the site's rule `/tmp/*`",
                               "message": f"loc '{SHOP}tmp/x': is excluded by the site's rule "
                                          "`/tmp/*`"}]
    assert body["notes"][0]["index"] == 2
    patched = client.patch("/api/v1/sites/shop", headers=headers,
                           json={"exclude": ["/drafts/*", "re:\\.asp$"], "strip_params": "ref"})
    assert patched.status_code == 200, patched.get_json()
    assert patched.get_json()["exclude"] == ["/drafts/*", "re:\\.asp$"]
    refused = client.patch("/api/v1/sites/shop", headers=headers, json={"exclude": ["re:("]})
    assert refused.status_code == 422
    assert refused.get_json()["error"]["errors"][0]["field"] == "exclude"


def test_the_command_line_refuses_excluded_urls_and_counts_them_in_imports(runner, session,
                                                                           shop, tmp_path):
    added = runner.invoke(args=["urls", "add", "shop", SHOP + "tmp/x"])
    noted = runner.invoke(args=["urls", "add", "shop", SHOP + "p?gclid=1"])
    path = tmp_path / "urls.txt"
    path.write_text(LIST)
    imported = runner.invoke(args=["urls", "import", "shop", str(path)])
    settings = runner.invoke(args=["sites", "set", "shop", "exclude=re:[z-a]"])

    assert added.exit_code == 1
    assert "is excluded by the site's rule `/tmp/*`" in added.output
    assert noted.exit_code == 0 and "the query parameters gclid were removed" in noted.output
    assert imported.exit_code == 0, imported.output
    assert "excluded by rule `/tmp/*`: 2" in imported.output
    assert settings.exit_code != 0 and "line 1: is not a valid regular expression" in \
        settings.output
    assert live(session) == {SHOP + "p", SHOP + "a", SHOP + "b?id=3"}


# --- URLs stored before the rules ------------------------------------------------------------

def test_stored_urls_the_new_rules_match_are_counted_and_deleted_on_request(app, session):
    site = make_site(session)
    session.add_all(Url(site_id=site.id, loc=SHOP + path) for path in ("a", "tmp/1", "tmp/2"))
    site.url_count = 3
    session.commit()
    client = sign_in(app, session)

    saved = client.post("/sites/shop/settings", data={
        "csrf_token": client.csrf, **{name: value for name, value in site_settings(site).items()
                                      if name not in ("gsc_credentials", "gsc_endpoint")},
        "exclude": "/tmp/*"}, follow_redirects=True)
    assert "2 stored URLs match the new exclusion rules" in saved.text
    assert live(session) == {SHOP + "a", SHOP + "tmp/1", SHOP + "tmp/2"}  # kept until asked
    page = client.get("/sites/shop/discover")
    assert "rule /tmp/*: 2" in page.text
    client.post("/sites/shop/discover/delete-excluded", data={"csrf_token": client.csrf})
    assert live(session) == {SHOP + "a"}
    assert session.get(Site, site.id).url_count == 1


def test_a_page_counts_the_stored_urls_the_rules_match_among_the_first_ones_only(session):
    from webapp.urls import health

    site = make_site(session, exclude="/tmp/*")
    session.add_all(Url(site_id=site.id, loc=SHOP + f"tmp/{n}") for n in range(5))
    session.commit()
    assert health.excluded_stored(session, site, scan=2)[0] == {"/tmp/*": 2}
    counts, ids = health.excluded_stored(session, site)
    assert counts == {"/tmp/*": 5} and len(ids) == 5
