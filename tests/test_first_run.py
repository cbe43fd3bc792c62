"""The first run: an empty dashboard, and a site without URLs, say what to do next and link it."""

from __future__ import annotations

import pytest
from lxml import html

from tests.builders import csrf_token, make_site, make_urls
from webapp.accounts.users import create_user

PASSWORD = "correct horse battery"


@pytest.fixture
def sessions(app):
    return app.extensions["db_sessionmaker"]


def signed_in(app, sessions, role: str, language: str = "en"):
    with sessions() as session:
        create_user(session, f"{role}@example.com", PASSWORD, role)
        session.commit()
    client = app.test_client()
    client.environ_base["HTTP_ACCEPT_LANGUAGE"] = language
    csrf = csrf_token(client)
    assert client.post("/sign-in", data={"email": f"{role}@example.com", "password": PASSWORD,
                                         "csrf_token": csrf}).status_code == 302
    return client


def steps(page: str) -> list[tuple[str, list[str]]]:
    """Each step of the page's list of next steps: its text and where its links go."""
    tree = html.fromstring(page)
    return [(" ".join(item.text_content().split()), item.xpath(".//a/@href"))
            for item in tree.xpath("//section[@class='next-steps']//li")]


def test_an_empty_dashboard_explains_the_three_steps_and_links_them(app, sessions):
    client = signed_in(app, sessions, "editor")
    found = steps(client.get("/").text)
    assert [text.split(":")[0] for text, _ in found] == ["Add a site", "Add URLs", "Publish"]
    assert found[0][1] == ["/sites/new"] and found[1][1] == ["/tokens"]

    with sessions() as session:
        make_site(session)
    assert steps(client.get("/").text) == []  # gone once there is a site


def test_a_viewer_is_told_who_adds_sites(app, sessions):
    page = signed_in(app, sessions, "viewer").get("/").text
    assert "an editor or an admin adds sites" in page
    assert [links for _, links in steps(page)][0] == []  # no link to a form they may not use


def test_the_steps_read_in_japanese(app, sessions):
    page = signed_in(app, sessions, "editor", "ja").get("/").text
    assert "サイトマップ公開までの 3 ステップ" in page
    assert [text.split("：")[0].split(":")[0] for text, _ in steps(page)][0] == "サイトを追加する"


def test_a_site_without_urls_shows_its_next_steps_on_its_urls_page(app, sessions):
    client = signed_in(app, sessions, "editor")
    with sessions() as session:
        site = make_site(session, name="Shop of the north", slug="north")
        slug = site.slug
    found = steps(client.get(f"/sites/{slug}/urls").text)
    assert [links for _, links in found] == [
        [f"/sites/{slug}/urls#add-url", f"/sites/{slug}/import"], [f"/sites/{slug}"],
        [f"/sites/{slug}/settings"]]
    page = html.fromstring(client.get(f"/sites/{slug}/urls").text)
    assert page.xpath("//h1/text()") == ["Shop of the north"]  # the name, not the slug

    with sessions() as session:
        make_urls(session, session.get(type(site), site.id), 1)
    assert steps(client.get(f"/sites/{slug}/urls").text) == []
    assert steps(client.get(f"/sites/{slug}/urls?status=deleted").text) == []
