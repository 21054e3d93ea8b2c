"""Where cases run: threads of this process, and (with `workers: N`) other processes too.

Python runs one thread at a time per process, and an agent turn costs milliseconds of CPU, so
one process tops out near one core however many threads wait on the network. Other processes
each build their own models and tools from the run folder and send every finished case back;
this process stays the only one that writes the run folder. Finished cases, and the news that
a process is ready, arrive on one queue.
"""

from __future__ import annotations

import logging
import multiprocessing
import queue
import threading
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from experiments.define.grid import Case, load_grid
from experiments.store.record import CaseRecord

log = logging.getLogger(__name__)
READY, RECORD, LOST = "ready", "record", "lost"


@dataclass(frozen=True)
class Event:
    kind: str
    lane: Any
    record: CaseRecord | None = None
    keys: tuple[str, ...] = ()


class LocalLane:
    """Cases run on this process's threads."""

    def __init__(self, runner: Any, threads: int, events: queue.SimpleQueue):
        self.runner = runner
        self.events = events
        self.in_flight = 0
        self.ready = True
        self._pool = ThreadPoolExecutor(max_workers=threads, thread_name_prefix="case")

    def submit(self, case: Case) -> None:
        self.in_flight += 1
        self._pool.submit(self._run, case)

    def _run(self, case: Case) -> None:
        self.events.put(Event(RECORD, self, self.runner.run(case)))

    def close(self, *, wait: bool) -> None:
        self._pool.shutdown(wait=wait, cancel_futures=True)


@dataclass(frozen=True)
class WorkerSpec:
    """What another process needs to run this sweep's cases (all of it is in the run folder)."""

    run_dir: Path
    grid_file: Path
    scenarios_file: Path
    prices_file: Path | None
    cache: Path | None
    rate_share: float
    threads: int
    package_version: str
    git_commit: str


def _serve(spec: WorkerSpec, tasks: Any, results: Any) -> None:
    """The other process: build once, then run each case key it is sent until told to stop."""
    from experiments.run.prepare import prepare

    grid = load_grid(spec.grid_file, scenarios_file=spec.scenarios_file,
                     prices_file=spec.prices_file)
    prepared = prepare(grid, spec.run_dir, cache=spec.cache, rate_share=spec.rate_share)
    runner = prepared.runner(grid, spec.run_dir, package_version=spec.package_version,
                             git_commit=spec.git_commit)
    cases = {case.key: case for case in grid.cases()}
    results.put((READY, None, None))

    def run(key: str) -> None:
        record = runner.run(cases[key])
        results.put((RECORD, record.row, record.transcript))

    with ThreadPoolExecutor(max_workers=spec.threads, thread_name_prefix="case") as pool:
        while (key := tasks.get()) is not None:
            pool.submit(run, key)
    prepared.close()


def _context() -> Any:
    # fork starts at once (the modules are already imported) but copies whatever other
    # threads hold; with other threads about (a web server) a clean forkserver is safer.
    method = "fork" if threading.active_count() == 1 else "forkserver"
    return multiprocessing.get_context(method)


class ProcessLane:
    """Cases run in one other process; a reader thread forwards what it sends back."""

    def __init__(self, spec: WorkerSpec, events: queue.SimpleQueue, context: Any):
        self.events = events
        self.in_flight = 0
        self.ready = False
        self.sent: dict[str, None] = {}
        self._tasks, self._results = context.Queue(), context.Queue()
        self.process = context.Process(target=_serve, args=(spec, self._tasks, self._results),
                                       name="treadwise-sweep-worker", daemon=True)
        self.process.start()

    def listen(self) -> None:
        """Start forwarding what the process sends (after every process has been started)."""
        threading.Thread(target=self._read, name="sweep-worker-reader", daemon=True).start()

    def submit(self, case: Case) -> None:
        self.in_flight += 1
        self.sent[case.key] = None
        self._tasks.put(case.key)

    def _read(self) -> None:
        while True:
            try:
                kind, row, transcript = self._results.get(timeout=0.5)
            except queue.Empty:
                if not self.process.is_alive():
                    # Whatever it was running is lost: the coordinator records those as errors.
                    self.events.put(Event(LOST, self, keys=tuple(self.sent)))
                    return
                continue
            if kind == READY:
                self.events.put(Event(READY, self))
            else:
                self.sent.pop(row.case_key, None)
                self.events.put(Event(RECORD, self, CaseRecord(row, transcript)))

    def close(self, *, wait: bool) -> None:
        if wait and self.process.is_alive():
            self._tasks.put(None)
            self.process.join(timeout=60)
        if self.process.is_alive():
            self.process.terminate()
            self.process.join(timeout=10)


def start_lanes(runner: Any, concurrency: int, spec: WorkerSpec | None, workers: int,
                events: queue.SimpleQueue) -> list[Any]:
    """The other processes first (forked before this process starts any thread), then this
    process's own threads, which run every case until the others are ready."""
    lanes: list[Any] = []
    if spec is not None and workers > 1:
        context = _context()
        lanes = [ProcessLane(spec, events, context) for _ in range(workers - 1)]
        for lane in lanes:
            lane.listen()
    return [*lanes, LocalLane(runner, concurrency, events)]
