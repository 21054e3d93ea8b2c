"""An idle page that asks for fewer frames. With nothing running, Gradio 6.31's page asks for a new
animation frame about 60 times a second for as long as the tab stays open, and Chromium spends
about 7% of a core on each open tab (benchmarks/idle_tab.py). Its status tracker's timer loop
stops only when the tracker's status leaves "pending", and the tracker shown while the page
loads is removed while still pending, so nothing ever stops it
(js/statustracker/static/index.svelte: the effect that clears `_timer` has no teardown).

The tracker keeps its own copy of `window.requestAnimationFrame`, taken as Gradio's modules
load, so the fix has to run before them: `EarlyScript` puts `IDLE_FRAMES_JS` first in the head
of the app's page. The script lets the status trackers draw ten frames a second between them,
which is what a timer shows (tenths of a second), and every other caller as many as it asks
for.

Left as it is: a removed tracker's spinning loader keeps moving too. Each move starts from the
tracker's module (and is paced), but runs on in Svelte's own frame loop, which serves every
animation of the page: about 30 frames a second on an idle Experiments tab in a probe."""

from __future__ import annotations

import re
from typing import Any

# Whatever the status tracker's module asks a frame for (its timer, each move of its loader) is
# asked for together, a tenth of a second later, so that however many trackers are left running
# the page draws ten frames a second for them; its stack names the module
# (assets/statustracker-<hash>.js) whichever of its functions asks. The 0 it returns is no frame
# to cancel (the module cancels none).
IDLE_FRAMES_JS = """<script>(() => {
  const frame = window.requestAnimationFrame.bind(window);
  let waiting = [];
  window.requestAnimationFrame = callback => {
    if (!(new Error().stack || '').includes('/statustracker-')) return frame(callback);
    if (waiting.push(callback) === 1) {
      setTimeout(function pacedStatusFrames() {
        const due = waiting;
        waiting = [];
        due.forEach(paced => frame(paced));
      }, 100);
    }
    return 0;
  };
})();</script>"""

HEAD_TAG = re.compile(rb"<head\b[^>]*>", re.IGNORECASE)


class EarlyScript:
    """ASGI middleware: `script` goes first in the head of the app's page (GET /), before any
    of the page's own scripts; every other response (a file, an export, the API) passes as it
    is."""

    def __init__(self, app: Any, script: str = IDLE_FRAMES_JS):
        self.app = app
        self.script = script.encode()

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        if scope["type"] != "http" or scope.get("method") != "GET" or not _the_page(scope):
            await self.app(scope, receive, send)
            return
        start: dict[str, Any] | None = None
        body: list[bytes] = []

        async def relay(message: dict[str, Any]) -> None:
            nonlocal start
            if message["type"] == "http.response.start" and _plain_html(message["headers"]):
                start = message  # held until the whole page is here
                return
            if start is None or message["type"] != "http.response.body":
                await send(message)
                return
            body.append(message.get("body", b""))
            if message.get("more_body"):
                return
            page = HEAD_TAG.sub(lambda head: head[0] + self.script, b"".join(body), count=1)
            headers = [(k, v) for k, v in start["headers"] if k.lower() != b"content-length"]
            headers.append((b"content-length", str(len(page)).encode()))
            await send({**start, "headers": headers})
            await send({"type": "http.response.body", "body": page})

        await self.app(scope, receive, relay)


def _the_page(scope: Any) -> bool:
    """The request is for the app's page: its root, below any prefix a proxy serves it at."""
    path = scope.get("path", "")
    return path.removeprefix(scope.get("root_path", "")) in ("", "/")


def _plain_html(headers: list[tuple[bytes, bytes]]) -> bool:
    """An HTML response sent as it is (not compressed), whose text can be edited."""
    found = {key.lower(): value.lower() for key, value in headers}
    return (found.get(b"content-type", b"").startswith(b"text/html")
            and found.get(b"content-encoding", b"identity") == b"identity")
