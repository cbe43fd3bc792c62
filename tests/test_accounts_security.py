"""Accounts held against a hostile user (issue 15, findings 5, 8 and 9): sign-out ends the
session on the server, the sign-in throttle tells nobody which accounts exist and lets no
stranger lock anyone out, and passwords are long and not common."""

from __future__ import annotations

import base64
import hashlib
import json
import re
import sys
import threading
import zlib
from concurrent.futures import ThreadPoolExecutor
from datetime import timedelta

import pytest
import requests
from sqlalchemy import func, select, update

from tests.builders import csrf_token, served
from webapp import models
from webapp.errors import InvalidValue
from webapp.models import User, utcnow
from webapp.accounts.users import create_user, ensure_admin

PASSWORD = "correct horse"
STRANGER, OWNER = "203.0.113.7", "198.51.100.2"  # two client addresses (documentation ranges)


pytestmark = pytest.mark.session_outside_app_context


@pytest.fixture
def ann(session):
    user = create_user(session, "ann@example.com", PASSWORD, "admin")
    session.commit()
    return user


def sign_in(client, email, password=PASSWORD, address="127.0.0.1"):
    return client.post("/sign-in", environ_base={"REMOTE_ADDR": address},
                       data={"email": email, "password": password,
                             "csrf_token": csrf_token(client)})


def refusal(answer) -> tuple[int, str]:
    """What a refused sign-in says: its status and its one message."""
    return answer.status_code, re.search(r'role="alert">([^<]*)<', answer.text).group(1)


def cookie_payload(value: str) -> dict:
    """What a Flask session cookie carries (signed, not encrypted: anyone can read it)."""
    data = value.removeprefix(".")
    raw = base64.urlsafe_b64decode(data.split(".")[0] + "==")
    return json.loads(zlib.decompress(raw) if value.startswith(".") else raw)


def hash_checks(action) -> int:
    """How many scrypt computations `action` ran: a profiler sees every call of the C function
    that checks a password, so nothing of the app is replaced to count them."""
    count = 0

    def profile(_frame, event, arg):
        nonlocal count
        if event == "c_call" and arg is hashlib.scrypt:
            count += 1

    sys.setprofile(profile)
    try:
        action()
    finally:
        sys.setprofile(None)
    return count


# 5. Sign-out ends the session on the server


def test_a_cookie_copied_before_sign_out_stops_working_at_sign_out(app, ann):
    with served(app) as base:
        browser = requests.Session()
        page = browser.get(f"{base}/sign-in", timeout=30).text
        csrf = re.search(r'name="csrf_token" value="([^"]+)"', page).group(1)
        answer = browser.post(f"{base}/sign-in", timeout=30, allow_redirects=False, data={
            "email": "ann@example.com", "password": PASSWORD, "csrf_token": csrf})
        assert answer.status_code == 302
        thief = requests.Session()
        thief.cookies.set("session", browser.cookies["session"])
        assert thief.get(f"{base}/", timeout=30, allow_redirects=False).status_code == 200

        csrf = re.search(r'name="csrf_token" value="([^"]+)"',
                         browser.get(f"{base}/", timeout=30).text).group(1)
        answer = browser.post(f"{base}/sign-out", data={"csrf_token": csrf}, timeout=30,
                              allow_redirects=False)
        assert answer.status_code == 302

        stolen = thief.get(f"{base}/users", timeout=30, allow_redirects=False)
        assert stolen.status_code == 302 and "/sign-in" in stolen.headers["Location"]


def test_the_cookie_carries_a_random_session_id_of_which_only_a_digest_is_stored(
        app, client, session, ann):
    assert sign_in(client, "ann@example.com").status_code == 302
    carried = cookie_payload(client.get_cookie("session").value)["_user_id"]
    assert str(ann.id) not in carried.split(":") and ann.password_hash[-12:] not in carried
    assert client.get_cookie("remember_token") is None  # no "remember me"
    stored = session.scalars(select(models.UserSession)).all()
    assert [row.user_id for row in stored] == [ann.id]
    assert stored[0].secret_hash == hashlib.sha256(carried.encode()).hexdigest()

    other = app.test_client()
    assert sign_in(other, "ann@example.com").status_code == 302
    post_sign_out = other.post("/sign-out", data={"csrf_token": csrf_token(other, "/")})
    assert post_sign_out.status_code == 302
    session.expire_all()
    assert session.scalars(select(models.UserSession.secret_hash)).all() == [stored[0].secret_hash]
    assert client.get("/").status_code == 200  # signing out one browser leaves the other


def test_a_session_ends_after_twelve_idle_hours_or_seven_days(client, session, ann):
    assert sign_in(client, "ann@example.com").status_code == 302
    row = models.UserSession

    def age(**values):
        session.execute(update(row).values(**values))
        session.commit()

    age(last_seen_at=utcnow() - timedelta(hours=11))
    assert client.get("/").status_code == 200  # still alive, and seen again just now
    session.expire_all()
    assert session.scalar(select(row.last_seen_at)) > utcnow() - timedelta(minutes=1)
    age(created_at=utcnow() - timedelta(days=7, seconds=1))
    assert client.get("/").status_code == 302
    assert sign_in(client, "ann@example.com").status_code == 302
    age(last_seen_at=utcnow() - timedelta(hours=12, seconds=1))
    assert client.get("/").status_code == 302


def test_a_new_password_ends_the_accounts_sessions_and_no_one_elses(app, runner, session, ann):
    create_user(session, "bob@example.com", PASSWORD, "viewer")
    session.commit()
    ann_browser, bob_browser = app.test_client(), app.test_client()
    assert sign_in(ann_browser, "ann@example.com").status_code == 302
    assert sign_in(bob_browser, "bob@example.com").status_code == 302

    result = runner.invoke(args=["users", "set-password", "ann@example.com",
                                 "--password", "a brand new passphrase"])

    assert result.exit_code == 0, result.output
    assert ann_browser.get("/").status_code == 302
    assert bob_browser.get("/").status_code == 200
    session.expire_all()
    assert session.scalar(select(func.count()).select_from(models.UserSession)) == 1


# 8. The sign-in throttle: no account enumeration, no lock-out by a stranger


def test_a_stranger_cannot_lock_an_account_out(client, ann):
    for _ in range(12):
        assert sign_in(client, "ann@example.com", "a wrong guess!", STRANGER).status_code == 401
    assert sign_in(client, "ann@example.com", PASSWORD, STRANGER).status_code == 401  # paused
    assert sign_in(client, "ann@example.com", PASSWORD, OWNER).status_code == 302


def test_unknown_paused_and_wrong_attempts_get_one_answer(client, ann):
    def six_failures(email):
        return [refusal(sign_in(client, email, "a wrong guess!", STRANGER)) for _ in range(6)]

    answers = six_failures("ann@example.com")
    assert answers == six_failures("nobody@example.com")
    assert len(set(answers)) == 1 and answers[0][0] == 401
    # The right password of a paused account is refused in the very same words.
    assert refusal(sign_in(client, "ann@example.com", PASSWORD, STRANGER)) == answers[0]


def test_every_refusal_checks_one_password_hash(client, ann):
    def checks(email, password):
        csrf = csrf_token(client)
        return hash_checks(lambda: client.post("/sign-in", data={
            "email": email, "password": password, "csrf_token": csrf}))

    assert checks("nobody@example.com", "a wrong guess!") == 1
    assert checks("ann@example.com", "a wrong guess!") == 1
    for _ in range(5):
        checks("ann@example.com", "a wrong guess!")
    assert checks("ann@example.com", PASSWORD) == 1  # paused: refused after the same work
    assert checks("ann@example.com", "a wrong guess!") == 1


def test_guesses_sent_side_by_side_are_counted_one_by_one(app, session, ann):
    """Twelve guesses at once: five are weighed, the fifth pauses the account at that address,
    and the other seven are refused unweighed, not let through by a race."""
    with served(app) as base:
        browser = requests.Session()
        csrf = re.search(r'name="csrf_token" value="([^"]+)"',
                         browser.get(f"{base}/sign-in", timeout=30).text).group(1)
        cookies, start = dict(browser.cookies), threading.Barrier(12)

        def guess(n):
            start.wait(timeout=30)
            return requests.post(f"{base}/sign-in", cookies=cookies, timeout=60,
                                 allow_redirects=False, data={
                                     "email": "ann@example.com", "password": f"wrong guess {n}",
                                     "csrf_token": csrf}).status_code

        with ThreadPoolExecutor(12) as pool:
            assert list(pool.map(guess, range(12))) == [401] * 12
    rows = session.scalars(select(models.SignInThrottle)).all()
    assert sorted(row.attempts for row in rows) == [5, 12]  # the pair, and the address
    assert next(row for row in rows if row.attempts == 5).locked_until > utcnow()


def test_one_address_trying_many_accounts_is_paused_there_only(client, ann):
    for n in range(20):  # webapp.views.auth.ADDRESS_FREE_FAILURES
        assert sign_in(client, f"guess{n}@example.com", PASSWORD, STRANGER).status_code == 401
    csrf, answers = csrf_token(client), []
    assert hash_checks(lambda: answers.append(client.post("/sign-in", data={
        "email": "ann@example.com", "password": PASSWORD, "csrf_token": csrf},
        environ_base={"REMOTE_ADDR": STRANGER}))) == 1
    assert answers[0].status_code == 401
    assert sign_in(client, "ann@example.com", PASSWORD, OWNER).status_code == 302


def test_addresses_of_one_ipv6_network_count_together(client, ann):
    for n in range(5):
        sign_in(client, "ann@example.com", "a wrong guess!", f"2001:db8:1:2::{n + 1}")
    assert sign_in(client, "ann@example.com", PASSWORD, "2001:db8:1:2::99").status_code == 401
    assert sign_in(client, "ann@example.com", PASSWORD, "2001:db8:1:3::1").status_code == 302


def test_a_success_starts_the_count_again(client, ann):
    for _ in range(4):
        sign_in(client, "ann@example.com", "a wrong guess!")
    assert sign_in(client, "ann@example.com").status_code == 302
    client.post("/sign-out", data={"csrf_token": csrf_token(client, "/")})
    for _ in range(4):
        sign_in(client, "ann@example.com", "a wrong guess!")
    assert sign_in(client, "ann@example.com").status_code == 302


def test_a_success_of_ones_own_account_does_not_reset_a_spray_at_others(client, ann, session):
    """19 guesses at other accounts, a good sign-in of one's own, one more guess: the address
    has failed 20 times and pauses, good password or not (the probe sprayed 57 this way)."""
    create_user(session, "mallory@example.com", "mallory's own passphrase", "viewer")
    session.commit()
    for n in range(19):
        assert sign_in(client, f"guess{n}@example.com", PASSWORD, STRANGER).status_code == 401
    assert sign_in(client, "mallory@example.com", "mallory's own passphrase",
                   STRANGER).status_code == 302
    client.post("/sign-out", data={"csrf_token": csrf_token(client, "/")})
    assert sign_in(client, "guess19@example.com", PASSWORD, STRANGER).status_code == 401
    assert sign_in(client, "mallory@example.com", "mallory's own passphrase",
                   STRANGER).status_code == 401


def test_attempts_quiet_for_a_day_are_forgotten(client, session, ann):
    for _ in range(5):
        sign_in(client, "ann@example.com", "a wrong guess!", STRANGER)
    day_ago = utcnow() - timedelta(days=1, seconds=1)
    session.execute(update(models.SignInThrottle).values(last_attempt_at=day_ago,
                                                         locked_until=day_ago))
    session.commit()

    sign_in(client, "nobody@example.com", "a wrong guess!", OWNER)  # any attempt tidies up

    assert session.scalar(select(func.count()).select_from(models.SignInThrottle)) == 2
    assert sign_in(client, "ann@example.com", PASSWORD, STRANGER).status_code == 302


@pytest.mark.parametrize(("email", "password", "address"), [
    ("x" * 5000 + "@example.com", PASSWORD, "127.0.0.1"),
    ("ann@example.com", "p" * 100_000, "127.0.0.1"),
    ("ännä@exämple.com\u202e", "пароль пароль", "127.0.0.1"),
    ("", "", "127.0.0.1"),
    ("ann@example.com", PASSWORD, "not an address"),
    ("ann@example.com", PASSWORD, ""),
])
def test_odd_sign_in_input_is_refused_not_an_error(client, ann, email, password, address):
    answer = sign_in(client, email, password, address)
    assert answer.status_code in (302, 401)
    if address == "not an address":
        assert answer.status_code == 302  # the right password still works


@pytest.mark.parametrize("target", [
    "/%0d%0aSet-Cookie:%20stolen=1", "/sites%0a", "/%09/evil.example", "/%5Cevil.example",
    "/\\evil.example", "%0a//evil.example"])
def test_a_next_page_with_line_breaks_or_backslashes_leads_home(client, ann, target):
    """A `next` that a URL parser reads as a path but a header or a browser reads otherwise
    (line breaks are cut from the header or end it early; a browser reads `\\` as `/`) is
    refused like another host's: home, never a 500 or a redirect off the site."""
    answer = client.post(f"/sign-in?next={target}", environ_base={"REMOTE_ADDR": "127.0.0.1"},
                         data={"email": "ann@example.com", "password": PASSWORD,
                               "csrf_token": csrf_token(client)})
    assert answer.status_code == 302 and answer.headers["Location"] == "/"
    assert "stolen" not in str(answer.headers)


def test_signing_in_starts_a_new_cookie_session_with_a_new_csrf_token(client, ann):
    """A cookie planted before sign-in (by a neighbouring subdomain, say) must not carry over:
    its CSRF token, known to whoever planted it, would pass the signed-in forms."""
    planted = csrf_token(client)
    before = cookie_payload(client.get_cookie("session").value)
    assert before["csrf_token"]
    assert sign_in(client, "ann@example.com").status_code == 302
    after = cookie_payload(client.get_cookie("session").value)
    assert after.get("csrf_token") != before["csrf_token"]
    assert csrf_token(client, "/account") != planted
    refused = client.post("/account", data={"language": "en", "timezone": "",
                                            "csrf_token": planted})
    assert refused.status_code == 400


# 9. Passwords: at least 12 characters and not common, with the reason


SHORT = "Elevenchars"
COMMON = ["password1234", "qwerty123456", "Sunshine2024!!", "ILOVEYOU12345"]
PLAIN = ["123456789012", " " * 12, "!!!!!!!!!!!!", "aaaaaaaaaaaa", "121212121212x"]
REASONS = {"short": "at least 12 characters", "common": "common password",
           "plain": "different characters"}


@pytest.mark.parametrize(("password", "reason"), [(SHORT, "short")] + [
    (p, "common") for p in COMMON] + [(p, "plain") for p in PLAIN])
def test_creating_an_account_refuses_short_and_common_passwords(session, password, reason):
    with pytest.raises(InvalidValue) as refused:
        create_user(session, "bob@example.com", password)
    assert refused.value.field == "password" and REASONS[reason] in str(refused.value)
    assert password not in str(refused.value)


@pytest.mark.parametrize(("password", "reason"), [(SHORT, "short"), (COMMON[2], "common")])
def test_the_command_line_shows_why_a_password_is_refused(runner, password, reason):
    assert runner.invoke(args=["users", "create", "ann@example.com",
                               "--password", PASSWORD]).exit_code == 0
    for args in (["users", "create", "bob@example.com"], ["users", "set-password", "ann@example.com"]):
        result = runner.invoke(args=[*args, "--password", password])
        assert result.exit_code == 1 and REASONS[reason] in result.stderr, result.output
        assert "Traceback" not in result.output


@pytest.mark.parametrize(("password", "reason"), [(SHORT, "short"), (COMMON[0], "common")])
def test_the_users_page_shows_why_a_password_is_refused(client, session, ann, password, reason):
    assert sign_in(client, "ann@example.com").status_code == 302
    csrf = csrf_token(client, "/users")
    answer = client.post("/users", data={"email": "bob@example.com", "password": password,
                                         "role": "viewer", "csrf_token": csrf})
    assert answer.status_code == 422 and REASONS[reason] in answer.text
    answer = client.post(f"/users/{ann.id}", data={"password": password, "csrf_token": csrf},
                         follow_redirects=True)
    assert REASONS[reason] in answer.text
    session.expire_all()
    assert session.scalar(select(func.count()).select_from(User)) == 1
    assert client.get("/users").status_code == 200  # ann's password, and her session, stand


def test_a_new_account_with_several_bad_fields_names_each_of_them(client, session, ann):
    assert sign_in(client, "ann@example.com").status_code == 302
    answer = client.post("/users", data={"email": "bob", "password": SHORT, "role": "owner",
                                         "csrf_token": csrf_token(client, "/users")})
    assert answer.status_code == 422
    for named in ("email &#39;bob&#39;: must be an e-mail address", REASONS["short"],
                  "role &#39;owner&#39;: must be one of admin, editor, viewer"):
        assert named in answer.text


@pytest.mark.parametrize("password", [PASSWORD, "Sunshine over the bay", "tr0ub4dor&3-x"])
def test_long_uncommon_passwords_are_accepted(session, password):
    assert create_user(session, "bob@example.com", password).id


def test_the_generated_admin_password_meets_the_rules(session):
    _, password = ensure_admin(session)
    assert len(password) >= 12
