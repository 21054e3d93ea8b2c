"""Sessions share the math pool fairly: per-session shares, a quick lane, waiting before busy."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from langchain_core.messages import AIMessage

from treadwise.agent import Agent
from treadwise.safemath import MathBusyError, MathEngine, MathError
from treadwise.safemath.admission import Admission
from treadwise.settings import Settings
from treadwise.testing.fakes import ScriptedModel
from treadwise.tools import ToolContext, get_tools

# sympy searches for this antiderivative until the job's time is up, however long that is.
SLOW = {"op": "integrate", "expression": "exp(x^2)*sin(x)^3*ln(x)"}


def in_thread(target: Callable[[], Any]) -> threading.Thread:
    thread = threading.Thread(target=target, daemon=True)
    thread.start()
    return thread


def eventually(condition: Callable[[], bool], within_s: float = 5.0) -> bool:
    deadline = time.monotonic() + within_s
    while time.monotonic() < deadline:
        if condition():
            return True
        time.sleep(0.01)
    return False


def test_a_session_over_its_share_waits_while_another_session_goes_first() -> None:
    admission = Admission(4, per_session=2, quick_reserve=0, queue_s=5)
    first, second = admission.enter("solve", "A"), admission.enter("solve", "A")
    granted: list[str] = []
    waiting_a = in_thread(lambda: granted.append(admission.enter("solve", "A").session))
    assert eventually(lambda: len(admission._waiting) == 1)
    assert admission.enter("solve", "B").session == "B"  # not behind A's third job
    assert granted == []
    admission.leave(first)
    waiting_a.join(2)
    assert granted == ["A"] and admission.running("A") == 2
    admission.leave(second)


def test_a_quick_job_takes_the_reserved_lane_when_slow_jobs_fill_the_rest() -> None:
    admission = Admission(3, per_session=2, quick_reserve=1, queue_s=0.2)
    admission.enter("solve_equation", "A")
    admission.enter("integrate", "B")
    with pytest.raises(MathBusyError, match=r"busy: this calculation waited 0.2 s"):
        admission.enter("integrate", "C")  # the last slot is kept for quick jobs
    assert admission.enter("calculate", "D").quick


def test_freed_slots_go_to_the_session_with_the_fewest_running_jobs() -> None:
    admission = Admission(2, per_session=2, quick_reserve=0, queue_s=5)
    held = [admission.enter("solve", "A"), admission.enter("solve", "A")]
    order: list[str] = []
    threads = [in_thread(lambda: order.append(admission.enter("solve", "A").session))]
    assert eventually(lambda: len(admission._waiting) == 1)
    threads.append(in_thread(lambda: order.append(admission.enter("solve", "B").session)))
    assert eventually(lambda: len(admission._waiting) == 2)
    admission.leave(held[0])
    assert eventually(lambda: order == ["B"])  # B arrived later but has nothing running
    admission.leave(held[1])
    for thread in threads:
        thread.join(2)
    assert order == ["B", "A"]


def test_one_session_cannot_queue_without_limit() -> None:
    admission = Admission(1, per_session=1, quick_reserve=0, queue_s=5,
                          max_waiting_per_session=2)
    admission.enter("solve", "A")
    refused: list[str] = []

    def wait() -> None:
        try:
            admission.enter("solve", "A")
        except MathError as exc:
            refused.append(str(exc))

    threads = [in_thread(wait) for _ in range(2)]
    assert eventually(lambda: len(admission._waiting) == 2)
    with pytest.raises(MathBusyError, match="too many calculations at once in this conversation"):
        admission.enter("solve", "A")
    admission.close()
    for thread in threads:
        thread.join(2)
    assert refused == ["the math engine has been shut down"] * 2


class RecordingEngine(MathEngine):
    """The real engine, noting which session each job came from."""

    sessions: list[str | None] = []

    def run(self, op: str, /, *, session: str | None = None, **kwargs: Any) -> Any:
        self.sessions.append(session)
        return super().run(op, session=session, **kwargs)


@pytest.fixture(scope="module")
def engine() -> Iterator[RecordingEngine]:
    # Four workers: three for slow jobs, one kept for quick ones; two jobs at once per session.
    with RecordingEngine(timeout_s=1.5, min_workers=4, max_workers=4, quick_reserve=1,
                    per_session=2) as engine:
        yield engine


def finishing_order(engine: MathEngine, jobs: list[tuple[str, str, dict]]) -> list[str]:
    """Start each (name, session, job) once the last is in the pool's hands (running, waiting
    or done); return names as they finish."""
    finished: list[str] = []
    admission = engine.admission

    def entered() -> int:
        with admission._cond:
            return sum(admission._running.values()) + len(admission._waiting) + len(finished)

    def run(name: str, session: str, job: dict) -> None:
        try:
            engine.run(job.pop("op"), session=session, **job)
        except MathError as exc:
            assert "busy" not in str(exc)
        finished.append(name)

    threads = []
    for name, session, job in jobs:
        threads.append(in_thread(lambda n=name, s=session, j=dict(job): run(n, s, j)))
        assert eventually(lambda: entered() >= len(threads))
    for thread in threads:
        thread.join(30)
    return finished


@pytest.mark.slow
def test_a_quick_sum_answers_while_four_sessions_run_slow_integrals(engine: MathEngine) -> None:
    order = finishing_order(engine, [("slow-1", "A", SLOW), ("slow-2", "B", SLOW),
                                     ("slow-3", "C", SLOW), ("slow-4", "E", SLOW),
                                     ("2+2", "D", {"op": "calculate", "expression": "2+2"})])
    assert order[0] == "2+2"


def test_a_second_session_is_not_stuck_behind_a_first_sessions_backlog(
        engine: MathEngine) -> None:
    order = finishing_order(engine, [*((f"A{n}", "A", SLOW) for n in range(1, 5)),
                                     ("B1", "B", SLOW)])
    # A's third and fourth jobs wait for A's first two; B's job runs beside them.
    assert order.index("B1") < order.index("A3")


@pytest.mark.slow
def test_64_concurrent_hard_jobs_from_16_sessions_wait_their_turn_instead_of_busy() -> None:
    outcomes: list[str] = []
    with MathEngine(timeout_s=0.4, min_workers=8, max_workers=8) as engine:

        def job(n: int) -> None:
            try:
                outcomes.append(engine.run(SLOW["op"], session=f"s{n % 16}",
                                           expression=SLOW["expression"]).statement)
            except MathError as exc:
                outcomes.append(f"{type(exc).__name__}: {exc}")

        threads = [in_thread(lambda n=n: job(n)) for n in range(64)]
        for thread in threads:
            thread.join(60)
    assert len(outcomes) == 64
    assert not [text for text in outcomes if "Busy" in text or "busy" in text]
    assert all("antiderivative" in text or "took too long" in text for text in outcomes)


def test_the_conversation_thread_is_the_math_session(data_dir: Path,
                                                     engine: RecordingEngine) -> None:
    calls = [{"name": "calculate", "args": {"expression": "2+2"}, "id": "c1", "type": "tool_call"}]
    model = ScriptedModel(script=[AIMessage("", tool_calls=calls), AIMessage("4")])
    engine.sessions = []
    tools = get_tools("math", context=ToolContext(data_dir, math_engine=engine))
    agent = Agent(Settings(data_dir=data_dir), tools=tools, models={"scripted": model})
    result = agent.run("what is 2+2", model="scripted", thread_id="thread-42")
    assert result.tool_calls[0].result == "2+2 = 4"
    assert engine.sessions == ["thread-42"]
