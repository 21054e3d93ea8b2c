"""Conversation links and exports belong to whoever made them: with a login a link opens only
for its user (or an admin), links expire and a deletion request revokes them (a new chat does
not), the page says what a link grants, and an export downloads only for its owner."""

from __future__ import annotations

import dataclasses
import uuid
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
from gradio_client import Client

from tests.support.webapp import chat_text, loopback_client, serve_in_process
from treadwise.settings import Settings
from treadwise.storage.link_store import revoke_links
from treadwise.web.resume import ThreadLinks

PASSWORDS = {"ana": "ana-secret-1", "bob": "bob-secret-2", "cy": "cy-secret-3"}
WAIT_S = 90


@pytest.fixture(scope="module")
def app(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """A public page with a login: ana is the admin, bob and cy are customers."""
    env = {"TREADWISE_PUBLIC": "1", "TREADWISE_ADMINS": "ana",
           "TREADWISE_AUTH": ",".join(f"{u}:{p}" for u, p in PASSWORDS.items())}
    settings = dataclasses.replace(Settings.from_env(env),
                                   data_dir=tmp_path_factory.mktemp("owned") / "data")
    with serve_in_process(settings) as url:
        yield url


def login(url: str, user: str) -> Client:
    return loopback_client(url, auth=(user, PASSWORDS[user]), download_files=False)


def send(client: Client, message: str) -> tuple:
    return client.predict(message, "friendly", "offline", "", 0.0, api_name="/send")


def export_url(outputs: tuple) -> str:
    return outputs[-1]["value"]["url"]


def download(client: Client | None, url: str) -> httpx.Response:
    return httpx.get(url, cookies=client.cookies if client else None, timeout=WAIT_S)


def opened(client: Client, link: str) -> str | None:
    """The user messages a session of `client`'s user shows after reopening `link`; None when
    the link opened nothing (the page is left as it was)."""
    chatbot, *_ = client.predict(link, api_name="/resume")
    return chat_text(chatbot, "user") if isinstance(chatbot, list) else None


def bobs_conversation(url: str) -> tuple[Client, str, str]:
    """Bob's session, his JSON export's URL and the resume link in it."""
    bob = login(url, "bob")
    outputs = send(bob, f"Please contact me at bob-{uuid.uuid4().hex[:6]}@example.com about "
                        "fleet pricing")
    exported = download(bob, export_url(outputs))
    assert exported.status_code == 200
    return bob, export_url(outputs), exported.json()["resume"]


@pytest.mark.slow
def test_a_link_opens_only_for_the_user_who_made_it_or_an_admin(app):
    bob, _, link = bobs_conversation(app)
    assert "Please contact me" in opened(login(app, "bob"), link)  # another browser of his
    assert "Please contact me" in opened(login(app, "ana"), link)  # the admin
    assert opened(login(app, "cy"), link) is None
    for padded in (link.upper(), f" {link}", f"{link} ", f"{link}\n"):
        assert opened(login(app, "bob"), padded) is None, padded


@pytest.mark.thorough
def test_an_export_downloads_only_for_its_owner(app):
    bob, url, _ = bobs_conversation(app)
    assert download(bob, url).json()["turns"][0]["user"].startswith("Please contact me")
    assert download(login(app, "cy"), url).status_code == 404
    assert download(login(app, "ana"), url).status_code == 404
    assert download(None, url).status_code in (401, 404)
    # A later turn's export replaces it: the old URL is gone even for bob.
    newer = send(bob, "What are your opening hours?")
    assert download(bob, url).status_code in (403, 404)  # Gradio: 403 for a missing file
    assert download(bob, export_url(newer)).status_code == 200


def test_a_deletion_request_revokes_the_links_and_a_new_chat_does_not(app):
    bob, _, link = bobs_conversation(app)
    bob.predict(api_name="/new_conversation")
    assert "Please contact me" in opened(login(app, "bob"), link), "a new chat lost the link"
    later = login(app, "bob")
    opened(later, link)
    reply = chat_text(send(later, "Please delete my data")[0])
    assert "deleted" in reply
    assert opened(login(app, "bob"), link) is None and opened(login(app, "ana"), link) is None


@pytest.mark.thorough
def test_forget_me_revokes_the_links(app):
    bob, _, link = bobs_conversation(app)
    later = login(app, "bob")
    opened(later, link)
    later.predict(api_name="/forget_me")
    assert opened(login(app, "bob"), link) is None and opened(login(app, "ana"), link) is None


@pytest.mark.thorough
def test_the_page_says_what_a_link_grants(app, tmp_path: Path):
    cookies = httpx.post(f"{app}login", data={"username": "cy", "password": PASSWORDS["cy"]})
    page = httpx.get(f"{app}config", cookies=cookies.cookies).text
    assert "holds a link that reopens this conversation: only you, signed in, or an admin" in page
    assert "stops working after 30 days" in page
    anonymous = dataclasses.replace(Settings.from_env({"TREADWISE_PUBLIC": "1"}),
                                    data_dir=tmp_path / "data")
    with serve_in_process(anonymous) as url:
        assert "keep it like a password" in httpx.get(f"{url}config").text


def test_links_expire_and_revoke_links_ends_them(tmp_path: Path):
    now = [1_900_000_000.0]
    settings = dataclasses.replace(Settings.from_env({"TREADWISE_PUBLIC": "1",
                                                      "TREADWISE_LINK_DAYS": "2"}),
                                   data_dir=tmp_path / "data")
    links = ThreadLinks(settings, clock=lambda: now[0])
    thread = uuid.uuid4().hex
    link = links.link(thread)
    assert link is not None and links.thread_of(link) == thread
    now[0] += 2 * 86400 - 1
    assert links.thread_of(link) == thread
    now[0] += 2
    assert links.thread_of(link) is None, "a link outlived TREADWISE_LINK_DAYS"
    fresh = links.link(thread)
    assert links.thread_of(fresh) == thread
    revoke_links(thread, settings.data_dir)  # what an erasure (Forget me) calls
    assert links.thread_of(fresh) is None and links.link(thread) is None
    with pytest.raises(ValueError, match="TREADWISE_LINK_DAYS must be a number above 0"):
        Settings.from_env({"TREADWISE_LINK_DAYS": "0"})
