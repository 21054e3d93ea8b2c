"""An idle `python app.py` (started, nobody on the page): CPU used while it waits, with Gradio's
queue as it ships (looking for work every millisecond, the baseline) and as the app paces it
(treadwise/web/gradio_app.py `pace_queue`), interleaved in the same run."""

from __future__ import annotations

import statistics
import sys
import tempfile
import time
from pathlib import Path

import psutil

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from tests.support.webapp import serve_subprocess  # noqa: E402

ROUNDS = 3
IDLE_S = 15.0
PACED = "from treadwise.web.gradio_app import serve; serve()"
# The same app with pace_queue left out: Gradio's own polling.
AS_SHIPPED = ("import treadwise.web.gradio_app as app; app.pace_queue = lambda demo: None; "
              "app.serve()")


def idle_cpu(code: str) -> float:
    """Core-seconds the app's process used over IDLE_S once it answers."""
    with tempfile.TemporaryDirectory() as folder, \
            serve_subprocess(Path(folder) / "data", code=code) as app:
        time.sleep(5)  # the agent warms up in the background after the page answers
        watched = psutil.Process(app.process.pid)
        before = sum(watched.cpu_times()[:2])
        time.sleep(IDLE_S)
        return sum(watched.cpu_times()[:2]) - before


def main() -> None:
    samples: dict[str, list[float]] = {AS_SHIPPED: [], PACED: []}
    for _ in range(ROUNDS):
        for code in samples:
            samples[code].append(idle_cpu(code))
    base, now = statistics.median(samples[AS_SHIPPED]), statistics.median(samples[PACED])
    print(f"idle app over {IDLE_S:g} s, median of {ROUNDS}: Gradio's queue as shipped "
          f"{base:.2f} core-s ({base / IDLE_S:.3f} of a core), paced {now:.2f} core-s "
          f"({now / IDLE_S:.3f}); ratio {now / base:.2f} (lower is better)")


if __name__ == "__main__":
    main()
