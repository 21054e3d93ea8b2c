"""tests/support/webapp.loopback_client: predicts sent one after another never cancel each other,
however late the client's stream reader handles the server's close_stream; and close_app stops
an in-process app without racing its event loop."""

from __future__ import annotations

import dataclasses
import json
import re
import threading
import time
import types
from pathlib import Path

import gradio_client.client
import httpx
import pytest

from tests.conftest import SYSTEM_TEMP
from tests.support.webapp import chat_text, close_app, free_port, loopback_client, serve_in_process
from treadwise.settings import Settings
from treadwise.web.gradio_app import create_app, start

LATE_S = 0.3  # longer than the 50 ms a predict waits between looks at its event's messages


def test_a_predict_sent_while_the_reader_is_closing_is_not_cancelled(monkeypatch):
    def late_close(text: str | bytes, *args, **kwargs):
        # The reader has already queued the last answer: only its close_stream is late, as
        # when a loaded machine runs the test's thread before the reader's.
        message = json.loads(text, *args, **kwargs)
        if message.get("msg") == "close_stream":
            time.sleep(LATE_S)
        return message

    monkeypatch.setattr(gradio_client.client, "json", types.SimpleNamespace(
        loads=late_close, dumps=json.dumps, JSONDecodeError=json.JSONDecodeError))
    with serve_in_process(Settings.from_env()) as url:
        client = loopback_client(url, download_files=False)
        answers = [chat_text(client.predict(question, "friendly", "offline", "", 0.0,
                                            api_name="/send")[0])
                   for question in ("Hello!", "What are your opening hours?")]
        assert "Opening hours" not in answers[0] and "Opening hours" in answers[1]


def _paths(value: object) -> list[Path]:
    if isinstance(value, dict):
        return [p for v in value.values() for p in _paths(v)]
    if isinstance(value, list | tuple):
        return [p for v in value for p in _paths(v)]
    is_path = isinstance(value, str) and value.startswith("/") and "\n" not in value
    return [Path(value)] if is_path and Path(value).is_file() else []


def test_files_it_downloads_stay_out_of_the_systems_temporary_folder(system_temp):
    # gradio_client writes each file first into a new folder of the system's temp, named by 40
    # hex digits, and leaves it there empty; it kept the files in /tmp/gradio: a hundred
    # folders a run stayed in /tmp. tests/conftest.py points this process's tempfile at
    # pytest's own folder instead. (Other entries may come and go: other workers' services.)
    real = Path(SYSTEM_TEMP)

    def leftovers() -> set[Path]:
        return {p for p in real.iterdir() if re.fullmatch(r"[0-9a-f]{40}", p.name)}

    before = leftovers()
    with serve_in_process(Settings.from_env()) as url:
        outputs = loopback_client(url).predict("What are your opening hours?", "friendly",
                                               "offline", "", 0.0, api_name="/send")
    downloaded = _paths(outputs)
    assert downloaded, outputs  # the turn's exports, fetched from the app
    assert all(path.is_relative_to(system_temp) for path in downloaded), downloaded
    assert not system_temp.is_relative_to(real / "gradio")
    assert leftovers() == before, leftovers() - before


def test_close_app_sets_the_stop_event_on_the_servers_loop_and_stops_the_server():
    """Gradio's close() sets an asyncio.Event from the caller's thread while the server's loop
    may be adding a waiter to it (one failed whole run: deque mutated during iteration). The
    event must be set by the loop's own thread, and the server must still stop."""
    settings = dataclasses.replace(Settings.from_env(), port=free_port())
    demo = create_app(settings)
    start(demo, settings, quiet=True, prevent_thread_lock=True)
    url = f"http://127.0.0.1:{settings.port}/config"
    try:
        assert httpx.get(url).status_code == 200
        event, setters = demo.app.stop_event, []
        plain_set = event.set

        def recorded_set() -> None:
            if not event.is_set():
                setters.append(threading.current_thread())
            plain_set()

        event.set = recorded_set
        close_app(demo)
    finally:
        demo.close()  # returns at once once close_app has run
    assert len(setters) == 1 and setters[0] is not threading.current_thread(), setters
    assert not demo.is_running
    with pytest.raises(httpx.ConnectError):  # the server no longer answers
        httpx.get(url, timeout=2)
