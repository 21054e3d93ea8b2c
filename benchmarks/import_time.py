"""Cost of importing treadwise (and the sweep runner) vs importing gradio, in fresh interpreters,
same run."""

from __future__ import annotations

import statistics
import subprocess
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
ROUNDS = 7


def import_seconds(module: str) -> float:
    started = time.perf_counter()
    subprocess.run([sys.executable, "-c", f"import {module}"], cwd=REPO, check=True)
    return time.perf_counter() - started


def main() -> None:
    import_seconds("gradio")  # warm the file cache for both
    import_seconds("treadwise")
    samples: dict[str, list[float]] = {"treadwise": [], "gradio": [], "treadwise.agent": [],
                                      "experiments.run.runner": []}
    for _ in range(ROUNDS):
        for module in samples:
            samples[module].append(import_seconds(module))
    median = {m: statistics.median(s) for m, s in samples.items()}
    leaked = subprocess.run(
        [sys.executable, "-c", "import sys, treadwise.agent, treadwise.command_line; "
         "print(sorted(m for m in ('gradio', 'sympy', 'matplotlib') if m in sys.modules))"],
        cwd=REPO, capture_output=True, text=True, check=True).stdout.strip()
    dask = subprocess.run(
        [sys.executable, "-c", "import sys, experiments.run.runner; "
         "print(sorted(m for m in ('dask', 'distributed') if m in sys.modules))"],
        cwd=REPO, capture_output=True, text=True, check=True).stdout.strip()
    for module, value in median.items():
        print(f"python -c 'import {module}': {value * 1000:.0f} ms (median of {ROUNDS})")
    print(f"heavy modules loaded by treadwise.agent + treadwise.command_line: {leaked}")
    print(f"Dask loaded by the sweep runner (only --cluster needs it): {dask}")
    print(f"import_time: ratio {median['treadwise'] / median['gradio']:.2f} (goal <= 0.5)")
    print(f"import_time_agent: ratio {median['treadwise.agent'] / median['gradio']:.2f} "
          "(informational: the agent stack without gradio, sympy or matplotlib)")
    print(f"import_time_runner: ratio {median['experiments.run.runner'] / median['gradio']:.2f} "
          "(informational: what every sweep imports before its first case)")


if __name__ == "__main__":
    main()
