"""cluster_sweep: CPU per case of a sweep on a Dask cluster of 2 workers vs the same run in one
process (the engine's overhead), 1 000 cases against a 200 ms loopback model, 2 calls each.

The scheduler and both workers are real `dask` processes bound to 127.0.0.1 (a socket watch
fails the run if anything leaves loopback), configured as `--cluster local` starts its own
(experiments.run.cluster.QUIET_DASK: no sampling profiler, slower ticks); the model server is
its own process and its CPU is counted nowhere. The cluster stands before the run, as a shared
cluster does, and is warmed by a small run first (workers import the harness once in their
life, not per run); the measured run's CPU is the client's whole life plus what the scheduler
and workers used while it ran. The one-process run is a fresh `python -m experiments run`, its
whole life counted.
CLUSTER_CASES=120 gives quick (noisier) settings.
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
from tests.support.dask_cluster import ConnectionWatch, LoopbackCluster  # noqa: E402

CASES = int(os.environ.get("CLUSTER_CASES", 1000))
THREADS = 16  # the grid's concurrency: each worker's threads, and the one process's
WARM_CASES = 20
GOAL = 1.15
GRID = """\
name: cluster-bench
personas: [friendly]
models: [openai:bench-model]
temperatures: [0.0]
repeats: {repeats}
concurrency: {threads}
timeout_s: 60
keep_cases: none
scenarios: {{file: scenarios.yaml}}
"""
# The commit that moved sweeps onto Dask, by its subject: the closing note's lines of code.
DASK_COMMIT = "Sweeps on Dask:"
QUEUE_PATHS = ["experiments", "treadwise/storage/migrations.py", "benchmarks/shared_sweep.py",
               "tests/test_experiments_shared.py"]


def grid(folder: Path, repeats: int) -> Path:
    path = folder / f"grid-{repeats}.yaml"
    path.write_text(GRID.format(repeats=repeats, threads=THREADS))
    return path


def children_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def cpu_of(pids: list[int]) -> float:
    import psutil

    total = 0.0
    for pid in pids:
        times = psutil.Process(pid).cpu_times()
        total += times.user + times.system
    return total


def run(folder: Path, env: dict[str, str], grid_file: Path, *more: str) -> float:
    """CPU seconds of one `experiments run` process, its whole life; every case must pass."""
    from experiments.store.results_file import read_rows

    out = folder / f"out-{time.monotonic_ns()}"
    before = children_cpu()
    done = subprocess.run([sys.executable, "-m", "experiments", "run", "--grid", str(grid_file),
                           "--out", str(out), "--no-report", *more], cwd=REPO, env=env,
                          capture_output=True, text=True, timeout=1800, check=False)
    cpu = children_cpu() - before
    assert done.returncode == 0, done.stderr[-2000:]
    (results,) = out.glob("*/results.csv")
    rows = read_rows(results)
    assert len({r["case_key"] for r in rows}) == len(rows) and all(
        r["status"] == "ok" for r in rows), "a case failed or appeared twice"
    return cpu


def lines_changed() -> str:
    """Lines removed vs added by the move to Dask (its commit against its parent)."""
    try:
        commit = subprocess.run(["git", "log", "--format=%H", "-1", "--grep", DASK_COMMIT],
                                cwd=REPO, capture_output=True, text=True, check=True
                                ).stdout.strip()
        stat = subprocess.run(["git", "diff", "--numstat", f"{commit}^", commit, "--",
                               *QUEUE_PATHS], cwd=REPO, capture_output=True, text=True,
                              check=True).stdout
    except (OSError, subprocess.CalledProcessError):
        return "lines of code: no git history here"
    added = removed = 0
    for line in stat.splitlines():
        plus, minus, _ = line.split("\t", 2)
        added, removed = added + int(plus), removed + int(minus)
    if not commit:
        return "lines of code: the Dask commit is not in this history"
    return (f"lines of code: {removed} removed, {added} added by the commit that moved sweeps "
            "onto Dask (claim queue, worker processes, their test and benchmark out; the Dask "
            "lane and the runner's changes in; the cluster tests came later)")


def main() -> None:
    server, model_url = serve()
    try:
        with tempfile.TemporaryDirectory() as tmp:
            folder = Path(tmp)
            (folder / "scenarios.yaml").write_text(SCENARIOS.format(
                message="What are your opening hours?"))
            env = {**os.environ, "OPENAI_BASE_URL": model_url + "/v1", "OPENAI_API_KEY": "b",
                   "TREADWISE_DATA_DIR": str(folder / "data"), "PYTHONPATH": str(REPO),
                   "NO_PROXY": "127.0.0.1,localhost", "no_proxy": "127.0.0.1,localhost"}
            env.pop("TREADWISE_DATABASE_URL", None)
            env.pop("DASK_SCHEDULER_ADDRESS", None)
            measured = grid(folder, CASES)
            with ConnectionWatch(lambda: [os.getpid()], every_s=0.5) as watch:
                one = run(folder, env, measured)
                with LoopbackCluster(folder / "dask", env) as cluster:
                    cluster.start({"w1": {"nthreads": THREADS}, "w2": {"nthreads": THREADS}})
                    started = time.perf_counter()
                    run(folder, env, grid(folder, WARM_CASES), "--cluster", cluster.address)
                    warm_s = time.perf_counter() - started
                    pids = cluster.pids()
                    before = cpu_of(pids)
                    client = run(folder, env, measured, "--cluster", cluster.address)
                    engine = cpu_of(pids) - before
            assert watch.samples > 0 and watch.found == [], watch.found[:3]
    finally:
        server.stdin.close()
        server.wait(timeout=30)
    ratio = (client + engine) / one
    print(f"cluster_sweep: ratio {ratio:.2f} (goal <= {GOAL})")
    print(f"  {CASES} cases (2 calls of a 200 ms loopback model each), concurrency {THREADS}: "
          f"CPU per case {1000 * (client + engine) / CASES:.1f} ms on 2 Dask workers "
          f"(client {client:.1f} s, scheduler + workers {engine:.1f} s) vs "
          f"{1000 * one / CASES:.1f} ms in one process ({one:.1f} s); warm-up run "
          f"{warm_s:.1f} s")
    print(f"  machine: {os.cpu_count()} cores, load average {os.getloadavg()[0]:.1f} at the end;"
          " no socket left 127.0.0.1")
    print(f"  {lines_changed()}")


if __name__ == "__main__":
    main()
