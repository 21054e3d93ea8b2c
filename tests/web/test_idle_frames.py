"""The page's first script goes into the app's page alone, whole and before Gradio's modules;
every other response, an HTML export included, passes byte for byte. Its effect in Chromium:
tests/experiments/web/test_runs_browser.py (an idle page, a sweep's timer)."""

from __future__ import annotations

import gzip
from typing import Any

import pytest
from starlette.testclient import TestClient

from treadwise.settings import Settings
from treadwise.web.gradio_app import launch_kwargs
from treadwise.web.idle_frames import IDLE_FRAMES_JS, EarlyScript

PAGE = (b'<!doctype html>\n<html lang="en">\n\t<head>\n\t\t<meta charset="utf-8" />\n'
        b'\t\t<script type="module" src="./assets/index.js"></script>\n\t</head>\n'
        b'\t<body><gradio-app></gradio-app></body>\n</html>')


def served(body: bytes, content_type: str = "text/html; charset=utf-8",
           chunks: int = 1, **extra: str) -> Any:
    """An ASGI app that answers every request with `body`, sent in `chunks` parts."""
    async def app(scope: Any, receive: Any, send: Any) -> None:
        headers = [(b"content-type", content_type.encode()),
                   (b"content-length", str(len(body)).encode()),
                   *((k.encode(), v.encode()) for k, v in extra.items())]
        await send({"type": "http.response.start", "status": 200, "headers": headers})
        size = -(-len(body) // chunks)
        for start in range(0, len(body), size):
            await send({"type": "http.response.body", "body": body[start:start + size],
                        "more_body": start + size < len(body)})
    return app


@pytest.mark.parametrize("chunks", [1, 3])
def test_the_script_goes_first_in_the_pages_head_and_the_length_follows(chunks: int):
    client = TestClient(EarlyScript(served(PAGE, chunks=chunks)))
    answer = client.get("/")
    script = IDLE_FRAMES_JS.encode()
    assert answer.content == PAGE.replace(b"<head>", b"<head>" + script, 1)
    assert answer.content.index(script) < answer.content.index(b'<script type="module"')
    assert int(answer.headers["content-length"]) == len(answer.content)


def test_the_page_below_a_proxys_prefix_gets_it_too():
    client = TestClient(EarlyScript(served(PAGE)), root_path="/treadwise")
    assert IDLE_FRAMES_JS.encode() in client.get("/treadwise/").content


@pytest.mark.parametrize(("method", "path", "content_type", "encoding"), [
    ("GET", "/file=/tmp/gradio/chat.html", "text/html", "identity"),  # the visitor's export
    ("GET", "/gradio_api/info", "application/json", "identity"),
    ("GET", "/", "text/html", "gzip"),  # not text that can be edited
    ("POST", "/", "text/html", "identity"),
])
def test_every_other_answer_passes_byte_for_byte(method: str, path: str, content_type: str,
                                                 encoding: str):
    body = gzip.compress(PAGE) if encoding == "gzip" else PAGE
    app = served(body, content_type, chunks=2, **{"content-encoding": encoding})
    answer = TestClient(EarlyScript(app)).request(method, path)
    assert answer.content == PAGE and answer.headers["content-length"] == str(len(body))


@pytest.mark.parametrize("environment", [
    {}, {"TREADWISE_PUBLIC": "1", "TREADWISE_AUTH": "ana:ana-secret-1",
         "TREADWISE_TRUSTED_PROXIES": "127.0.0.1"}])
def test_the_app_puts_it_in_front_of_gradio_behind_every_guard(environment: dict[str, str]):
    middleware = launch_kwargs(Settings.from_env(environment))["app_kwargs"]["middleware"]
    assert [m.cls for m in middleware].count(EarlyScript) == 1
    assert middleware[-1].cls is EarlyScript and len(middleware) == 1 + 4 * bool(environment)
