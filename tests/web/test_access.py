"""Guard rails for a public page: allowed models, admins, rate limits, no uploads, clean refusals.

Locally (the default, bound to 127.0.0.1) everything stays open; an app facing the network
(TREADWISE_HOST=0.0.0.0, or TREADWISE_PUBLIC=1 behind a proxy) gets the safe defaults.
"""

from __future__ import annotations

import asyncio
import dataclasses
import tracemalloc
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
from gradio_client import Client
from gradio_client.exceptions import AppError
from langchain_core.messages import AIMessage

from tests.support.webapp import chat_text, loopback_client, serve_in_process
from treadwise.agent import Agent
from treadwise.settings import Settings
from treadwise.testing.fakes import ScriptedModel
from treadwise.web.access import ADMIN_ONLY, MAX_KEYS, RateLimiter, address_key
from treadwise.web.forwarded import TrustedProxies, forwarded_client
from treadwise.web.gradio_app import banner, launch_kwargs

USERS = "ana:ana-secret-1,bob:bob-secret-2"
ECHO = "The echo model answered."


def test_a_local_app_stays_open_and_a_network_facing_one_is_public():
    local = Settings.from_env({})
    guards = [m.cls.__name__ for m in launch_kwargs(local)["app_kwargs"]["middleware"]]
    assert not local.public and local.session_rate == 0 and guards == ["EarlyScript"]
    exposed = Settings.from_env({"TREADWISE_HOST": "0.0.0.0"})
    assert exposed.public and exposed.session_rate > 0
    assert exposed.public_models == ("offline",) and exposed.admins == ()
    guards = [m.cls.__name__ for m in launch_kwargs(exposed)["app_kwargs"]["middleware"]]
    assert "RefuseUploads" in guards, "uploads are refused"
    proxied = Settings.from_env({"TREADWISE_PUBLIC": "1", "TREADWISE_AUTH": USERS,
                                 "TREADWISE_PUBLIC_MODELS": "offline, openai:gpt-4o-mini"})
    assert proxied.public and proxied.host == "127.0.0.1"
    assert proxied.auth == (("ana", "ana-secret-1"), ("bob", "bob-secret-2"))
    assert proxied.admins == ("ana", "bob"), "without TREADWISE_ADMINS every user is an admin"
    assert proxied.public_models == ("offline", "openai:gpt-4o-mini")
    assert Settings.from_env({"TREADWISE_AUTH": USERS, "TREADWISE_ADMINS": "ana"}).admins == \
        ("ana",)
    with pytest.raises(ValueError, match="TREADWISE_PUBLIC"):
        Settings.from_env({"TREADWISE_PUBLIC": "maybe"})


def test_the_start_banner_says_where_and_how_open_the_app_is():
    local = banner(Settings.from_env({}))
    assert "http://127.0.0.1:7860" in local and "this machine only" in local
    public = banner(Settings.from_env({"TREADWISE_HOST": "0.0.0.0"}))
    assert "public mode" in public and "no login" in public and "no sweeps" in public
    assert "share" not in local + public
    assert "Rate limits count the connecting address" in public
    behind = banner(Settings.from_env({"TREADWISE_PUBLIC": "1",
                                       "TREADWISE_TRUSTED_PROXIES": "127.0.0.1",
                                       "TREADWISE_DATABASE_URL": "postgresql://db/treadwise"}))
    assert "X-Forwarded-For gives when the request comes from 127.0.0.1" in behind
    assert "TREADWISE_SECRET_KEY is not set" in behind


def test_trusted_proxies_and_the_secret_are_checked_settings():
    settings = Settings.from_env({"TREADWISE_TRUSTED_PROXIES": "127.0.0.1, 10.0.0.0/8, ::1",
                                  "TREADWISE_SECRET_KEY": "s" * 32})
    assert settings.trusted_proxies == ("127.0.0.1", "10.0.0.0/8", "::1")
    assert "s" * 32 not in repr(settings)
    with pytest.raises(ValueError, match="TREADWISE_TRUSTED_PROXIES must list IP addresses"):
        Settings.from_env({"TREADWISE_TRUSTED_PROXIES": "nginx"})
    with pytest.raises(ValueError, match="TREADWISE_SECRET_KEY must be at least 16"):
        Settings.from_env({"TREADWISE_SECRET_KEY": "short"})


def test_the_rate_limit_is_a_sliding_minute_per_key():
    now = [0.0]
    limiter = RateLimiter(2, clock=lambda: now[0])
    assert [limiter.wait_s("a"), limiter.wait_s("a"), limiter.wait_s("b")] == [0, 0, 0]
    assert limiter.wait_s("a") == 60
    now[0] = 59.5
    assert limiter.wait_s("a") == pytest.approx(0.5)
    now[0] = 60.0
    assert limiter.wait_s("a") == 0


@pytest.mark.slow
def test_a_hundred_thousand_keys_keep_the_limiter_small():
    now = [0.0]
    limiter = RateLimiter(10, clock=lambda: now[0])

    def visit(first: int) -> int:
        """100 000 new keys within one minute; the limiter's memory after them."""
        for number in range(first, first + 100_000):
            assert limiter.wait_s(f"session-{number:032x}") == 0
        return tracemalloc.get_traced_memory()[0]

    tracemalloc.start()
    try:
        once, twice = visit(0), visit(100_000)
    finally:
        tracemalloc.stop()
    assert twice <= once * 1.05, "the limiter grows with every key it has seen"
    assert len(limiter._events) <= MAX_KEYS
    # Keys idle for a minute are forgotten as new ones come, and the busiest are kept.
    limiter.wait_s("busy")
    now[0] = 61.0
    assert limiter.wait_s("late") == 0 and list(limiter._events) == ["late"]


def test_an_address_keeps_its_budget_while_others_come_and_go():
    now = [0.0]
    limiter = RateLimiter(2, clock=lambda: now[0], max_keys=100)
    assert limiter.wait_s("10.0.0.1") == limiter.wait_s("10.0.0.1") == 0
    for number in range(50):
        now[0] += 0.5
        limiter.wait_s(f"192.0.2.{number}")
    assert limiter.wait_s("10.0.0.1") > 0, "forgotten while still inside its minute"
    assert limiter.wait_s("10.0.0.1", count=False) > 0


@pytest.mark.parametrize(("host", "key"), [
    ("203.0.113.7", "203.0.113.7"),
    ("2001:db8:1:2:aaaa::1", "2001:db8:1:2::/64"),
    ("2001:db8:1:2:ffff::9", "2001:db8:1:2::/64"),  # the same visitor's next address
    ("::ffff:203.0.113.7", "203.0.113.7"),
    ("unknown", "unknown"),
])
def test_an_ipv6_visitor_is_counted_by_its_network(host: str, key: str):
    assert address_key(host) == key


@pytest.fixture(scope="module")
def public_app(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[str, Path]]:
    """A public app with a login: ana is the admin, bob a visitor; an OpenAI key is set."""
    folder = tmp_path_factory.mktemp("public")
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("OPENAI_API_KEY", "sk-test-not-a-real-key-0000")
        patch.setenv("TREADWISE_AUTH", USERS)
        patch.setenv("TREADWISE_ADMINS", "ana")
        patch.setenv("TREADWISE_PUBLIC", "1")
        patch.setenv("TREADWISE_SESSION_RATE", "3")
        settings = dataclasses.replace(Settings.from_env(), data_dir=folder / "data")
        agent = Agent(settings, models={"echo": ScriptedModel(script=[AIMessage(ECHO)])})
        results = folder / "results"
        results.mkdir()
        with serve_in_process(settings, agent, results_dir=results) as url:
            yield url, results


def login(url: str, user: str) -> Client:
    password = dict(pair.split(":") for pair in USERS.split(","))[user]
    return loopback_client(url, auth=(user, password), download_files=False)


def send(client: Client, message: str, custom: str = "", temperature: float = 0.0,
         persona: str = "friendly") -> str:
    chatbot, *_ = client.predict(message, persona, "offline", custom, temperature,
                                 api_name="/send")
    return chat_text(chatbot)


def test_visitors_get_only_the_allowed_models_and_admins_any(public_app):
    url, _ = public_app
    bob = login(url, "bob")
    refused = send(bob, "hello", custom="openai:gpt-4o-mini")
    assert "Message not sent" in refused and "offers only these models: offline" in refused
    assert ECHO in send(login(url, "ana"), "hello", custom="echo")
    config = httpx.post(url + "login", data={"username": "bob", "password": "bob-secret-2"})
    page = httpx.get(url + "config", cookies=config.cookies).json()
    props = {c["props"].get("elem_id"): c["props"] for c in page["components"]}
    assert [tuple(choice) for choice in props["model-picker"]["choices"]] == \
        [("offline (rule-based, not an LLM)", "offline")]
    assert props["model-spec"]["visible"] is False


def test_sweeps_are_for_admins_only(public_app):
    url, results = public_app
    with pytest.raises(AppError, match="signed-in admin"):
        login(url, "bob").predict(1, api_name="/sweep")
    assert list(results.iterdir()) == []
    assert "signed-in admin" in ADMIN_ONLY


def test_uploads_are_refused(public_app):
    url, _ = public_app
    cookies = httpx.post(url + "login", data={"username": "ana", "password": "ana-secret-1"})
    upload = httpx.post(url + "gradio_api/upload", cookies=cookies.cookies,
                        files={"files": ("a.txt", b"hello")})
    assert upload.status_code == 403


def test_bad_pickers_are_refused_in_words_without_a_traceback(public_app, capsys):
    url, _ = public_app
    bob = login(url, "bob")
    hot = send(bob, "hello", temperature=5.0)
    pirate = send(bob, "hello", persona="pirate")
    assert "Message not sent" in hot and "from 0 to 1 (got 5.0)" in hot
    assert "There is no persona 'pirate'" in pirate
    assert "Traceback" not in capsys.readouterr().err


def test_a_session_sending_too_fast_is_asked_to_slow_down(public_app):
    url, _ = public_app
    bob = login(url, "bob")
    answers = [send(bob, "What are your opening hours?") for _ in range(4)]
    assert all("Please slow down" not in a for a in answers[:3])
    assert "Please slow down: this page answers at most 3 messages a minute" in answers[3]
    assert "Please slow down" not in send(login(url, "ana"), "Hours?"), "admins are not limited"


@pytest.mark.parametrize(("header", "client"), [
    ("203.0.113.7", "203.0.113.7"),
    ("10.9.9.9, 203.0.113.7", "203.0.113.7"),  # only the entry the proxy appended
    ("203.0.113.7, 127.0.0.1", "127.0.0.1"),  # never past it, even to a "trusted" one
    ("203.0.113.7, evil-0", None),
    ("2001:db8::1", "2001:db8::1"),
    ("[2001:db8::1]:443", None),
    ("", None),
])
def test_a_forwarded_client_is_the_last_entry_when_it_is_an_ip_address(header, client):
    assert forwarded_client(header) == client


def seen_by_the_app(peer: str, headers: dict[str, str]) -> tuple[str, str]:
    """(client host, scheme) the app behind TrustedProxies("127.0.0.1") sees for a request."""
    seen = {}

    async def app(scope, receive, send):
        seen.update(client=scope["client"][0], scheme=scope["scheme"])

    scope = {"type": "http", "client": (peer, 5000), "scheme": "http",
             "headers": [(k.lower().encode(), v.encode()) for k, v in headers.items()]}
    asyncio.run(TrustedProxies(app, ["127.0.0.1"])(scope, None, None))
    return seen["client"], seen["scheme"]


def test_only_a_trusted_proxy_names_the_client_and_the_scheme():
    forwarded = {"X-Forwarded-For": "203.0.113.7", "X-Forwarded-Proto": "https"}
    assert seen_by_the_app("127.0.0.1", forwarded) == ("203.0.113.7", "https")
    assert seen_by_the_app("198.51.100.2", forwarded) == ("198.51.100.2", "http")
    assert seen_by_the_app("127.0.0.1", {"X-Forwarded-Proto": "gopher"}) == ("127.0.0.1", "http")
