"""Verification against a real website on 127.0.0.1 (tests/website.py): every field a check
records, every setting, what generation and IndexNow make of it, runs that resume, the
command, the clock, and the dashboard page."""

from __future__ import annotations

from datetime import timedelta
from types import SimpleNamespace

import pytest
from sqlalchemy import select, update

from tests import verify_website as test_website
from tests.builders import another_shell, make_site
from webapp import jobs, notify
from webapp.models import Delivery, Generation, Site, Url, UrlCheck, VerifyRun, utcnow
from webapp.sites import site_settings, update_site
from webapp.urls import save_url, upsert_urls
from webapp.outbound import StoppedByOwnRules
from webapp.said import render
from webapp.verify import verify_site
from webapp.verify.settings import DEFAULT_USER_AGENT

LINE = ("19 checked: 8 ok, 3 broken, 3 redirected, 2 noindex, 2 canonical elsewhere, "
        "1 unreachable")


@pytest.fixture(scope="module")
def served():
    with test_website.serve() as site:
        yield site


@pytest.fixture
def web(served):
    served.reset()
    served.version, served.stamp = 1, 0
    return served


def make_verified_site(session, web, pages=test_website.PAGES, **settings):
    site = make_site(session, "Web", f"{web.base}/site/", indexnow_key="testkey-0123456789",
                     indexnow_endpoint=f"{web.base}/outside/indexnow")
    if settings:
        update_site(session, site, settings)
    for page in pages:
        save_url(session, site, f"{web.base}/site/{page}", {"lastmod": "2026-01-01"})
    session.commit()
    return site


def checks(session, site) -> dict[str, SimpleNamespace]:
    """Each URL's check as it is now (copies: later runs do not change them), by path."""
    session.expire_all()
    rows = session.execute(select(Url.loc, UrlCheck).join(UrlCheck, UrlCheck.url_id == Url.id)
                           .where(Url.site_id == site.id)).all()
    columns = UrlCheck.__table__.columns.keys()
    return {loc.removeprefix(site.base_url): SimpleNamespace(
        **{name: getattr(check, name) for name in columns}) for loc, check in rows}


def test_a_run_records_every_field_and_never_leaves_the_site(app, session, runner, web):
    site = make_verified_site(session, web)
    result = runner.invoke(args=["verify", site.slug])
    assert result.exit_code == 0, result.output
    assert result.output.splitlines()[-1] == LINE
    assert "1 not checked: robots.txt disallows them" in result.output
    found = checks(session, site)
    base = f"{web.base}/site/"
    home = found[""]
    assert (home.outcome, home.status, home.final_url, home.noindex, home.canonical) == (
        "ok", 200, base, False, None)
    assert home.content_type == "text/html; charset=utf-8" and len(home.fingerprint) == 64
    assert home.content_changed_at is not None and home.run_id is not None
    assert (found["r1"].outcome, found["r1"].status, found["r1"].final_url) == (
        "redirected", 200, f"{base}final")
    leave = found["leave"]
    assert (leave.outcome, leave.status, leave.final_url) == (
        "redirected", 302, f"{web.base}/outside/page")
    assert "leaves the site" in leave.error
    assert found["to-private"].final_url == f"{base}private/page"
    assert [(found[p].outcome, found[p].status) for p in ("missing", "gone", "error")] == [
        ("broken", 404), ("broken", 410), ("broken", 500)]
    for page in ("noindex-header", "noindex-meta"):
        assert (found[page].outcome, found[page].noindex) == ("noindex", True)
    assert (found["canonical-link"].outcome, found["canonical-link"].canonical) == (
        "canonical", base)
    header = found["canonical-header"]
    assert (header.outcome, header.canonical, header.content_type) == (
        "canonical", base, "application/pdf")
    assert (found["canonical-self"].outcome, found["canonical-self"].canonical) == (
        "ok", f"{base}canonical-self")
    assert found["slow"].outcome == "unreachable" and found["slow"].status is None
    assert "no answer within 5 s" in found["slow"].error
    # Shift_JIS by header, EUC-JP by <meta>: read as the same text as the UTF-8 page.
    japanese = test_website.digest_of_text("サイトマップ日本語のページです")
    assert {found[p].fingerprint for p in ("sjis", "eucjp", "utf8")} == {japanese}
    assert found["file.pdf"].etag == '"pdf1"'
    assert found["private/page"].outcome == "blocked"
    # Never outside the site's scope, nor where robots.txt says no.
    paths = web.paths()
    assert paths and all(p.startswith("/site/") or p == "/robots.txt" for p in paths), paths
    assert "/site/private/page" not in paths and "/outside/page" not in paths
    assert {entry["headers"]["User-Agent"] for entry in web.log} == {DEFAULT_USER_AGENT}


def test_a_second_run_asks_conditionally_and_dates_only_real_changes(app, session, web):
    site = make_verified_site(session, web, verify_ignore=r"Generated at \d+")
    verify_site(app, site.id)
    first = checks(session, site)
    web.reset()
    web.stamp, web.version = 99, 1  # a new nonce and timestamp on the home page only
    verify_site(app, site.id)
    second = checks(session, site)
    etag = [e for e in web.log if e["path"] == "/site/etag"]
    assert etag[0]["headers"]["If-None-Match"] == '"v1"'
    assert [e["method"] for e in web.log if e["path"] == "/site/file.pdf"] == ["HEAD"]
    for page in ("", "etag", "changing", "file.pdf"):
        assert second[page].fingerprint == first[page].fingerprint, page
        assert second[page].content_changed_at == first[page].content_changed_at, page
    web.version = 2  # now the pages really change
    verify_site(app, site.id)
    third = checks(session, site)
    for page in ("changing", "etag"):
        assert third[page].fingerprint != first[page].fingerprint
        assert third[page].content_changed_at > first[page].content_changed_at
    assert third[""].content_changed_at == first[""].content_changed_at


def test_without_an_ignore_pattern_a_changing_timestamp_is_a_change(app, session, web):
    site = make_verified_site(session, web, pages=("",))
    verify_site(app, site.id)
    before = checks(session, site)[""].fingerprint
    web.stamp = 5  # the script's nonce alone would not count; the visible line does
    verify_site(app, site.id)
    assert checks(session, site)[""].fingerprint != before


def test_the_user_agent_is_sent_and_robots_txt_is_read_for_it(app, session, runner, web):
    site = make_verified_site(session, web, pages=("", "changing"), user_agent="pickybot/2.0")
    result = runner.invoke(args=["verify", site.slug])
    assert result.output.splitlines()[-1] == ("0 checked: 0 ok, 0 broken, 0 redirected, "
                                              "0 noindex, 0 canonical elsewhere, 0 unreachable")
    assert web.paths() == ["/robots.txt"]
    assert web.log[0]["headers"]["User-Agent"] == "pickybot/2.0"


def test_requests_per_host_stay_within_the_bound_and_pause_between(app, session, web):
    site = make_verified_site(session, web, pages=[f"changing?n={n}" for n in range(12)])
    app.config.update(VERIFY_CONCURRENCY=2)
    verify_site(app, site.id)
    assert 1 <= web.most_in_flight <= 2
    web.reset()
    app.config.update(VERIFY_CONCURRENCY=1, VERIFY_DELAY_MS=100)
    verify_site(app, site.id)
    times = [e["at"] for e in web.log if e["path"] == "/site/changing"]
    assert len(times) == 12
    assert min(b - a for a, b in zip(times, times[1:])) >= 0.1


class Stop(Exception):
    pass


def test_a_stopped_run_is_continued_by_the_next(app, session, web):
    pages = [f"changing?n={n}" for n in range(12)]
    site = make_verified_site(session, web, pages=pages)

    def stop(done, total):
        raise Stop

    with pytest.raises(Stop):
        verify_site(app, site.id, progress=stop, batch=5)
    run = session.scalar(select(VerifyRun))
    assert run.status == "failed" and run.done == 5
    written = {f"/site/{path}" for path, check in checks(session, site).items()
               if check.run_id == run.id}
    assert len(written) == 5
    web.reset()
    summary = verify_site(app, site.id, batch=5)
    second = [e["target"] for e in web.log if e["path"] == "/site/changing"]
    assert summary.run_id == run.id and summary.checked == 12
    assert sorted(second) == sorted({f"/site/{page}" for page in pages} - written)
    session.expire_all()
    assert session.get(VerifyRun, run.id).status == "done"


def test_a_run_under_way_in_a_live_process_is_not_run_twice(app, session, runner, web):
    site = make_verified_site(session, web, pages=("",))
    session.add(VerifyRun(site_id=site.id, status="running", owner="elsewhere:1:abc",
                          started_at=utcnow(), heartbeat_at=utcnow(), total=1, done=0))
    session.commit()
    result = runner.invoke(args=["verify", site.slug])
    assert result.exit_code == 1 and "is being verified by elsewhere:1:abc" in result.output
    assert web.paths() == []


def generate(app, site) -> Generation:
    generation = jobs.regenerate(site.id, app)
    assert generation.status in ("succeeded", "unchanged"), generation.error
    return generation


def published_locs(app, site) -> dict[str, str | None]:
    """loc -> lastmod of the published urlset."""
    import re

    from webapp.sitemaps import get_store
    with app.app_context():
        store = get_store(app)
        current = store.current_set(site.storage_key)
        text = store.local(current.files["sitemap.xml"]).read_text()
    return {loc: lastmod for loc, lastmod in re.findall(
        r"<loc>([^<]+)</loc>(?:<lastmod>([^<]+)</lastmod>)?", text)}


def test_generation_leaves_out_what_leave_out_names_and_says_so(app, session, runner, web):
    site = make_verified_site(session, web)
    verify_site(app, site.id)
    result = runner.invoke(args=["sitemaps", "generate", site.slug])
    assert "left out: 1 blocked, 3 broken, 2 canonical, 2 noindex" in result.output
    generation = session.scalar(select(Generation).order_by(Generation.id.desc()))
    assert generation.left_out == {"blocked": 1, "broken": 3, "canonical": 2, "noindex": 2}
    locs = published_locs(app, site)
    base = site.base_url
    assert f"{base}missing" not in locs and f"{base}noindex-meta" not in locs
    assert f"{base}canonical-link" not in locs
    # robots.txt blocks it: Google would report "Submitted URL blocked by robots.txt".
    assert f"{base}private/page" not in locs
    assert f"{base}r1" in locs and f"{base}slow" in locs
    assert generation.url_count == 20 - 8
    update_site(session, session.get(Site, site.id), {"leave_out": "broken,redirected"})
    session.commit()
    generation = generate(app, session.get(Site, site.id))
    assert generation.left_out == {"broken": 3, "redirected": 3}
    assert f"{base}private/page" in published_locs(app, site)  # kept when not named
    update_site(session, session.get(Site, site.id), {"leave_out": ""})
    session.commit()
    generation = generate(app, session.get(Site, site.id))
    assert generation.left_out is None and generation.url_count == 20


def test_lastmod_comes_from_the_chosen_source(app, session, web):
    site = make_verified_site(session, web, pages=("", "changing"))
    # A lastmod far ahead, stored before input refused such dates: generation leaves it as is.
    url, _ = save_url(session, site, f"{web.base}/site/changing")
    url.lastmod = "2099-01-01"
    session.commit()
    verify_site(app, site.id)
    seen = checks(session, site)[""].content_changed_at
    content = seen.strftime("%Y-%m-%dT%H:%M:%S+00:00")
    generate(app, site)
    assert set(published_locs(app, site).values()) == {"2026-01-01", "2099-01-01"}
    for source, home, changing in (("content", content, None),
                                   ("newest", content, "2099-01-01")):
        update_site(session, session.get(Site, site.id), {"lastmod_source": source})
        session.commit()
        generate(app, session.get(Site, site.id))
        locs = published_locs(app, site)
        assert locs[site.base_url] == home
        expected = checks(session, site)["changing"].content_changed_at.strftime(
            "%Y-%m-%dT%H:%M:%S+00:00") if source == "content" else changing
        assert locs[f"{site.base_url}changing"] == expected


@pytest.mark.parametrize("source, files_change", [("content", False), ("given", True)])
def test_a_cms_touching_every_date_changes_no_file_and_announces_nothing_with_content(
        app, session, web, source, files_change):
    site = make_verified_site(session, web, pages=("", "changing", "etag"),
                              lastmod_source=source, indexnow_enabled="on")
    verify_site(app, site.id)
    # As if the first verification was an hour ago: a later change of content is then dated
    # apart from it, however fast the test runs (lastmod is written to the second).
    for check in session.scalars(select(UrlCheck)):
        check.content_changed_at -= timedelta(hours=1)
    session.commit()
    generate(app, site)
    notify.announce(site.id, app)
    announced = session.scalar(select(Delivery.id).order_by(Delivery.id.desc()).limit(1))
    # The CMS sends every URL again with tomorrow's date; the pages are as they were.
    report = upsert_urls(session, session.get(Site, site.id), [
        {"loc": f"{web.base}/site/{page}", "lastmod": "2026-06-01"}
        for page in ("", "changing", "etag")])
    session.commit()
    assert report.updated == 3
    verify_site(app, site.id)
    generation = generate(app, session.get(Site, site.id))
    notify.announce(site.id, app)
    session.expire_all()
    new = session.scalars(select(Delivery).where(Delivery.id > (announced or 0),
                                                 Delivery.engine == "indexnow")).all()
    if files_change:
        assert generation.status == "succeeded" and len(new) == 1
    else:
        assert generation.status == "unchanged" and new == []
        # A page that really changes is the one change carried.
        web.version = 2
        verify_site(app, site.id)
        assert generate(app, session.get(Site, site.id)).status == "succeeded"
        notify.announce(site.id, app)
        session.expire_all()
        urls = session.scalars(select(Delivery.urls).where(Delivery.engine == "indexnow")
                               .order_by(Delivery.id.desc())).first()
        assert sorted(urls.split("\n")) == [f"{web.base}/site/changing", f"{web.base}/site/etag"]


def test_dates_that_move_without_a_change_are_counted(app, session, web, client):
    site = make_verified_site(session, web, pages=("", "changing"))
    verify_site(app, site.id)
    upsert_urls(session, session.get(Site, site.id), [
        {"loc": f"{web.base}/site/changing", "lastmod": "2026-07-01"}])
    session.commit()
    verify_site(app, site.id)
    run = session.scalar(select(VerifyRun).order_by(VerifyRun.id.desc()))
    assert run.dates_moved == 1


def test_settings_are_validated_named_and_shown(app, session, runner):
    site = make_site(session)
    shown = site_settings(site)
    assert (shown["lastmod_source"], shown["leave_out"], shown["verify_schedule"],
            shown["user_agent"]) == ("given", "broken,noindex,canonical,blocked", "off", "")
    result = runner.invoke(args=["sites", "set", site.slug, "lastmod_source=content",
                                 "leave_out=canonical, broken,redirected",
                                 "verify_schedule=every 1d", "user_agent=MyBot/1.0",
                                 r"verify_ignore=Generated at \d+\nnonce-\w+"])
    assert result.exit_code == 0, result.output
    result = runner.invoke(args=["sites", "show", site.slug])
    for line in ("lastmod_source=content", "leave_out=broken,redirected,canonical",
                 "verify_schedule=every 1d", "user_agent=MyBot/1.0",
                 r"verify_ignore=Generated at \d+\nnonce-\w+"):
        assert line in result.output.splitlines(), result.output
    session.expire_all()
    assert session.get(Site, site.id).verify_next_run_at is not None
    result = runner.invoke(args=["sites", "set", site.slug, "lastmod_source=latest",
                                 "leave_out=broken,gone", "verify_schedule=sometimes",
                                 "user_agent=Bot\x01", "verify_ignore=(unclosed"])
    assert result.exit_code == 1
    for text in ("lastmod_source 'latest': must be one of given, content, newest",
                 "leave_out 'broken,gone': must be a comma list of broken, redirected, "
                 "noindex, canonical, blocked (or empty); 'gone' is not one",
                 "verify_schedule 'sometimes': must be `off`",
                 "user_agent", "must be at most 300 printable ASCII characters",
                 "verify_ignore '(unclosed': must be regular expressions"):
        assert text in result.output, result.output


def test_the_api_reads_and_changes_the_settings(app, session):
    from tests.test_api import Api
    from webapp.accounts.tokens import create_token
    from webapp.accounts.users import create_user
    site = make_site(session)
    user = create_user(session, "api@example.com", "correct horse", "editor")
    _, secret = create_token(session, user, "test", "write", None)
    session.commit()
    api = Api(app.test_client(), secret)
    answer = api.patch(f"/sites/{site.slug}", {"lastmod_source": "newest", "leave_out":
                                               "broken", "user_agent": None})
    assert answer.status_code == 200, answer.text
    assert (answer.json["lastmod_source"], answer.json["leave_out"],
            answer.json["user_agent"]) == ("newest", "broken", None)
    answer = api.patch(f"/sites/{site.slug}", {"leave_out": "everything"})
    assert answer.status_code == 422
    assert answer.json["error"]["errors"][0]["field"] == "leave_out"


def test_the_clock_queues_due_verifications_as_tasks(app, session, web):
    from webapp.scheduler.clock import enqueue_due_verifications
    site = make_verified_site(session, web, pages=("",), verify_schedule="every 1h")
    assert enqueue_due_verifications(app) == []  # not due yet
    session.execute(update(Site).values(verify_next_run_at=utcnow()))
    session.commit()
    assert enqueue_due_verifications(app) == [site.id]  # eager tasks: run here and now
    assert enqueue_due_verifications(app) == []
    session.expire_all()
    run = session.scalar(select(VerifyRun))
    assert run.status == "done" and run.counts == {"ok": 1}
    assert session.get(Site, site.id).verify_next_run_at > utcnow()


def test_small_sites_generated_together_honour_verification_too(app, session, web):
    from webapp.sitemaps import small_sites
    dated = make_verified_site(session, web, pages=("", "changing"), lastmod_source="content")
    verify_site(app, dated.id)
    when = checks(session, dated)[""].content_changed_at.strftime("%Y-%m-%dT%H:%M:%S+00:00")
    session.expire_all()
    [run], others = small_sites.write_small_sites(session, [session.get(Site, dated.id)],
                                                  utcnow())
    assert others == [] and run.body.decode().count(f"<lastmod>{when}</lastmod>") == 2
    leaving = make_site(session, "Leaving", f"{web.base}/site/",
                        sitemap_url=f"{web.base}/site/leaving.xml")
    for page in ("", "missing"):
        save_url(session, leaving, f"{web.base}/site/{page}")
    session.commit()
    verify_site(app, leaving.id)
    session.expire_all()
    runs, others = small_sites.write_small_sites(session, [session.get(Site, leaving.id)],
                                                 utcnow())
    assert runs == [] and [site.id for site in others] == [leaving.id]  # generate_site counts


# Pages each outcome of: some left out of the sitemap (broken, noindex, canonical elsewhere).
MIXED = ("", "changing", "r1", "missing", "noindex-meta", "canonical-link", "private/page")


def change_seqs(session, site) -> dict[str, int | None]:
    session.expire_all()
    return {loc: seq for loc, seq in session.execute(
        select(Url.loc, Url.change_seq).where(Url.site_id == site.id))}


def test_a_run_this_servers_own_rule_refuses_changes_nothing(app, session, web):
    """The server verified the site with OUTBOUND_ALLOW=127.0.0.1; the same verification run
    from a shell without it has every request refused by that rule: the run fails naming
    OUTBOUND_ALLOW, and every check, change number and the published set stay as they were."""
    site = make_verified_site(session, web, pages=MIXED)
    verify_site(app, site.id)
    generate(app, session.get(Site, site.id))
    published, before, seqs = published_locs(app, site), checks(session, site), \
        change_seqs(session, site)
    assert len(published) == 3 and before["missing"].outcome == "broken"  # ok, ok, redirected
    web.reset()
    with another_shell(app, OUTBOUND_ALLOW="") as shell:
        with pytest.raises(StoppedByOwnRules) as stopped:
            verify_site(shell, site.id)
    said = str(stopped.value)
    assert said.startswith("verification stopped before checking any URL: 127.0.0.1 resolves "
                           "to a loopback address") and "(OUTBOUND_ALLOW)" in said
    with app.test_request_context(headers={"Accept-Language": "ja"}):
        assert render(stopped.value.said_line()).startswith(
            "URL を確認する前に検証を中止しました: 127.0.0.1 は")
    assert web.paths() == []
    assert checks(session, site) == before and change_seqs(session, site) == seqs
    run = session.scalar(select(VerifyRun).order_by(VerifyRun.id.desc()).limit(1))
    assert (run.status, run.error) == ("failed", said)
    generate(app, session.get(Site, site.id))
    assert published_locs(app, site) == published
    # The server, whose rule allows the site, continues the run that stopped.
    assert verify_site(app, site.id).counts == {"ok": 2, "redirected": 1, "broken": 1,
                                                "noindex": 1, "canonical": 1, "blocked": 1}


def test_the_command_run_without_the_servers_outbound_allow_fails_in_one_line(app, session, web):
    site = make_verified_site(session, web, pages=("", "missing"))
    verify_site(app, site.id)
    before = checks(session, site)
    with another_shell(app, OUTBOUND_ALLOW="") as shell:
        result = shell.test_cli_runner().invoke(args=["verify", site.slug])
    assert result.exit_code == 1, result.output
    [line] = result.output.splitlines()
    assert line.startswith("Error: verification stopped before checking any URL: ")
    assert "OUTBOUND_ALLOW" in line and "the earlier results are kept" in line
    assert checks(session, site) == before


def test_ignore_patterns_run_in_linear_time_and_python_only_syntax_is_refused(session):
    """verify_ignore runs on text the live site controls: RE2 runs it, so a backtracking
    pattern ends at once; what RE2 cannot compile is refused with its line named."""
    import subprocess
    import sys

    from webapp.errors import InvalidValue
    site = make_site(session)
    update_site(session, site, {"verify_ignore": "(a+)+$"})
    session.commit()
    code = ("import lxml.html; from webapp.verify import page, settings;"
            "tree = lxml.html.fromstring('<p>' + 'a' * 40 + '!</p>');"
            f"page.fingerprint(tree, b'', settings.ignore_patterns({site.verify_ignore!r}))")
    # A ceiling for a stuck test: a start of Python takes seconds on a busy machine, and the
    # backtracking the pattern asks of `re` (2^40 steps) would take hours.
    subprocess.run([sys.executable, "-c", code], timeout=120, check=True)
    with pytest.raises(InvalidValue, match=r"line 2 is not .*\(RE2\)"):
        update_site(session, site, {"verify_ignore": r"nonce-\w+\n(a)\1"})
    with pytest.raises(InvalidValue, match="at most 300 characters"):
        update_site(session, site, {"verify_ignore": "a" * 301})


def test_an_ignore_pattern_too_costly_to_run_is_refused_naming_its_line(session, caplog):
    """RE2's time is linear in the text times its program's size when its DFA gives up:
    `(a|aa){0,1000}` held a verification 109 s on one page of 1 MB. The same caps as exclusion
    rules: 500 instructions a pattern, 2,000 together."""
    from webapp.errors import InvalidValue
    from webapp.verify.settings import ignore_patterns
    site = make_site(session)
    with pytest.raises(InvalidValue, match=r"line 2 is too costly to run: RE2 compiles it to "
                                           r"6004 instructions.* at most 500"):
        update_site(session, site, {"verify_ignore": "nonce-\\w+\n(a|aa){0,1000}"})
    update_site(session, site, {"verify_ignore": "(a|aa){0,82}"})  # 496 instructions
    assert site.verify_ignore == "(a|aa){0,82}"
    with pytest.raises(InvalidValue, match=r"together the patterns are too costly to run from "
                                           r"line 5 on: RE2 compiles them to \d+ instructions"):
        update_site(session, site, {"verify_ignore": "\n".join(
            f"{letter}(a|aa){{0,82}}" for letter in "bcdef")})
    # A pattern stored before the caps is left out when a run reads it, and logged.
    stored = "nonce-\\w+\n(a|aa){0,1000}"
    assert [pattern.pattern for pattern in ignore_patterns(stored)] == [r"nonce-\w+"]
    assert "(a|aa){0,1000}" in caplog.text and "too costly" in caplog.text


def test_a_redirect_out_through_dot_segments_is_not_followed_and_nul_is_not_stored(
        app, session, engine):
    """/site/../outside starts with the base URL but is /outside: the target is normalised
    before it is judged and asked for. A NUL in a canonical the site names is not stored
    (PostgreSQL refuses it in text): an answer with a NUL in a header is not valid HTTP
    (RFC 9110, 5.5: refused, by h11), so the page is not reached."""
    from werkzeug import Response
    engine.expect_request("/robots.txt").respond_with_data("", content_type="text/plain")
    engine.expect_request("/site/a").respond_with_response(Response(
        "", status=301, headers={"Location": engine.url_for("/site/../outside")}))
    engine.expect_request("/site/b").respond_with_response(Response(
        "", status=301, headers={"Location": engine.url_for("/site/x/../c")}))
    engine.expect_request("/site/c").respond_with_data(
        "<p>c</p>", content_type="text/html",
        headers={"Link": '</site/d\x00e>; rel="canonical"'})
    engine.expect_request("/outside").respond_with_data("<p>other owner</p>",
                                                        content_type="text/html")
    site = make_site(session, "Sub", engine.url_for("/site/"))
    for page in ("a", "b"):
        session.add(Url(site_id=site.id, loc=site.base_url + page))
    session.commit()
    verify_site(app, site.id)
    assert "/outside" not in [request.path for request, _ in engine.log]
    found = checks(session, site)
    assert (found["a"].outcome, found["a"].final_url) == ("redirected",
                                                          engine.url_for("/outside"))
    assert "leaves the site" in found["a"].error
    assert (found["b"].outcome, found["b"].final_url, found["b"].canonical) == (
        "unreachable", site.base_url + "c", None)
