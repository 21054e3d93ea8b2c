"""Does /login answer an unknown user name faster than a wrong password? Median answer times,
interleaved, for TreadWise's sign-in and for Gradio's own login route (the baseline).

The throttle is turned off for the run (its first wait set to 0), or wrong passwords would be
answered 429 after a few tries; each try comes from its own forwarded address."""

from __future__ import annotations

import dataclasses
import statistics
import sys
import tempfile
import time
from pathlib import Path

import httpx

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from tests.support.webapp import serve_in_process  # noqa: E402
from treadwise.settings import Settings  # noqa: E402
from treadwise.web import login_throttle  # noqa: E402

ROUNDS = 400
USERS = "ana:a-long-password-of-ana,bob:a-long-password-of-bob"


def medians(url: str) -> tuple[float, float]:
    """(median seconds for an unknown name, for a known name with a wrong password)."""
    times: dict[str, list[float]] = {"unknown": [], "wrong": []}
    with httpx.Client(timeout=60) as client:
        for n in range(ROUNDS):
            for kind, user in (("unknown", f"nobody{n}"), ("wrong", "bob"))[::1 - 2 * (n % 2)]:
                data = {"username": user, "password": f"a-long-password-of-x{n}"}
                started = time.perf_counter()
                answer = client.post(f"{url}login", data=data,
                                     headers={"X-Forwarded-For": f"10.{n // 250}.{n % 250}.1"})
                times[kind].append(time.perf_counter() - started)
                assert answer.status_code == 400, answer.text
    return statistics.median(times["unknown"]), statistics.median(times["wrong"])


def main() -> None:
    login_throttle.FIRST_WAIT_S = 0.0
    env = {"TREADWISE_PUBLIC": "1", "TREADWISE_AUTH": USERS, "TREADWISE_TRUSTED_PROXIES":
           "127.0.0.1"}
    with tempfile.TemporaryDirectory() as folder:
        settings = dataclasses.replace(Settings.from_env(env), data_dir=Path(folder) / "data")
        with serve_in_process(settings) as url:
            ours = medians(url)
        # Gradio's own /login: the same app without the middleware in front of it.
        with serve_in_process(settings, app_kwargs={}) as url:
            theirs = medians(url)
    for name, (unknown, wrong) in (("gradio_login_timing", theirs), ("login_timing", ours)):
        print(f"{name}: unknown {unknown * 1000:.3f} ms, wrong password {wrong * 1000:.3f} ms, "
              f"ratio {unknown / wrong:.3f} (goal 0.95..1.05)")


if __name__ == "__main__":
    main()
