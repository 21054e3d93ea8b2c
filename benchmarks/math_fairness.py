"""math_fairness: a quick 2+2 alone vs while 10 other sessions keep slow equation solves running."""

from __future__ import annotations

import statistics
import sys
import threading
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from treadwise.safemath import MathEngine, MathError

SESSIONS = 10
SAMPLES = 30
GAP_S = 0.2
SLOW = {"equation": "x^13 - 3x^5 + x - 7 = 0"}  # runs until its 5 s timeout
RATIO_GOAL = 10.0
ABSOLUTE_GOAL_S = 0.5


def quick_latencies(engine: MathEngine, samples: int) -> list[float]:
    times = []
    for _ in range(samples):
        started = time.perf_counter()
        if engine.run("calculate", session="quick", expression="2+2") != "2+2 = 4":
            raise SystemExit("2+2 came back wrong")
        times.append(time.perf_counter() - started)
        time.sleep(GAP_S)
    return times


def keep_solving(engine: MathEngine, session: str, stop: threading.Event,
                 outcomes: list[str]) -> None:
    while not stop.is_set():
        try:
            engine.run("solve_equation", session=session, **SLOW)
            outcomes.append("answered")
        except MathError as exc:
            outcomes.append(type(exc).__name__)


def p95(times: list[float]) -> float:
    return statistics.quantiles(times, n=20)[-1]


def under_load(engine: MathEngine) -> tuple[list[float], list[float], int, list[str]]:
    """Quick latencies alone, then while SESSIONS sessions keep slow solves going."""
    quick_latencies(engine, 5)  # warm: every worker has run once
    alone = quick_latencies(engine, SAMPLES)
    stop = threading.Event()
    outcomes: list[str] = []
    crowd = [threading.Thread(target=keep_solving, args=(engine, f"s{n}", stop, outcomes))
             for n in range(SESSIONS)]
    for thread in crowd:
        thread.start()
    time.sleep(1.0)  # let the slow solves fill the pool
    loaded = quick_latencies(engine, SAMPLES)
    running = engine.admission.running()
    stop.set()
    for thread in crowd:
        thread.join()
    return alone, loaded, running, outcomes


def describe(times: list[float]) -> str:
    return f"p50 {statistics.median(times) * 1000:.1f} ms, p95 {p95(times) * 1000:.1f} ms"


def main() -> None:
    with MathEngine() as engine:
        alone, loaded, running, outcomes = under_load(engine)
    # The same crowd without fair shares or a quick lane, as the pool behaved before.
    with MathEngine(per_session=10**6, quick_reserve=0) as engine:
        _, unfair, _, unfair_outcomes = under_load(engine)
    ratio = statistics.median(loaded) / statistics.median(alone)
    print(f"math_fairness: ratio {ratio:.2f} (goal <= {RATIO_GOAL:g})")
    print(f"quick 2+2 alone: {describe(alone)}")
    print(f"quick 2+2 during {SESSIONS} sessions of slow solves ({running} jobs running): "
          f"{describe(loaded)} (goal <= {ABSOLUTE_GOAL_S * 1000:.0f} ms)")
    print(f"same crowd without fair shares or quick lane: {describe(unfair)}")
    for label, found in (("fair", outcomes), ("unfair", unfair_outcomes)):
        counts = {name: found.count(name) for name in sorted(set(found))}
        print(f"slow solves finished meanwhile ({label}): {counts}")


if __name__ == "__main__":
    main()
