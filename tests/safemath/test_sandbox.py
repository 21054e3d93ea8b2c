"""The math worker pool: limits, timeouts, crashes, concurrency and clean shutdown."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import psutil
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import treadwise.safemath
from treadwise.safemath import (
    MathEngine,
    MathError,
    MathTimeoutError,
    MathWorkerError,
    get_engine,
    timeout_from_env,
)
from treadwise.safemath.worker import NICENESS, Limits

SLOW = "exp(x^2)*sin(x)^3*ln(x)"  # sympy works on its antiderivative for far longer than 2 s


@pytest.fixture(scope="module")
def engine() -> Iterator[MathEngine]:
    with MathEngine(timeout_s=2.0) as engine:
        yield engine


def eventually(condition: Callable[[], bool], within_s: float = 3.0) -> bool:
    deadline = time.monotonic() + within_s
    while time.monotonic() < deadline:
        if condition():
            return True
        time.sleep(0.02)
    return False


def gone(pid: int) -> bool:
    return eventually(lambda: not Path(f"/proc/{pid}").exists())


@pytest.mark.slow
def test_workers_run_under_memory_file_and_cpu_limits(engine: MathEngine) -> None:
    engine.run("calculate", expression="1+1")
    for pid in engine.worker_pids():
        limits = Path(f"/proc/{pid}/limits").read_text()
        memory = next(line for line in limits.splitlines() if line.startswith("Max address space"))
        assert str(Limits().memory_bytes) in memory
        cpu = next(line for line in limits.splitlines() if line.startswith("Max cpu time"))
        assert "unlimited" not in cpu.split()[3]


def test_a_fast_job_answers_while_four_slow_ones_run(engine: MathEngine) -> None:
    finished: dict[str, float] = {}
    outcomes: list[str] = []

    def slow(name: str) -> None:
        try:
            outcomes.append(engine.run("integrate", expression=SLOW).statement)
        except MathError as exc:
            outcomes.append(str(exc))
        finished[name] = time.monotonic()

    threads = [threading.Thread(target=slow, args=(f"slow-{i}",)) for i in range(4)]
    for thread in threads:
        thread.start()
    assert eventually(lambda: engine.admission.running() == 4)  # every slow job holds a worker
    assert engine.run("calculate", expression="2+2").statement == "2+2 = 4"
    fast_done = time.monotonic()
    for thread in threads:
        thread.join()
    assert len(finished) == 4 and all(fast_done < done for done in finished.values())
    assert all("antiderivative" in text or "took too long" in text for text in outcomes)


def test_a_killed_worker_is_replaced(engine: MathEngine) -> None:
    engine.run("calculate", expression="1+1")
    victims = engine.worker_pids()
    for pid in victims:
        os.kill(pid, signal.SIGKILL)
    assert all(gone(pid) for pid in victims)  # reaped, not left as zombies
    assert engine.run("calculate", expression="6*7").statement == "6*7 = 42"
    assert not set(victims) & set(engine.worker_pids())
    assert eventually(lambda: len(engine.worker_pids()) >= engine.min_workers)


@pytest.fixture(scope="module")
def single() -> Iterator[MathEngine]:
    with MathEngine(timeout_s=1.0, min_workers=1, max_workers=1) as engine:
        yield engine


def test_a_job_past_the_timeout_is_killed_and_the_next_call_works(single: MathEngine) -> None:
    single.run("calculate", expression="1+1")
    (stuck,) = single.worker_pids()
    os.kill(stuck, signal.SIGSTOP)  # a worker that never answers, like one stuck in C code
    with pytest.raises(MathTimeoutError, match=r"took too long \(over 1 s\)"):
        single.run("calculate", expression="2+2")
    assert gone(stuck)  # the timeout is enforced by killing the worker, not by abandoning it
    assert single.run("calculate", expression="2+3").statement == "2+3 = 5"


def test_a_full_pool_queues_callers_until_a_worker_is_free(single: MathEngine) -> None:
    refused: list[str] = []

    def slow() -> None:
        try:
            single.run("integrate", expression=SLOW)
        except MathError as exc:
            refused.append(str(exc))

    thread = threading.Thread(target=slow)
    thread.start()
    assert eventually(lambda: single.admission.running() == 1)  # the slow job has the worker
    assert single.run("calculate", expression="3*3").statement == "3*3 = 9"
    thread.join()
    assert refused and len(single.worker_pids()) == 1


def test_concurrent_callers_each_get_their_own_answer(engine: MathEngine) -> None:
    answers: dict[int, str] = {}

    def ask(n: int) -> None:
        answers[n] = engine.run("calculate", expression=f"{n}*{n}").statement

    threads = [threading.Thread(target=ask, args=(n,)) for n in range(16)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert answers == {n: f"{n}*{n} = {n * n}" for n in range(16)}
    assert len(engine.worker_pids()) <= engine.max_workers


@pytest.mark.slow
def test_shutdown_leaves_no_processes_behind() -> None:
    me = psutil.Process()
    before = {child.pid for child in me.children(recursive=True)}
    engine = MathEngine(timeout_s=2.0).start()
    assert engine.run("calculate", expression="1+2").statement == "1+2 = 3"
    started = {child.pid for child in me.children(recursive=True)} - before
    assert len(started) >= 3  # the template and two warm workers
    engine.shutdown()
    assert all(gone(pid) for pid in started)
    with pytest.raises(MathWorkerError, match="shut down"):
        engine.run("calculate", expression="1+2")


def test_a_worker_forked_as_the_engine_shuts_down_is_stopped_and_its_job_refused() -> None:
    """A shutdown from another thread can land between a worker's fork and its entry in the
    pool (a whole run's session test hit it by chance): the worker is stopped there, not left
    running outside the pool, and the job is refused as shut down."""
    engine = MathEngine(timeout_s=2.0, min_workers=0, max_workers=1).start()
    fork, forked = engine._fork, []

    def fork_then_shut_down():
        worker = fork()
        forked.append(worker)  # kept: a dropped worker's pipe would close and end it anyway
        engine.shutdown()  # as another thread would, before this one takes the pool's lock
        return worker

    engine._fork = fork_then_shut_down  # type: ignore[method-assign]
    with pytest.raises(MathWorkerError, match="shut down"):
        engine.run("calculate", expression="1+2")
    assert forked and gone(forked[0].pid), "the worker forked at the shutdown is still running"
    assert engine.worker_pids() == []


def test_a_forked_child_leaves_the_parents_workers_alone(engine: MathEngine) -> None:
    engine.run("calculate", expression="1+1")
    pid = os.fork()
    if pid == 0:
        engine.shutdown()  # also what the inherited atexit hook would do
        os._exit(0 if get_engine() is not engine else 1)
    _, status = os.waitpid(pid, 0)
    assert os.waitstatus_to_exitcode(status) == 0
    assert engine.run("calculate", expression="2+2").statement == "2+2 = 4"


def test_the_timeout_comes_from_the_environment() -> None:
    assert timeout_from_env({}) == 5.0
    assert timeout_from_env({"TREADWISE_MATH_TIMEOUT_S": "2.5"}) == 2.5
    with pytest.raises(ValueError, match="TREADWISE_MATH_TIMEOUT_S"):
        timeout_from_env({"TREADWISE_MATH_TIMEOUT_S": "soon"})
    with pytest.raises(ValueError, match="between 0 and 600"):
        timeout_from_env({"TREADWISE_MATH_TIMEOUT_S": "-1"})


def test_get_engine_is_one_engine_per_process(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(treadwise.safemath, "_engine", None)
    monkeypatch.setenv("TREADWISE_MATH_TIMEOUT_S", "3")
    engine = get_engine()
    assert get_engine() is engine and engine.timeout_s == 3.0
    engine.shutdown()
    assert get_engine() is not engine


mathish = st.lists(st.sampled_from(["x", "0", "2", "9", "0.5", "^", "*", "/", "+", "-", "(", ")",
                                    "sin(", "sqrt(", "factorial(", "e", "pi", "%", "!", "²", "√",
                                    "'", "__", "."]), max_size=25).map("".join)


@settings(max_examples=300, deadline=None,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture])
@given(st.one_of(st.text(max_size=60), mathish))
def test_random_text_through_the_worker_answers_or_refuses(engine: MathEngine, text: str) -> None:
    try:
        result = engine.run("calculate", expression=text)
    except MathError as exc:
        assert str(exc) and "Traceback" not in str(exc)
    else:
        assert isinstance(result.statement, str) and " = " in result.statement


MISSED_ALARM = """
import sys, weakref
from treadwise.safemath.jobs import OutOfTime, drop_missed_alarm
if sys.argv[1] == "worker":
    sys.unraisablehook = drop_missed_alarm  # as template_main sets it for every worker

class Held:
    pass

def ring(_):  # the step alarm landing in a weakref callback, where Python cannot raise it
    raise OutOfTime

def broken(_):
    raise ValueError("a real fault")

a, b = Held(), Held()
kept = [weakref.ref(a, ring), weakref.ref(b, broken)]
del a, b
"""


@pytest.mark.parametrize("hook", ["worker", "python"])
def test_an_alarm_that_rang_in_a_callback_leaves_no_traceback_in_the_log(hook: str) -> None:
    """The step alarm rings again every 50 ms, so one Python could not raise is not a fault:
    the worker's log (the server's) shows none of it, and still shows any other exception."""
    done = subprocess.run([sys.executable, "-c", MISSED_ALARM, hook], capture_output=True,
                          text=True, timeout=120, cwd=Path(treadwise.safemath.__file__).parents[2])
    assert done.returncode == 0, done.stderr
    assert "ValueError: a real fault" in done.stderr
    assert ("OutOfTime" in done.stderr) == (hook == "python")


# The real template, with one line added: the niceness it warms up at, printed first.
WARM_UP_NICENESS = """
import os, sys
from treadwise.safemath import worker
warm_up = worker.warm_up
def noted():
    print(os.getpriority(os.PRIO_PROCESS, 0), flush=True)
    warm_up()
worker.warm_up = noted
worker.template_main(int(sys.argv[1]), 1 << 30, 32 << 20)
"""


@pytest.mark.slow  # a template of its own, warmed up: 6.7 core-s, the most of any quick test
def test_the_template_warms_up_at_the_apps_priority_and_only_its_workers_yield() -> None:
    """Niced before its warm-up (a few core-seconds of imports and first jobs), the template got
    so small a share of a busy machine that its start outran the pool's 60 s limit and every
    math tool failed: 57.9 s with six busy processes on two cores, against 2.0 s idle. It warms
    up at the app's priority and is niced after, before any worker is forked from it."""
    ours, theirs = socket.socketpair()
    template = subprocess.Popen(
        [sys.executable, "-c", WARM_UP_NICENESS, str(theirs.fileno())],
        pass_fds=[theirs.fileno()], stdout=subprocess.PIPE, text=True,
        cwd=Path(treadwise.safemath.__file__).parents[2])
    theirs.close()
    try:
        ours.settimeout(120)
        assert ours.recv(1) == b"R"
        ours_niceness = os.getpriority(os.PRIO_PROCESS, 0)
        assert template.stdout is not None
        assert int(template.stdout.readline()) == ours_niceness
        assert psutil.Process(template.pid).nice() == min(19, ours_niceness + NICENESS)
    finally:
        ours.close()
        template.wait(30)
