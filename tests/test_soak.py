"""Soak: 8 concurrent browser sessions x 30 offline turns against the real `python app.py`.

Shortened from 50 turns a session (the suite-speed work): the 160 turns after warm-up still
catch what the soak is for. Correctness under concurrency: every turn's answer, tool calls and
plot are checked and each lead is stored exactly once (60 leads from 8 sessions at once).
Memory: the app may grow by at most a fifth after warm-up, about 50 MB, so anything kept per
turn beyond ~330 KB (a compiled graph, a model client, a plot or an export held in memory each
turn) fails it; the 50-turn version bounded that at ~150 KB a turn and, in CI, measured 175 KB
a turn (the sessions' own chat histories grow with every turn), which this version does not
separate from a leak either.

The sessions speak the queue over plain HTTP (tests/support/soak_client.py): the same requests a
browser tab sends, so the server does the same work, without gradio_client's threads polling
every 50 ms, which cost this process about 24 s of CPU a run against 5 s now (the app's own is
about 44 s). Fewer turns would save more, but an Agent kept per turn (~170 KB measured) is only
just caught at 30: the sessions' histories already add ~175 KB a turn.
"""

from __future__ import annotations

import threading
from collections import Counter
from pathlib import Path

import psutil
import pytest

from tests.support.soak_client import QueueSession, fn_index
from tests.support.webapp import ROOMY_MATH_S, mixed_message, serve_subprocess
from treadwise.agent.strategies import DEFAULT_STRATEGY
from treadwise.storage.sqlite import Store

SESSIONS = 8
TURNS = 30
WARM_UP = 10


def check(turn: dict, text: str, session: int, number: int) -> None:
    assert turn["status"] == "done" and turn["error"] is None, turn
    assert turn["answer"].strip()
    errors = [(step["name"], step["error"]) for step in turn["tool_calls"] if step["error"]]
    assert not errors, errors
    if number % 4 == 0:
        assert str((number + session) ** 2) in turn["answer"]
    if number % 4 == 1:
        assert {s["name"] for s in turn["tool_calls"]} == {"integrate", "plot_area"}
        assert turn["tool_calls"][1]["plots"] or turn["tool_calls"][0]["plots"]


@pytest.mark.slow
@pytest.mark.timeout(1800)
def test_eight_sessions_thirty_turns_each(data_dir: Path, tmp_path: Path):
    memory: dict[str, int] = {}
    failures: list[str] = []
    # What the soak measures is memory and correctness over many turns, not speed. Eight
    # sessions' integrals and plots share two cores (with whatever else runs here), so a plot's
    # wall-clock time is mostly waiting for CPU; the 5 s default timeout, which is about hostile
    # input (tests/safemath/test_sandbox.py), would fail turns for being starved, not hard.
    with serve_subprocess(data_dir, env={"TREADWISE_MATH_TIMEOUT_S": str(ROOMY_MATH_S)}) as app:
        process = psutil.Process(app.process.pid)

        def measure() -> None:
            memory["warm"] = process.memory_info().rss
            memory["warm_children"] = sum(c.memory_info().rss for c in process.children(True))

        warmed = threading.Barrier(SESSIONS, action=measure)

        send = fn_index(app.url, "send")

        def session(number: int) -> None:
            try:
                with QueueSession(app.url, send) as tab:
                    for turn in range(TURNS):
                        text = mixed_message(number, turn, "soak")
                        # The inputs in the page's order; None is the session's gr.State.
                        outputs = tab.call(text, None, "friendly", "offline", "", 0.0,
                                           DEFAULT_STRATEGY)
                        # Files stay on the server: the export is fetched over HTTP, as a
                        # browser would.
                        exported = tab.http.get(outputs[-1]["value"]["url"]).json()
                        check(exported["turns"][-1], text, number, turn)
                        if turn == WARM_UP - 1:
                            warmed.wait(timeout=600)
            except Exception as exc:  # noqa: BLE001 - collected and reported below
                failures.append(f"session {number}: {type(exc).__name__}: {exc}"[:500])
                warmed.abort()

        threads = [threading.Thread(target=session, args=(n,)) for n in range(SESSIONS)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(timeout=1200)
        assert not failures, failures
        end = process.memory_info().rss
        children = sum(c.memory_info().rss for c in process.children(True))
    leads = Counter(lead["email"] for lead in Store(data_dir).leads())
    expected = {f"soak{s}-{t}@example.com" for s in range(SESSIONS) for t in range(TURNS)
                if t % 4 == 2}
    assert set(leads) == expected and set(leads.values()) == {1}
    ratio = end / memory["warm"]
    report = (f"soak: app RSS {memory['warm'] / 2**20:.0f} MB after warm-up -> "
              f"{end / 2**20:.0f} MB after {SESSIONS * TURNS} turns (ratio {ratio:.2f}); "
              f"math workers {memory['warm_children'] / 2**20:.0f} -> {children / 2**20:.0f} MB")
    (tmp_path / "soak.txt").write_text(report + "\n")
    print(report)
    assert ratio <= 1.2, report
