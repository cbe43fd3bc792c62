"""API tokens made and revoked from the command line and the dashboard."""

from __future__ import annotations

import re

import pytest
from sqlalchemy import select

from tests import test_dashboard
from tests.builders import make_site
from webapp.models import ApiToken
from webapp.accounts.users import create_user

# The dashboard tests' fixtures: signed-in clients.
as_role, post = test_dashboard.as_role, test_dashboard.post
# conftest's session, outside an app context as test_dashboard's tests have it.
pytestmark = pytest.mark.session_outside_app_context


def api_get(client, secret, path="/api/v1/sites"):
    return client.get(path, headers={"Authorization": f"Bearer {secret}"})


# The command line


def test_tokens_create_prints_the_secret_once_and_list_never_shows_it(runner, client, session):
    make_site(session)
    make_site(session, "Blog", "https://blog.example.com/")
    create_user(session, "cms@example.com", "correct horse", "editor")
    session.commit()
    made = runner.invoke(args=["tokens", "create", "cms@example.com", "--site", "shop",
                               "--scope", "write", "--name", "CMS"])
    assert made.exit_code == 0, made.output
    secret = re.search(r"^(smd_\S+)$", made.stdout, re.M).group(1)
    assert "write on shop" in made.stdout
    assert [s["slug"] for s in api_get(client, secret).json["items"]] == ["shop"]
    listed = runner.invoke(args=["tokens", "list"])
    assert listed.exit_code == 0 and secret not in listed.output
    assert "cms@example.com\twrite\tshop\tCMS\tlast used 20" in listed.output
    token_id = session.scalar(select(ApiToken.id))
    assert runner.invoke(args=["tokens", "revoke", str(token_id)]).exit_code == 0
    assert api_get(client, secret).status_code == 401
    assert "revoked" in runner.invoke(args=["tokens", "list"]).output


def test_tokens_create_refuses_what_it_cannot_make(runner, session):
    make_site(session)
    create_user(session, "viewer@example.com", "correct horse", "viewer")
    session.commit()
    cases = [
        (["viewer@example.com", "--all-sites", "--scope", "write"], "a write token needs an editor"),
        (["viewer@example.com", "--scope", "read"], "give --site SITE"),
        (["viewer@example.com", "--site", "nope", "--scope", "read"], "no site with slug"),
        (["nobody@example.com", "--all-sites", "--scope", "read"], "no account"),
    ]
    for args, message in cases:
        answer = runner.invoke(args=["tokens", "create", *args])
        assert answer.exit_code != 0 and message in answer.output, answer.output
        assert "Traceback" not in answer.output
    assert session.scalar(select(ApiToken.id)) is None
    assert runner.invoke(args=["tokens", "revoke", "99"]).exit_code != 0


def test_cli_ids_past_the_id_columns_are_usage_errors(runner, session):
    shop = make_site(session)
    session.commit()
    for args in (["tokens", "revoke", "2147483648"],
                 ["sitemaps", "rollback", shop.slug, "2147483648"],
                 ["sitemaps", "diff", shop.slug, "1", "2147483648"]):
        answer = runner.invoke(args=args)
        assert answer.exit_code == 2, (args, answer.output)  # click's usage error
        assert "2147483648" in answer.output and "Traceback" not in answer.output


# The dashboard


def test_a_token_made_in_the_dashboard_is_shown_once_and_revoked_there(as_role, app, session):
    make_site(session)
    editor = as_role("editor")
    answer = post(editor, "/tokens", name="CMS", scope="write", all_sites="on")
    assert answer.status_code == 201
    secret = re.search(r'id="new-token"[^>]*>(smd_[^<]+)<', answer.text).group(1)
    page = editor.get("/tokens").text
    assert secret not in page and secret[:10] in page and "all sites" in page
    assert api_get(app.test_client(), secret).status_code == 200
    token_id = session.scalar(select(ApiToken.id))
    assert post(editor, f"/tokens/{token_id}/revoke").status_code == 302
    assert api_get(app.test_client(), secret).status_code == 401


def test_dashboard_token_rules(as_role, session):
    shop = make_site(session)
    viewer = as_role("viewer")
    answer = post(viewer, "/tokens", name="mine", scope="write", sites=str(shop.id))
    assert answer.status_code == 422 and "a write token needs an editor" in answer.text
    answer = post(viewer, "/tokens", name="mine", scope="read")
    assert answer.status_code == 422 and "at least one site" in answer.text
    for value in ("²", "9" * 30, "2147483648", "4294967296", "x"):  # never a 500
        answer = post(viewer, "/tokens", name="mine", scope="read", sites=[str(shop.id), value])
        assert answer.status_code == 422, (value, answer.status_code)
        assert f"sites &#39;{value}&#39;: is not one of the sites" in answer.text
    assert post(viewer, "/tokens", name="mine", scope="read", sites=str(shop.id)).status_code == 201
    mine = session.scalar(select(ApiToken.id))
    # Others see neither the token nor a way to revoke it; an admin sees and revokes it.
    editor = as_role("editor")
    assert "mine" not in editor.get("/tokens").text
    assert post(editor, f"/tokens/{mine}/revoke").status_code == 404
    admin = as_role("admin")
    assert "viewer@example.com" in admin.get("/tokens").text
    assert post(admin, f"/tokens/{mine}/revoke").status_code == 302


def test_token_forms_need_sign_in_and_the_csrf_token(client, as_role):
    assert client.get("/tokens").status_code == 302
    editor = as_role("editor")
    for path in ["/tokens", "/tokens/1/revoke"]:
        answer = editor.post(path, data={"name": "x", "scope": "read", "all_sites": "on"})
        assert answer.status_code == 400 and "CSRF" in answer.text


def test_a_new_token_with_several_bad_fields_names_each_of_them(as_role, session):
    make_site(session)
    answer = post(as_role("viewer"), "/tokens", name="", scope="write")
    assert answer.status_code == 422
    for named in ("name &#39;&#39;: must be 1 to 100 characters",
                  "a write token needs an editor or admin account",
                  "name at least one site, or choose all sites"):
        assert named in answer.text
    assert session.scalar(select(ApiToken.id)) is None
