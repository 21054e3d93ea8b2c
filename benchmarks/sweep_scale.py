"""A 10 000-case offline sweep at concurrency 32: memory stays flat, and the harness adds at
most 20 ms per case to what the same turns cost on bare agents (measured in the same run).

Offline cases are pure CPU (the rule-based model answers at once), so the harness's share
shows directly: the sweep's CPU seconds per case minus the bare agents' for the same mix (CPU
time, because other work on a shared machine moves wall times by more than the difference).
"""

from __future__ import annotations

import os
import resource
import sys
import tempfile
import threading
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

CASES = int(os.environ.get("SWEEP_CASES", 10_000))
REFERENCE = min(CASES, int(os.environ.get("SWEEP_REFERENCE", 2000)))
CONCURRENCY = 32
GOAL_MS = 20.0
CATEGORIES = ["information query", "tire recommendation", "service inquiry",
              "lead collection", "unknown question"]
GRID = """\
name: scale
personas: [friendly, technical, cautious]
models: [offline]
temperatures: [0.0, 0.5, 1.0]
repeats: {repeats}
concurrency: {concurrency}
keep_cases: none
scenarios:
  file: {scenarios}
  categories: [{categories}]
"""


def rss_mb() -> float:
    with open("/proc/self/status") as status:
        for line in status:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    return float("nan")


class Memory:
    """RSS sampled four times a second, with the sweep's progress at each sample."""

    def __init__(self) -> None:
        self.done = 0
        self.samples: list[tuple[int, float]] = []
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def _run(self) -> None:
        while not self._stop.wait(0.25):
            self.samples.append((self.done, rss_mb()))

    def __enter__(self) -> Memory:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join()

    def at(self, fraction: float) -> float:
        wanted = fraction * CASES
        return next((mb for done, mb in self.samples if done >= wanted), float("nan"))


def cpu_s() -> float:
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


def sweep(folder: Path, memory: Memory) -> tuple[float, float, Path]:
    from experiments.define.grid import load_grid
    from experiments.define.scenarios import DEFAULT_SCENARIOS
    from experiments.run.runner import run_sweep

    grid = folder / "grid.yaml"
    grid.write_text(GRID.format(repeats=1, concurrency=CONCURRENCY, scenarios=DEFAULT_SCENARIOS,
                                categories=", ".join(CATEGORIES)))
    per_repeat = len(load_grid(grid).cases())
    grid.write_text(GRID.format(repeats=-(-CASES // per_repeat), concurrency=CONCURRENCY,
                                scenarios=DEFAULT_SCENARIOS, categories=", ".join(CATEGORIES)))

    def progress(update: object) -> None:
        memory.done = update.done

    started, cpu = time.perf_counter(), cpu_s()
    run_dir = run_sweep(grid, out_dir=folder / "results", report=False, limit=CASES,
                        progress=progress, echo=lambda line: None)
    return time.perf_counter() - started, cpu_s() - cpu, run_dir


def bare(folder: Path, run_dir: Path) -> tuple[float, float]:
    """Wall and CPU seconds per case for the first REFERENCE cases' turns on pre-built agents
    with the same threads, no harness."""
    from experiments.define.grid import load_grid
    from experiments.run.cases import case_agent, load_toolsets, tool_context
    from treadwise.settings import Settings

    cases = load_grid(run_dir / "grid.yaml",
                      scenarios_file=run_dir / "scenarios.yaml").cases()[:REFERENCE]
    settings = Settings(data_dir=folder / "bare")
    tools, _ = load_toolsets(tool_context(folder / "bare", settings))
    queue, lock = iter(cases), threading.Lock()

    def work() -> None:
        agent = case_agent(settings, tools)
        while True:
            with lock:
                case = next(queue, None)
            if case is None:
                return
            for message in case.scenario.turns:
                agent.run(message, thread_id=case.thread_id, persona=case.cell.persona,
                          model="offline", temperature=case.cell.temperature, seed=case.seed)
            agent.checkpointer.delete_thread(case.thread_id)

    threads = [threading.Thread(target=work) for _ in range(CONCURRENCY)]
    started, cpu = time.perf_counter(), cpu_s()
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    return (time.perf_counter() - started) / len(cases), (cpu_s() - cpu) / len(cases)


def main() -> None:
    import experiments.run.runner  # noqa: F401 - imports are not what this measures
    import treadwise.tools.math  # noqa: F401
    from experiments.store.results_file import read_rows

    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        os.environ["TREADWISE_DATA_DIR"] = str(folder / "data")
        with Memory() as memory:
            elapsed, cpu, run_dir = sweep(folder, memory)
        transcripts = (run_dir / "transcripts.jsonl").stat().st_size / 1e6
        rows = len(read_rows(run_dir / "results.csv"))
        statuses = {r["status"] for r in read_rows(run_dir / "results.csv")}
        assert statuses == {"ok"}, statuses
        bare_wall, bare_cpu = bare(folder, run_dir)
    overhead_ms = (cpu / rows - bare_cpu) * 1000
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    print(f"sweep_scale: overhead {overhead_ms:.1f} ms per case (goal <= {GOAL_MS:g})")
    print(f"  {rows} offline cases at concurrency {CONCURRENCY}: {elapsed:.1f} s wall, "
          f"{cpu / rows * 1000:.1f} ms CPU and {elapsed / rows * 1000:.1f} ms wall per case; "
          f"the same turns on bare agents (first {REFERENCE} cases): "
          f"{bare_cpu * 1000:.1f} ms CPU and {bare_wall * 1000:.1f} ms wall per case")
    during = max(mb for _, mb in memory.samples)
    print(f"  memory (RSS): {memory.at(0.1):.0f} MB at 10%, {memory.at(0.5):.0f} MB at 50%, "
          f"{memory.at(0.9):.0f} MB at 90%, {memory.samples[-1][1]:.0f} MB at the end; "
          f"peak {during:.0f} MB during the sweep ({peak:.0f} MB for the whole process, "
          "which then reads every row and builds the bare agents)")
    print(f"  transcripts.jsonl: {transcripts:.1f} MB ({transcripts * 1e3 / rows:.2f} kB a case)")
    print(f"  machine: {os.cpu_count()} cores, load average {os.getloadavg()[0]:.1f} at the end")


if __name__ == "__main__":
    main()
