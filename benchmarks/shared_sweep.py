"""shared_sweep: one 300-case run shared by 3 worker processes through PostgreSQL vs 1 worker.

Same run of this script, same throw-away PostgreSQL cluster, same loopback model (in its own
process, 100 ms a reply, two calls a case). Wall time counts from starting the workers until
the last one exits (start-up included), as a user waiting for the run sees it. A plain
file-based sweep of the same grid is timed too, so the cost of claiming cases from the
database shows beside it. On a 2-core machine the three workers share two cores.
"""

from __future__ import annotations

import os
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from benchmarks.sweep_concurrency import SCENARIOS, serve  # noqa: E402
from treadwise.testing.postgres_cluster import start_cluster  # noqa: E402

CASES = 300
CONCURRENCY = 8
GOAL = 0.6
GRID = """\
name: shared-bench
personas: [friendly, technical, cautious]
models: [openai:bench-model]
temperatures: [0.0, 0.5]
repeats: {repeats}
concurrency: {concurrency}
timeout_s: 60
keep_cases: none
scenarios: {{file: scenarios.yaml}}
"""


def run(folder: Path, env: dict[str, str], workers: int, join: str | None
        ) -> tuple[float, float]:
    """(wall seconds, CPU seconds of the workers) of one sweep of the grid."""
    grid = folder / "grid.yaml"
    command = [sys.executable, "-m", "experiments", "run", "--grid", str(grid), "--out",
               str(folder / "results"), "--no-report"]
    if join:
        command += ["--workers-join", join]
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    started = time.perf_counter()
    children = [subprocess.Popen(command, cwd=REPO, env=env, stdout=subprocess.DEVNULL,
                                 stderr=subprocess.PIPE, text=True) for _ in range(workers)]
    for child in children:
        _, err = child.communicate(timeout=600)
        assert child.returncode == 0, err[-2000:]
    wall = time.perf_counter() - started
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return wall, (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


def rows(url: str, run_id: str) -> tuple[int, int]:
    import psycopg

    with psycopg.connect(url) as conn:
        return conn.execute("SELECT count(*), count(DISTINCT case_key) FROM sweep_results "
                            "WHERE run_id = %s AND status = 'ok'", (run_id,)).fetchone()


def main() -> None:
    cluster = start_cluster()
    server, model_url = serve()
    try:
        with tempfile.TemporaryDirectory() as tmp:
            folder = Path(tmp)
            (folder / "grid.yaml").write_text(GRID.format(repeats=CASES // 6,
                                                          concurrency=CONCURRENCY))
            (folder / "scenarios.yaml").write_text(SCENARIOS.format(
                message="What are your opening hours?"))
            url = cluster.database()
            env = {**os.environ, "OPENAI_BASE_URL": model_url + "/v1", "OPENAI_API_KEY": "b",
                   "TREADWISE_DATA_DIR": str(folder / "data"), "TREADWISE_DATABASE_URL": url,
                   "NO_PROXY": "127.0.0.1,localhost", "no_proxy": "127.0.0.1,localhost"}
            plain_env = {k: v for k, v in env.items() if k != "TREADWISE_DATABASE_URL"}
            plain = run(folder, plain_env, 1, None)
            one = run(folder, env, 1, "one-worker")
            three = run(folder, env, 3, "three-workers")
            assert rows(url, "one-worker") == rows(url, "three-workers") == (CASES, CASES)
    finally:
        server.stdin.close()
        server.wait(timeout=30)
        cluster.stop()
    print(f"shared_sweep: ratio {three[0] / one[0]:.2f} (goal <= {GOAL})")
    print(f"  {CASES} cases (2 model calls of 100 ms each), concurrency {CONCURRENCY} per "
          f"worker, wall (CPU of the workers): 3 workers {three[0]:.1f} s ({three[1]:.1f} s), "
          f"1 worker {one[0]:.1f} s ({one[1]:.1f} s), file-based sweep {plain[0]:.1f} s "
          f"({plain[1]:.1f} s)")
    print(f"  machine: {os.cpu_count()} cores, load average {os.getloadavg()[0]:.1f} at the end")


if __name__ == "__main__":
    main()
