"""replicas: 20 concurrent gradio_client sessions x 10 offline turns on two app replicas vs one.

Both set-ups run in the same run on one throw-away PostgreSQL cluster (memory, leads and plots
in the database), so the ratio measures what a second replica adds. The load is app_load's:
chained arithmetic, an integral with its plot, a lead, a business question. On a 2-core machine
the two replicas compete for the same cores as the clients and the database.
"""

from __future__ import annotations

import argparse
import os
import resource
import statistics
import sys
import tempfile
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from contextlib import ExitStack
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

import httpx  # noqa: E402

from benchmarks.app_load import client, p95  # noqa: E402
from tests.support.postgres_cluster import start_cluster  # noqa: E402
from tests.support.webapp import mixed_message, serve_subprocess  # noqa: E402

SESSIONS = 20
TURNS = 10


def machine_cpu() -> tuple[float, float]:
    """(busy, total) seconds of all cores since boot, from /proc/stat."""
    fields = [int(v) for v in Path("/proc/stat").read_text().split("\n")[0].split()[1:]]
    ticks = os.sysconf("SC_CLK_TCK")
    idle = fields[3] + fields[4]  # idle and iowait
    return (sum(fields) - idle) / ticks, sum(fields) / ticks


def own_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


def run_sessions(urls: list[str], sessions: int, turns: int, base: int
                 ) -> tuple[list[float], float, list[str], tuple[float, float]]:
    """`sessions` clients, spread round-robin over `urls`, each sending `turns` messages at
    once: (latencies, wall seconds, errors, (share of the machine's cores busy, share of them
    used by this process's clients))."""
    clients = [client(urls[n % len(urls)]) for n in range(sessions)]
    latencies: list[float] = []
    errors: list[str] = []
    start = threading.Barrier(sessions + 1)

    def work(number: int) -> None:
        start.wait()
        outputs = None
        for turn in range(turns):
            began = time.perf_counter()
            try:
                text = mixed_message(base + number, turn, "load")
                outputs = clients[number].predict(text, "friendly", "offline", "", 0.0,
                                                  api_name="/send")
            except Exception as exc:  # noqa: BLE001 - counted as an error and reported
                errors.append(f"session {number}: {type(exc).__name__}: {exc}"[:300])
                return
            latencies.append(time.perf_counter() - began)
        # The session's JSON export says how every turn ended.
        exported = httpx.get(outputs[-1]["value"]["url"], timeout=60).json()["turns"]
        errors.extend(f"session {number}: {t['user']!r} ended {t['status']}" for t in exported
                      if t["status"] != "done" or t["error"])

    threads = [threading.Thread(target=work, args=(n,)) for n in range(sessions)]
    for thread in threads:
        thread.start()
    start.wait()
    began, (busy0, total0), own0 = time.perf_counter(), machine_cpu(), own_cpu()
    for thread in threads:
        thread.join()
    (busy1, total1), own1 = machine_cpu(), own_cpu()
    shares = ((busy1 - busy0) / (total1 - total0), (own1 - own0) / (total1 - total0))
    return latencies, time.perf_counter() - began, errors, shares


def start_replicas(stack: ExitStack, tmp: Path, url: str) -> list[str]:
    servers = []
    for name in ("a", "b"):
        (tmp / name).mkdir()
        servers.append(serve_subprocess(tmp / name / "data",
                                        env={"TREADWISE_DATABASE_URL": url}))
    with ThreadPoolExecutor(2) as pool:
        apps = list(pool.map(lambda server: server.__enter__(), servers))
    for server in servers:
        stack.push(server.__exit__)
    return [app.url for app in apps]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sessions", type=int, default=SESSIONS)
    parser.add_argument("--turns", type=int, default=TURNS)
    parser.add_argument("--rounds", type=int, default=2, help="runs of each set-up")
    args = parser.parse_args()
    cluster = start_cluster()
    try:
        with tempfile.TemporaryDirectory(prefix="treadwise-replicas-") as tmp, \
                ExitStack() as stack:
            urls = start_replicas(stack, Path(tmp), cluster.database())
            run_sessions(urls, 4, 2, base=900)  # warm-up: agents, math workers, pools
            setups = {"1 replica": urls[:1], "2 replicas": urls}
            # A B B A ...: a machine getting busier or quieter weighs on both set-ups alike.
            order = [name for r in range(args.rounds)
                     for name in (list(setups) if r % 2 == 0 else list(setups)[::-1])]
            results: dict[str, list] = {name: [] for name in setups}
            for n, name in enumerate(order):
                results[name].append(run_sessions(setups[name], args.sessions, args.turns,
                                                  base=1000 * (n + 1)))
    finally:
        cluster.stop()
    rates = {}
    for name, runs in results.items():
        rates[name] = statistics.median(len(lat) / wall for lat, wall, _, _ in runs)
        latencies = [value for lat, _, _, _ in runs for value in lat]
        errors = [error for _, _, errs, _ in runs for error in errs]
        busy = statistics.mean(shares[0] for *_, shares in runs)
        clients = statistics.mean(shares[1] for *_, shares in runs)
        print(f"{name}: {rates[name]:.2f} turns/s (median of {len(runs)}), p50 "
              f"{statistics.median(latencies):.2f} s, p95 {p95(latencies):.2f} s, "
              f"{len(errors)} errors; the {os.cpu_count()} cores {busy:.0%} busy, "
              f"{clients:.0%} of them on the load's own clients")
        for error in errors[:3]:
            print(f"  error: {error}")
    print(f"replicas: ratio {rates['2 replicas'] / rates['1 replica']:.2f} (goal >= 1.6)")


if __name__ == "__main__":
    main()
