"""hreflang clusters: alternates without their return link are named (site health, the API's
write report), and clusters whose pages are all URLs of the site can be completed."""

from __future__ import annotations

import pytest
from sqlalchemy import select

from tests.builders import make_site
from tests.test_api import api, api_as  # noqa: F401 - fixtures
from tests.test_dashboard import as_role, post  # noqa: F401 - fixtures
from webapp.models import Url
from webapp.urls import health, hreflang, save_url

BASE = "https://shop.example.com/"


pytestmark = pytest.mark.session_outside_app_context


def alternates(session, loc) -> dict[str, str]:
    session.expire_all()
    url = session.scalar(select(Url).where(Url.loc == loc))
    return {a.hreflang: a.href for a in url.alternates}


def cluster_site(session):
    """en lists de and fr; de lists nothing; fr lists en only. One more page lists a page on
    another host, and one more cluster gives one language to two pages."""
    site = make_site(session)
    en, de, fr = BASE + "en", BASE + "de", BASE + "fr"
    save_url(session, site, en, alternates=[f"en={en}", f"de={de}", f"fr={fr}"])
    save_url(session, site, de)
    save_url(session, site, fr, alternates=[f"fr={fr}", f"en={en}"])
    save_url(session, site, BASE + "x", alternates=[f"en={BASE}x", "de=https://shop.example.de/x"])
    save_url(session, site, BASE + "y", alternates=[f"en={BASE}y", f"de={BASE}z"])
    save_url(session, site, BASE + "z", alternates=[f"de={BASE}z", f"en={BASE}other"])
    save_url(session, site, BASE + "other")
    session.commit()
    return site


def test_alternates_without_a_return_link_are_counted_and_named(session):
    site = cluster_site(session)
    found = hreflang.unreturned(session, site)
    assert found.count == 3  # fr lists en back, though not de: that is for completing
    assert sorted(found.pairs) == [(BASE + "en", BASE + "de"), (BASE + "y", BASE + "z"),
                                   (BASE + "z", BASE + "other")]
    [warning] = [w for w in health.warnings(session, site) if "hreflang" in w.title]
    assert warning.title == "3 hreflang alternates do not list their page back"
    assert f"{BASE}de does not list {BASE}en." in warning.detail


def test_completing_adds_the_missing_links_where_every_page_is_in_the_site(session):
    site = cluster_site(session)
    seq = session.scalar(select(Url.change_seq).order_by(Url.change_seq.desc()).limit(1))
    report = hreflang.complete(session, site)
    session.commit()
    whole = {"en": BASE + "en", "de": BASE + "de", "fr": BASE + "fr"}
    assert [alternates(session, BASE + p) for p in ("en", "de", "fr")] == [whole] * 3
    assert (report.clusters, report.urls) == (1, 2)
    assert sorted(report.skipped) == [
        f"The cluster of {BASE}other was left as it is: it gives the language en to both "
        f"{BASE}y and {BASE}other.",
        f"The cluster of {BASE}x was left as it is: https://shop.example.de/x is not a live "
        "URL of this site."]
    assert alternates(session, BASE + "x") == {"en": BASE + "x", "de": "https://shop.example.de/x"}
    changed = session.scalars(select(Url.loc).where(Url.change_seq > seq)).all()
    assert sorted(changed) == [BASE + "de", BASE + "fr"]  # announced at the next generation
    assert hreflang.unreturned(session, site).count == 2  # the cluster that cannot be completed
    assert hreflang.complete(session, site).urls == 0  # nothing twice


def test_the_api_write_report_names_alternates_without_a_return_link(api, session):  # noqa: F811
    make_site(session)
    answer = api.post("/sites/shop/urls", {"urls": [
        {"loc": BASE + "en", "alternates": {"en": BASE + "en", "de": BASE + "de"}},
        {"loc": BASE + "de"}]})
    assert answer.status_code == 200, answer.text
    [warning] = answer.json["warnings"]
    assert (warning["rule"], warning["count"]) == ("hreflang_reciprocal", 1)
    assert warning["pairs"] == [{"loc": BASE + "en", "alternate": BASE + "de"}]
    answer = api.post("/sites/shop/urls", {"urls": [
        {"loc": BASE + "de", "alternates": {"en": BASE + "en", "de": BASE + "de"}}]})
    assert answer.json["warnings"] == []


def test_the_dashboard_offers_and_completes_the_clusters(as_role, session):  # noqa: F811
    cluster_site(session)
    editor = as_role("editor")
    page = editor.get("/sites/shop").text
    assert "3 hreflang alternates do not list their page back" in page
    assert 'action="/sites/shop/urls/complete-hreflang"' in page
    assert 'complete-hreflang' not in as_role("viewer").get("/sites/shop").text
    done = post(editor, "/sites/shop/urls/complete-hreflang")
    assert done.status_code == 302
    page = editor.get("/sites/shop").text
    assert "1 hreflang clusters completed (2 pages changed); 2 left as they are." in page
    assert "2 hreflang alternates do not list their page back" in page


def test_the_command_line_completes_the_clusters(app, session):
    cluster_site(session)
    result = app.test_cli_runner().invoke(args=["urls", "complete-hreflang", "shop"])
    assert result.exit_code == 0, result.output
    assert result.stdout == "1 hreflang clusters completed (2 pages changed); 2 left as they are.\n"
    assert "is not a live URL of this site" in result.stderr
