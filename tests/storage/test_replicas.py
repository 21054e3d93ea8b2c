"""Two `python app.py` replicas on one PostgreSQL, driven through gradio_client: a conversation
moves between them with its plots, and a lead sent to both at once is stored once."""

from __future__ import annotations

import json
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import ExitStack
from pathlib import Path

import psycopg
import pytest
from gradio_client import Client

from tests.support.webapp import (
    ROOMY_MATH_S,
    ROOMY_REPLY_MS,
    RunningApp,
    chat_text,
    loopback_client,
    serve_subprocess,
)

WAIT_S = 90
MATH_WAIT_S = ROOMY_REPLY_MS / 1000  # an integral and its plot, on a busy machine
pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def database_url(postgres_cluster) -> str:
    return postgres_cluster.database()


@pytest.fixture(scope="module")
def replicas(database_url: str, tmp_path_factory) -> Iterator[tuple[RunningApp, RunningApp]]:
    """Two replicas with their own data dirs, started at the same moment (so both migrate the
    fresh database at once), shared by this module's tests: starting one costs seconds."""
    # One secret for both, so a conversation link made on one opens on the other.
    # Math with room: these tests are about the replicas, not the time limit, and under load
    # the 5 s default ended the integral's plot before it was written (no plot to show).
    env = {"TREADWISE_DATABASE_URL": database_url,
           "TREADWISE_SECRET_KEY": "both-replicas-share-this-secret",
           "TREADWISE_MATH_TIMEOUT_S": str(ROOMY_MATH_S)}
    tmp_path = tmp_path_factory.mktemp("replicas")
    for name in ("a", "b"):
        (tmp_path / name).mkdir()
    with ExitStack() as stack:
        servers = [serve_subprocess(tmp_path / name / "data", env=env) for name in ("a", "b")]
        with ThreadPoolExecutor(2) as pool:
            starting = [pool.submit(server.__enter__) for server in servers]
        for server, future in zip(servers, starting, strict=True):
            if future.exception() is None:
                stack.push(server.__exit__)
        apps = [future.result() for future in starting]
        yield apps[0], apps[1]


def send(client: Client, message: str):
    return client.submit(message, "friendly", "offline", "", 0.0, api_name="/send")


def exported(outputs: tuple) -> dict:
    return json.loads(Path(outputs[-1]["value"]).read_text())


def shown_files(chatbot: list[dict]) -> list[Path]:
    """The plots the page shows (inline images with their text alternative), as paths in the
    replica's Gradio cache (the test shares the replicas' machine)."""
    files = [item["value"] for message in chatbot for item in message["content"]
             if item.get("type") == "component" and item.get("component") == "image"]
    return [Path(file if isinstance(file, str) else file["path"]) for file in files]


def leads(url: str, email: str) -> list[tuple]:
    with psycopg.connect(url) as conn:
        return conn.execute("SELECT email, name, message FROM leads WHERE email = %s",
                            (email,)).fetchall()


def test_a_conversation_started_on_one_replica_continues_on_the_other(replicas, database_url):
    a, b = replicas
    on_a = loopback_client(a.url)
    send(on_a, "My name is Ana Silva.").result(WAIT_S)
    plotted = send(on_a, "Calculate the integral of x² from 0 to 3").result(MATH_WAIT_S)
    thread, link = exported(plotted)["thread_id"], exported(plotted)["resume"]
    assert len(shown_files(plotted[0])) == 1

    # The browser session lives on replica A; replica B knows nothing of it but the thread id.
    on_b = loopback_client(b.url)
    refused = on_b.predict("../../etc/passwd", api_name="/resume")[0]
    assert refused == {"__type__": "update"}  # gr.skip(): the page is left as it was
    chatbot, *_ = on_b.predict(link, api_name="/resume")
    assert "My name is Ana Silva." in chat_text(chatbot, "user")
    assert "= 9" in chat_text(chatbot)
    # B never drew the plot: it came from the database into B's own folder, then to the page.
    assert (b.log.parent / "data" / "plots").is_dir()
    plots = shown_files(chatbot)
    assert len(plots) == 1 and plots[0].read_bytes().startswith(b"\x89PNG")

    reply = send(on_b, "Please contact me at ana@example.com").result(WAIT_S)
    assert "Ana Silva" in chat_text(reply[0])  # B answered from memory written by A
    assert exported(reply)["thread_id"] == thread
    assert [(email, name) for email, name, _ in leads(database_url, "ana@example.com")] == [
        ("ana@example.com", "Ana Silva")]

    # And A, asked again for the same thread, sees the turn B added.
    back_on_a = loopback_client(a.url).predict(link, api_name="/resume")[0]
    assert "Please contact me at ana@example.com" in chat_text(back_on_a, "user")


def test_the_same_lead_sent_to_both_replicas_at_once_is_stored_once(replicas, database_url):
    a, b = replicas
    message = "I'd like a fleet quote for 12 vans. Please contact me at bob@fleetco.com"
    clients = [loopback_client(app.url) for app in (a, b)]
    jobs = [send(client, message) for client in clients]
    replies = [chat_text(job.result(WAIT_S)[0]) for job in jobs]
    assert all("bob@fleetco.com" in reply for reply in replies)
    assert len(leads(database_url, "bob@fleetco.com")) == 1
    # Neither visitor learns whether the other one's request came first (no oracle).
    assert not any("already on file" in reply.lower() for reply in replies)


@pytest.fixture
def page(chromium: str) -> Iterator[object]:
    from playwright.sync_api import sync_playwright

    from tests.support.chromium import CHROMIUM_ARGS, TIMEOUT_MS

    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=chromium, args=CHROMIUM_ARGS)
        page = browser.new_page()
        page.set_default_timeout(TIMEOUT_MS)
        try:
            yield page
        finally:
            browser.close()


def test_a_page_opened_with_the_thread_id_on_the_other_replica_shows_the_conversation(
        replicas, page):
    a, b = replicas
    on_a = loopback_client(a.url)
    send(on_a, "My name is Carla Diaz.").result(WAIT_S)
    link = exported(send(on_a, "Calculate the integral of x² from 0 to 2").result(MATH_WAIT_S))[
        "resume"]
    page.goto(f"{b.url}?thread={link}")
    page.locator("#chat").get_by_text("My name is Carla Diaz.").wait_for()
    plot = page.locator("#chat img[src*='area-']").first
    plot.wait_for()
    page.wait_for_function("img => img.complete && img.naturalWidth > 0",
                           arg=plot.element_handle())
    assert "restored from memory" in page.locator("#chat").inner_text()
