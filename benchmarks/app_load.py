"""app_load: 20 concurrent gradio_client sessions x 10 offline turns vs 1 session, same server.

Also times a quick "2+2" from another session while 10 sessions each wait on a slow solve.
With --public the server runs in public mode behind a trusted proxy (TREADWISE_PUBLIC=1,
TREADWISE_TRUSTED_PROXIES=127.0.0.1) and each session comes from its own forwarded address, as
through nginx: every turn goes through the per-session and per-address rate limits (10 turns a
session fit the default 10 a minute), and a "slow down" counts as an error.
"""

from __future__ import annotations

import statistics
import sys
import tempfile
import threading
import time
from pathlib import Path

import httpx

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from gradio_client import Client  # noqa: E402

from tests.support.webapp import loopback_client, mixed_message, serve_subprocess  # noqa: E402

SESSIONS = 20
TURNS = 10
SLOW_SESSIONS = 10
SLOW = "Solve x^13 - x - 1 = 0"  # sympy works on it until the math time limit
QUICK = "What is 2+2?"



PUBLIC = "--public" in sys.argv[1:]
PUBLIC_ENV = {"TREADWISE_PUBLIC": "1", "TREADWISE_TRUSTED_PROXIES": "127.0.0.1"}


def client(url: str, number: int) -> Client:
    """Session `number`'s client; in public mode from its own address, as a proxy forwards it."""
    headers = {"X-Forwarded-For": f"10.0.{number // 250}.{number % 250 + 1}"} if PUBLIC else None
    return loopback_client(url, download_files=False, headers=headers)


def send(session: Client, text: str) -> tuple[float, dict]:
    started = time.perf_counter()
    outputs = session.predict(text, "friendly", "offline", "", 0.0, api_name="/send")
    return time.perf_counter() - started, outputs[-1]


def run_sessions(url: str, count: int, base: int) -> tuple[list[float], float, list[str]]:
    """`count` sessions sending TURNS messages each at once: (latencies, wall s, errors)."""
    sessions = [client(url, base + number) for number in range(count)]
    latencies: list[float] = []
    errors: list[str] = []
    start = threading.Barrier(count + 1)

    def work(number: int) -> None:
        start.wait()
        export = None
        try:
            for turn in range(TURNS):
                seconds, export = send(sessions[number], mixed_message(base + number, turn, "load"))
                latencies.append(seconds)
        except Exception as exc:  # noqa: BLE001 - counted as an error and reported
            errors.append(f"session {number}: {type(exc).__name__}: {exc}"[:300])
            return
        turns = httpx.get(export["value"]["url"], timeout=60).json()["turns"]
        errors.extend(f"session {number}: {t['user']!r} ended {t['status']}: "
                      f"{(t['error'] or {}).get('message', '')}"[:300] for t in turns
                      if t["status"] != "done" or t["error"])

    threads = [threading.Thread(target=work, args=(n,)) for n in range(count)]
    for thread in threads:
        thread.start()
    start.wait()
    began = time.perf_counter()
    for thread in threads:
        thread.join()
    return latencies, time.perf_counter() - began, errors


def p95(values: list[float]) -> float:
    return statistics.quantiles(values, n=20)[-1] if len(values) > 1 else values[0]


def quick_during_slow(url: str) -> float:
    """Seconds a 2+2 takes while SLOW_SESSIONS other sessions each wait on a slow solve."""
    slow = [client(url, 500 + number) for number in range(SLOW_SESSIONS)]
    quick = client(url, 600)
    send(quick, QUICK)  # warm: the quick session's first turn is not what is measured
    jobs = [c.submit(SLOW, "friendly", "offline", "", 0.0, api_name="/send") for c in slow]
    time.sleep(1.0)  # every slow job is in a math worker by now
    seconds, _ = send(quick, QUICK)
    for job in jobs:
        job.result(120)
    return seconds


def main() -> None:
    with tempfile.TemporaryDirectory(prefix="treadwise-load-") as tmp, \
            serve_subprocess(Path(tmp) / "data", env=PUBLIC_ENV if PUBLIC else None) as app:
        run_sessions(app.url, 2, base=900)  # warm-up: agent, math workers, sympy caches
        one, one_wall, one_errors = run_sessions(app.url, 1, base=0)
        many, many_wall, many_errors = run_sessions(app.url, SESSIONS, base=100)
        quick = quick_during_slow(app.url)
    single, crowd = TURNS / one_wall, SESSIONS * TURNS / many_wall
    print(f"1 session: {single:.2f} turns/s, p50 {statistics.median(one):.2f} s, "
          f"p95 {p95(one):.2f} s")
    print(f"{SESSIONS} sessions: {crowd:.2f} turns/s, p50 {statistics.median(many):.2f} s, "
          f"p95 {p95(many):.2f} s")
    for error in (one_errors + many_errors)[:5]:
        print(f"error: {error}")
    name = "app_load_public" if PUBLIC else "app_load"
    print(f"{name} throughput: ratio {crowd / single:.2f} (goal >= 1.8)")
    print(f"{name} p95: ratio {p95(many) / p95(one):.2f} (goal <= 2)")
    print(f"{name} errors: {len(one_errors) + len(many_errors)} (goal 0)")
    print(f"{name} quick_math: 2+2 answered in {quick:.2f} s during {SLOW_SESSIONS} slow "
          "solves (goal <= 0.5)")


if __name__ == "__main__":
    main()
