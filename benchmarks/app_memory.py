"""Resident memory of the running app after 100 offline turns vs after its first turn."""

from __future__ import annotations

import sys
import tempfile
from pathlib import Path

import psutil
from gradio_client import Client

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from tests.support.webapp import loopback_client, serve_subprocess  # noqa: E402

TURNS = 100
SESSIONS = 10
# The first turn takes the heaviest path (calculus and a plot), so what is measured after it
# is the app fully warmed, and growth after it is what the turns themselves keep.
MESSAGES = [
    "Calculate the integral of x\u00b2 from 0 to 3",
    "Add 5 and 4, then square the result",
    "Which tires do you recommend for an SUV I mostly drive on the highway?",
    "Do you offer mobile tire installation in Austin?",
    "I'm Ana Silva and I'd like a fleet quote. Please contact me at ana@example.com",
    "What are your opening hours on Saturday?",
]


def rss_mb(process: psutil.Process) -> tuple[float, float]:
    """(the app process alone, its child processes together), in MB."""
    children = sum(c.memory_info().rss for c in process.children(recursive=True))
    return process.memory_info().rss / 2**20, children / 2**20


def turn(client: Client, number: int) -> None:
    message = MESSAGES[number % len(MESSAGES)]
    client.predict(message, "friendly", "offline", "", 0.0, api_name="/send")


def main() -> None:
    with tempfile.TemporaryDirectory(prefix="treadwise-bench-") as tmp, \
            serve_subprocess(Path(tmp) / "data", env={"GRADIO_ANALYTICS_ENABLED": "False"},
                             timeout_s=180) as running:
        app = psutil.Process(running.process.pid)
        clients = [loopback_client(running.url, download_files=False)
                   for _ in range(SESSIONS)]
        turn(clients[0], 0)
        first, first_children = rss_mb(app)
        for number in range(1, TURNS):
            turn(clients[number % SESSIONS], number)
        last, last_children = rss_mb(app)
    print(f"app process RSS (children excluded): {first:.0f} MB after 1 turn, "
          f"{last:.0f} MB after {TURNS} turns in {SESSIONS} sessions")
    print(f"child processes (math workers) RSS: {first_children:.0f} MB after 1 turn, "
          f"{last_children:.0f} MB after {TURNS} turns")
    print(f"app_memory: ratio {last / first:.2f} (goal <= 1.2)")


if __name__ == "__main__":
    main()
