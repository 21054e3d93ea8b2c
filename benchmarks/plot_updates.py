"""A chat turn late in a conversation full of plots: the app's CPU for it with the plots in a
folder Gradio treats as static (treadwise/web/files.py `ShownPlots`, as shipped) and with
Gradio's own per-update checks of every plot (the baseline), interleaved in the same run.

Each round starts `python app.py`, draws PLOTS integrals in one session, then asks TURNS
questions that draw nothing and counts the app's CPU for those: every update of each of them
carries all PLOTS plots, so what it costs is what Gradio does per plot per update.
"""

from __future__ import annotations

import statistics
import sys
import tempfile
from pathlib import Path

import psutil

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from tests.support.soak_client import QueueSession, fn_index  # noqa: E402
from tests.support.webapp import serve_subprocess  # noqa: E402
from treadwise.agent.strategies import DEFAULT_STRATEGY  # noqa: E402

ROUNDS = 3
PLOTS = 20
TURNS = 12
SHIPPED = "from treadwise.web.gradio_app import serve; serve()"
# The same app with the plots' folder not registered as static: Gradio checks each plot.
CHECKED = ("import treadwise.web.files as files; "
           "files.ShownPlots.serve = lambda self, demo: demo.temp_file_sets.append(self.files); "
           "from treadwise.web.gradio_app import serve; serve()")


def turn_cpu(code: str) -> float:
    """The app's core-seconds per question once the conversation holds PLOTS plots."""
    with tempfile.TemporaryDirectory() as folder, \
            serve_subprocess(Path(folder) / "data", code=code) as app, \
            QueueSession(app.url, fn_index(app.url, "send")) as tab:
        def ask(text: str) -> None:
            tab.call(text, None, "friendly", "offline", "", 0.0, DEFAULT_STRATEGY)

        for n in range(PLOTS):
            ask(f"Calculate the integral of x^2 from 0 to {n % 5 + 1}")
        watched = psutil.Process(app.process.pid)
        before = sum(watched.cpu_times()[:2])
        for _ in range(TURNS):
            ask("What are your opening hours?")
        return (sum(watched.cpu_times()[:2]) - before) / TURNS


def main() -> None:
    shipped: list[float] = []
    checked: list[float] = []
    for _ in range(ROUNDS):
        checked.append(turn_cpu(CHECKED))
        shipped.append(turn_cpu(SHIPPED))
    base, now = statistics.median(checked), statistics.median(shipped)
    print(f"app CPU per turn with {PLOTS} plots shown, median of {ROUNDS} rounds of {TURNS}:")
    print(f"  every plot checked by Gradio (baseline): {base * 1000:.0f} ms  "
          f"{[round(c * 1000) for c in checked]}")
    print(f"  plots in the static folder (shipped):    {now * 1000:.0f} ms  "
          f"{[round(c * 1000) for c in shipped]}")
    print(f"plot_updates: ratio {now / base:.2f}")


if __name__ == "__main__":
    main()
