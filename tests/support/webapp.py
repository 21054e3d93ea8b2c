"""Helpers for the web tests: free ports, the app served in-process, scripted models by spec."""

from __future__ import annotations

import concurrent.futures
import dataclasses
import functools
import socket
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import httpx
import pytest

from treadwise.models.spec import ModelSettings, ModelSpec
from treadwise.settings import Settings, child_environment

REPO = Path(__file__).resolve().parents[2]
READER_CLOSE_S = 10.0  # the server closes a session's stream right after its last answer
# The math time limit for tests whose subject is not that limit but a finished answer (a plot
# on the page, the same answer two ways): the math workers yield the CPU to the app, so on a
# loaded machine the 5 s default can end a job that is merely starved, not hard.
ROOMY_MATH_S = 60.0
# A page's wait for a reply with math in it: an integral and then its plot may each use the
# whole roomy limit, which is longer than a page's default 90 s wait.
ROOMY_REPLY_MS = int((2 * ROOMY_MATH_S + 30) * 1000)


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def use_scripted(monkeypatch: pytest.MonkeyPatch, **models: Any) -> None:
    """Make the spec "scripted:NAME" answer with models[NAME] (a ScriptedModel)."""
    from treadwise import models as registry

    def build(spec: ModelSpec, settings: ModelSettings) -> Any:
        return models[spec.model]

    monkeypatch.setitem(registry.PROVIDERS, "scripted", build)


@contextmanager
def serve_in_process(settings: Settings | None = None, agent: Any = None,
                     results_dir: Path | None = None, plugs: dict[str, Any] | None = None,
                     **launch: Any) -> Iterator[str]:
    """The real app with its launch options, on a free port; yields its base URL. The page
    gets what `plugs` add, or every installed package's (the harness's, in this checkout);
    with `results_dir`, the harness's Experiments tab reads the runs there (else ./results)."""
    from treadwise.web.gradio_app import create_app, start

    settings = dataclasses.replace(settings or Settings.from_env(), port=free_port())
    if results_dir is not None:
        from experiments.web.plugin import plug

        plugs = {"experiments": functools.partial(plug, results_dir=results_dir)}
    demo = create_app(settings, agent, plugs=plugs)
    try:
        start(demo, settings, **{"quiet": True, "prevent_thread_lock": True, **launch})
    except ValueError as exc:
        # Gradio checks its own URL once right after starting and gives up on a machine busy
        # enough that the first answer is late ("localhost is not accessible"); that is the
        # machine, not the app: one more start on a new port.
        if "localhost is not accessible" not in str(exc):
            raise
        close_app(demo)
        settings = dataclasses.replace(settings, port=free_port())
        demo = create_app(settings, agent, plugs=plugs)
        start(demo, settings, **{"quiet": True, "prevent_thread_lock": True, **launch})
    try:
        yield f"http://127.0.0.1:{settings.port}/"
    finally:
        close_app(demo)


def close_app(demo: Any) -> None:
    """`demo.close()`, its stop event set on the server's own event loop first.

    Gradio 6.31's close() sets `app.stop_event`, an asyncio.Event, from the calling thread,
    while the server's loop adds a waiter to it for every open event stream; the two met once
    in a whole run under load (RuntimeError: deque mutated during iteration, inside close()).
    Set on the loop, the event is already set when close() comes to it, and close() goes on to
    stop the server."""
    servers = getattr(getattr(demo, "server", None), "servers", None) or []
    event = getattr(getattr(demo, "app", None), "stop_event", None)
    if servers and event is not None:
        loop = servers[0].get_loop()
        if loop.is_running():
            done = threading.Event()

            def set_here() -> None:
                event.set()
                done.set()

            loop.call_soon_threadsafe(set_here)
            done.wait(timeout=10)
    demo.close()


@dataclasses.dataclass
class RunningApp:
    url: str
    process: subprocess.Popen
    log: Path

    def logs(self) -> str:
        return self.log.read_text(errors="replace")


@contextmanager
def serve_subprocess(data_dir: Path, cwd: Path = REPO, env: dict[str, str] | None = None,
                     timeout_s: float = 120, code: str | None = None) -> Iterator[RunningApp]:
    """`python app.py` as a user starts it (or `python -c code`, a benchmark's variant of it),
    once it answers 200; its output goes to a log file beside the data dir (a pipe nobody
    reads could fill and stall the app)."""
    port = free_port()
    environment = child_environment(**{"TREADWISE_PORT": str(port),
                                       "TREADWISE_DATA_DIR": str(data_dir), **(env or {})})
    log = data_dir.parent / f"app-{port}.log"
    with open(log, "w") as output:
        command = ["-c", code] if code is not None else [str(REPO / "app.py")]
        process = subprocess.Popen([sys.executable, *command], cwd=cwd,
                                   env=environment, stdout=output, stderr=subprocess.STDOUT,
                                   text=True)
    app = RunningApp(f"http://127.0.0.1:{port}/", process, log)
    try:
        wait_for_200(app.url, process, timeout_s)
        yield app
    finally:
        stop(process)


def stop(process: subprocess.Popen) -> None:
    """Ask a server to stop, and kill it if it will not."""
    process.terminate()
    try:
        process.wait(timeout=20)
    except subprocess.TimeoutExpired:
        process.kill()
        process.wait()


def wait_for_200(url: str, process: subprocess.Popen[str], timeout_s: float) -> None:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise AssertionError(f"app.py exited with {process.returncode}")
        try:
            if httpx.get(url, timeout=2).status_code == 200:
                return
        except httpx.HTTPError:
            pass
        time.sleep(0.2)
    raise AssertionError(f"app.py did not answer 200 at {url} within {timeout_s} s")


def loopback_client(url: str, **options: Any) -> Any:
    """A Gradio client for an app on plain-HTTP loopback. ssl_verify=False: otherwise
    gradio_client loads the CA bundle for every request, which costs more CPU than the offline
    turn it sends. Its predict returns once the client's stream reader has closed (see
    _ReaderClosingClient)."""
    from gradio_client import Client

    class _ReaderClosingClient(Client):
        # gradio_client 2.7.2 reads a session's events on one stream, which the server ends
        # with close_stream once no event is pending. A predict sent after the last one's
        # answer but before the reader has handled that close_stream joins the closing reader,
        # which then cancels it (CancelledError; seen on a loaded machine). Waiting for the
        # reader to finish makes the next predict open its own.
        def predict(self, *args: Any, **kwargs: Any) -> Any:
            try:
                return super().predict(*args, **kwargs)
            finally:
                reader = getattr(self, "streaming_future", None)
                if reader is not None:
                    concurrent.futures.wait([reader], timeout=READER_CLOSE_S)

    # Its files go to the test's temporary folder (tests/conftest.py: system_temp), not
    # gradio_client's default /tmp/gradio, where every run's downloads stayed.
    options.setdefault("download_files", Path(tempfile.gettempdir()) / "gradio-downloads")
    return _ReaderClosingClient(url, verbose=False, ssl_verify=False, **options)


def chat_text(messages: list[dict[str, Any]], role: str = "assistant") -> str:
    """All text the chatbot shows for one role, in order."""
    parts = []
    for message in messages:
        if message["role"] != role:
            continue
        for item in message["content"]:
            if item.get("type") == "text":
                parts.append(item["text"])
    return "\n".join(parts)


def mixed_message(session: int, turn: int, tag: str) -> str:
    """The load runs' mix, turn by turn: chained arithmetic (the answer is (turn + session)²),
    an integral with its plot, a lead at an address unique to the turn, a business question."""
    kind = turn % 4
    if kind == 0:
        return f"Add {turn} and {session}, then give me the square of the result"
    if kind == 1:
        return f"Calculate the integral of x^2 from 0 to {turn % 5 + 1}"
    if kind == 2:
        return f"Please contact me at {tag}{session}-{turn}@example.com about fleet pricing"
    return "What are your opening hours?"
