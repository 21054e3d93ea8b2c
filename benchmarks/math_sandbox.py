"""math_sandbox: the math problem table through the worker pool vs the same calls in-process."""

from __future__ import annotations

import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from tests.support.math_problems import PROBLEMS
from treadwise.safemath import MathEngine
from treadwise.safemath.jobs import run_job

ROUNDS = 5
GOAL = 1.5
TIMEOUT_S = 5.0


def in_process() -> float:
    started = time.perf_counter()
    for problem in PROBLEMS:
        status, message, _ = run_job(problem.tool, problem.args, TIMEOUT_S)
        if status != "ok":
            raise SystemExit(f"{problem.tool} {problem.args} failed in-process: {message}")
    return time.perf_counter() - started


def sandboxed(engine: MathEngine) -> float:
    started = time.perf_counter()
    for problem in PROBLEMS:
        engine.run(problem.tool, **problem.args)
    return time.perf_counter() - started


def main() -> None:
    with MathEngine(timeout_s=TIMEOUT_S) as engine:
        # One untimed round each, so both sides start with sympy's caches warm.
        in_process()
        sandboxed(engine)
        local = remote = 0.0
        for _ in range(ROUNDS):
            local += in_process()
            remote += sandboxed(engine)
    print(f"math_sandbox: ratio {remote / local:.2f} (goal <= {GOAL})")
    print(f"in-process total: {local:.3f} s; worker pool total: {remote:.3f} s "
          f"({ROUNDS} rounds of {len(PROBLEMS)} problems)")


if __name__ == "__main__":
    main()
