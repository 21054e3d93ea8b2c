"""A Gradio app's queue spoken over plain HTTP, one session a client: for the soak's many turns.

The requests are the ones gradio_client and the page's own script send (join the queue, read the
session's event stream to its end, keep the heartbeat open), so the server runs the same code;
what is left out is gradio_client's machinery around them (two threads polling every 50 ms and a
new connection for each call), which cost the soak more CPU than the turns it sent.
"""

from __future__ import annotations

import json
import threading
import uuid
from typing import Any

import httpx

API = "gradio_api/"


def fn_index(url: str, api_name: str) -> int:
    """The id the app's config gives the event named `api_name` (what /queue/join is told)."""
    config = httpx.get(url + "config", timeout=60).json()
    (found,) = [dep["id"] for dep in config["dependencies"] if dep.get("api_name") == api_name]
    return found


class QueueSession:
    """One browser tab: its own session hash (so its own gr.State), heartbeat and connection."""

    def __init__(self, url: str, fn: int, timeout_s: float = 600):
        self.fn = fn
        self.session_hash = str(uuid.uuid4())
        self.http = httpx.Client(base_url=url, timeout=timeout_s)
        self._beat = httpx.Client(base_url=url, timeout=None)
        threading.Thread(target=self._heartbeat, daemon=True).start()

    def _heartbeat(self) -> None:
        # Open while the tab is: the server drops a session's state when it closes.
        try:
            with self._beat.stream("GET", f"{API}heartbeat/{self.session_hash}") as response:
                for _ in response.iter_lines():
                    pass
        except Exception:  # noqa: BLE001 - ends with the server or with close()
            pass

    def call(self, *data: Any) -> list[Any]:
        """Run the event with `data` (None where the input is a gr.State); its final outputs."""
        joined = self.http.post(f"{API}queue/join", json={
            "data": list(data), "fn_index": self.fn, "session_hash": self.session_hash})
        joined.raise_for_status()
        event_id = joined.json()["event_id"]
        done = None
        # Read to the stream's end (the server closes it once the session has nothing pending):
        # a stream dropped early makes the server clean up the session's events.
        with self.http.stream("GET", f"{API}queue/data",
                              params={"session_hash": self.session_hash}) as stream:
            for line in stream.iter_lines():
                if line.startswith("data:"):
                    message = json.loads(line[5:])
                    if message.get("event_id") == event_id and \
                            message["msg"] == "process_completed":
                        done = message
        assert done is not None, "the event stream ended before the event completed"
        assert done["success"], done["output"]
        return done["output"]["data"]

    def close(self) -> None:
        self.http.close()
        self._beat.close()

    def __enter__(self) -> QueueSession:
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()
