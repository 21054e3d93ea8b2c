"""Signing in to a public page: wrong passwords slow the next try (per address, and per user
without locking its owner out), an unknown name answers like a wrong password, the cookie is
Secure behind HTTPS and plain on http://127.0.0.1, and a session ends when idle or at /logout."""

from __future__ import annotations

import dataclasses
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from tests.support.chromium import CHROMIUM_ARGS, TIMEOUT_MS
from tests.support.webapp import chat_text, loopback_client, serve_in_process
from treadwise.settings import Settings
from treadwise.web import login_throttle
from treadwise.web.login_throttle import FORGET_S, LoginThrottle

USERS = "ana:ana-secret-1,bob:bob-secret-2"
IDLE_MINUTES = 0.05  # three seconds


@pytest.fixture(scope="module")
def app(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """A public page with a login behind a proxy on 127.0.0.1: each test speaks from its own
    forwarded addresses, so their throttles do not meet."""
    env = {"TREADWISE_PUBLIC": "1", "TREADWISE_AUTH": USERS, "TREADWISE_ADMINS": "ana",
           "TREADWISE_TRUSTED_PROXIES": "127.0.0.1",
           "TREADWISE_SESSION_IDLE_MINUTES": str(IDLE_MINUTES)}
    settings = dataclasses.replace(Settings.from_env(env),
                                   data_dir=tmp_path_factory.mktemp("signin") / "data")
    with serve_in_process(settings) as url:
        yield url


def sign_in(url: str, user: str, password: str, address: str, https: bool = False,
            cookies: httpx.Cookies | None = None) -> httpx.Response:
    headers = {"X-Forwarded-For": address, **({"X-Forwarded-Proto": "https"} if https else {})}
    return httpx.post(f"{url}login", data={"username": user, "password": password},
                      headers=headers, cookies=cookies, timeout=60)


@pytest.fixture
def long_waits(monkeypatch: pytest.MonkeyPatch) -> None:
    """The in-process app's first wait is a minute, longer than the test takes: what is
    refused is refused whatever the machine's speed (the growth is checked on a clock below)."""
    monkeypatch.setattr(login_throttle, "FIRST_WAIT_S", 60.0)


@pytest.mark.slow
def test_wrong_passwords_make_the_next_try_from_that_address_wait(app, long_waits):
    tries = [sign_in(app, "bob", f"guess-{n}", "10.1.0.1") for n in range(20)]
    assert [t.status_code for t in tries] == [400] * 5 + [429] * 15
    detail = tries[-1].json()["detail"]
    assert detail.startswith("Too many failed sign-ins from your address: wait ")
    assert "makes the wait longer" in detail and 0 < int(tries[-1].headers["retry-after"]) <= 60
    # The right password from that address waits too: no free try after the guesses.
    assert sign_in(app, "bob", "bob-secret-2", "10.1.0.1").status_code == 429
    assert sign_in(app, "bob", "bob-secret-2", "10.1.0.2").status_code == 200


def test_guesses_at_one_user_from_many_addresses_never_lock_its_own_browser_out(app,
                                                                               long_waits):
    owner = sign_in(app, "ana", "ana-secret-1", "10.2.0.1")
    assert owner.status_code == 200
    # Ten failures at ana, two from each of five addresses (none reaches its own limit).
    codes = [sign_in(app, "ana", f"g{n}", f"10.2.1.{n // 2}").status_code for n in range(10)]
    assert codes == [400] * 10
    stranger = sign_in(app, "ana", "ana-secret-1", "10.2.2.1")
    assert stranger.status_code == 429 and "for this user" in stranger.json()["detail"]
    # Ana's browser signed in as ana before: the guesser's failures do not hold it back.
    back = sign_in(app, "ana", "ana-secret-1", "10.2.0.1", cookies=owner.cookies)
    assert back.status_code == 200


def test_an_unknown_user_is_answered_exactly_like_a_wrong_password(app):
    unknown = sign_in(app, "nobody-here", "whatever", "10.3.0.1")
    wrong = sign_in(app, "bob", "whatever", "10.3.0.2")
    assert (unknown.status_code, unknown.json()) == (wrong.status_code, wrong.json()) == \
        (400, {"detail": "Incorrect credentials."})
    assert sorted(unknown.headers.keys()) == sorted(wrong.headers.keys())


def test_behind_https_every_cookie_is_secure_and_plain_http_still_signs_in(app):
    secure = sign_in(app, "bob", "bob-secret-2", "10.4.0.1", https=True)
    assert secure.status_code == 200
    cookies = secure.headers.get_list("set-cookie")
    assert cookies and all("; Secure" in cookie for cookie in cookies), cookies
    assert not any(cookie.startswith("access-token-unsecure-") for cookie in cookies)
    # On http://127.0.0.1 (no proxy saying https) gradio_client signs in and chats.
    client = loopback_client(app, auth=("bob", "bob-secret-2"), download_files=False)
    chatbot, *_ = client.predict("What are your opening hours?", "friendly", "offline", "",
                                 0.0, api_name="/send")
    assert "Mon" in chat_text(chatbot) or "hours" in chat_text(chatbot).lower()


@pytest.mark.slow
def test_a_session_ends_when_idle_and_at_logout(app):
    signed = sign_in(app, "bob", "bob-secret-2", "10.5.0.1")
    assert httpx.get(f"{app}config", cookies=signed.cookies).status_code == 200
    time.sleep(IDLE_MINUTES * 60 + 1)  # waits out the idle time; nothing is timed
    assert httpx.get(f"{app}config", cookies=signed.cookies).status_code == 401
    again = sign_in(app, "bob", "bob-secret-2", "10.5.0.1")
    assert httpx.get(f"{app}config", cookies=again.cookies).status_code == 200
    httpx.get(f"{app}logout", cookies=again.cookies)
    assert httpx.get(f"{app}config", cookies=again.cookies).status_code == 401


def test_the_throttle_grows_caps_and_forgets():
    now = [0.0]
    throttle = LoginThrottle(clock=lambda: now[0])
    waits = []
    for _ in range(9):
        throttle.failed("bob", "10.0.0.1")
        waits.append(throttle.wait_s("bob", "10.0.0.1")[0])
    assert waits == [0, 0, 0, 0, 1, 2, 4, 8, 16]
    for _ in range(20):
        throttle.failed("bob", "10.0.0.1")
    assert throttle.wait_s("bob", "10.0.0.1") == (300, "address")
    assert throttle.wait_s("bob", "10.0.0.2") == (60, "user")
    assert throttle.wait_s("bob", "10.0.0.2", known_browser=True) == (0, "")
    assert throttle.wait_s("Bob ", "10.0.0.2")[0] == 60, "a name's spellings are one target"
    now[0] = FORGET_S
    assert throttle.wait_s("bob", "10.0.0.1") == (0, "")


@pytest.mark.browser
def test_the_login_page_says_how_long_to_wait(chromium, tmp_path: Path):
    from playwright.sync_api import sync_playwright

    settings = dataclasses.replace(
        Settings.from_env({"TREADWISE_PUBLIC": "1", "TREADWISE_AUTH": USERS}),
        data_dir=tmp_path / "data")
    with serve_in_process(settings) as url, sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=chromium, args=CHROMIUM_ARGS)
        try:
            page = browser.new_page()
            page.set_default_timeout(TIMEOUT_MS)
            page.goto(url)
            for guess in range(6):
                page.get_by_label("username").fill("bob")
                page.get_by_label("password").fill(f"guess-{guess}")
                with page.expect_response(lambda r: r.url.endswith("/login")):
                    page.get_by_role("button", name="Login").click()
            note = page.locator("#tw-login-wait")
            note.wait_for()
            assert "Too many failed sign-ins" in note.inner_text()
            assert "wait" in note.inner_text()
        finally:
            browser.close()
