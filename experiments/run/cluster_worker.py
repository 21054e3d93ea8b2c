"""A Dask worker's part in a sweep: the run built once per worker, each batch of cases it is
sent (the cases themselves, never keys into a grid) run on its threads."""

from __future__ import annotations

import socket
import threading
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from distributed import WorkerPlugin, get_worker

from experiments.run.placement import is_local, resource
from experiments.store.record import CaseRecord
from experiments.store.run_store import GRID_COPY, PRICES_COPY, SCENARIOS_COPY

# The runs this worker process has been given, by run id (a worker may serve several clients).
_RUNS: dict[str, SweepOnWorker] = {}


@dataclass(frozen=True)
class RunSpec:
    """What any worker needs to run a sweep's cases: the run's files as text (a worker on
    another machine has no copy of the run folder) and how this attempt runs."""

    run_id: str
    host: str  # the client's machine: a worker there uses the run's own folder
    folder: str
    files: dict[str, str]  # grid.yaml and prices.yaml by name (each task brings its cases)
    cache: str | None
    rate_share: float
    package_version: str
    git_commit: str

    @property
    def plugin_name(self) -> str:
        return f"treadwise-sweep-{self.run_id}"


class SweepOnWorker(WorkerPlugin):
    """Sent once to every worker of the cluster (and to workers that join later). The run is
    built on the first case a worker gets, in one of its threads, and kept for the others:
    models, tools and judge once per worker, a local model loaded once per worker. The cases
    run on a pool of as many threads as the worker has: a batch's cases run side by side, and
    however many batches the scheduler hands one worker, it never runs more cases at once than
    it has threads."""

    def __init__(self, spec: RunSpec):
        self.spec = spec
        self.name = spec.plugin_name
        self._lock = threading.Lock()
        self._built: tuple[Any, Any] | None = None
        self._offers: frozenset[str] = frozenset()
        self._threads = 1
        self._pool: ThreadPoolExecutor | None = None

    def __getstate__(self) -> dict[str, Any]:
        return {"spec": self.spec}

    def __setstate__(self, state: dict[str, Any]) -> None:
        SweepOnWorker.__init__(self, state["spec"])

    def setup(self, worker: Any) -> None:
        self._offers = frozenset(worker.state.total_resources)
        self._threads = max(1, worker.state.nthreads)
        _RUNS[self.spec.run_id] = self

    def teardown(self, worker: Any) -> None:
        if _RUNS.get(self.spec.run_id) is self:
            del _RUNS[self.spec.run_id]
        if self._pool is not None:
            self._pool.shutdown(wait=False, cancel_futures=True)
        if self._built is not None:
            self._built[1].close()

    def build(self) -> tuple[Any, Any]:
        """(case runner, prepared): made by the first case, under a lock."""
        with self._lock:
            if self._built is None:
                self._built = self._build()
            return self._built

    def pool(self) -> ThreadPoolExecutor:
        with self._lock:
            if self._pool is None:
                self._pool = ThreadPoolExecutor(self._threads, thread_name_prefix="case")
            return self._pool

    def _build(self) -> tuple[Any, Any]:
        """The run's models, tools and judge from its grid's settings; the grid's cases are
        never expanded here (each task brings its own)."""
        from experiments.define.grid import load_grid
        from experiments.run.prepare import prepare

        folder = self._folder()
        prices = folder / PRICES_COPY
        # The grid's scenario file is named, never read: the cases come with their scenarios.
        grid = load_grid(folder / GRID_COPY, scenarios_file=folder / SCENARIOS_COPY,
                         prices_file=prices if prices.exists() else None)
        spec = self.spec
        prepared = prepare(grid, folder, cache=Path(spec.cache) if spec.cache else None,
                           rate_share=spec.rate_share)
        for model in grid.models:
            # Loaded now, once for this worker, and only where the worker offers it.
            if is_local(model) and resource(model) in self._offers \
                    and model not in prepared.skipped:
                warm = getattr(prepared.models.build(model, 0.0), "warm", None)
                if warm is not None:
                    warm()
        runner = prepared.runner(grid, folder, package_version=spec.package_version,
                                 git_commit=spec.git_commit)
        return runner, prepared

    def _folder(self) -> Path:
        """The run's own folder on the client's machine; elsewhere one under the worker's
        local directory, holding the run's files and the data dirs of the cases run here."""
        spec = self.spec
        folder = Path(spec.folder)
        if spec.host == socket.gethostname() and (folder / GRID_COPY).is_file():
            return folder
        folder = Path(get_worker().local_directory) / "treadwise-runs" / spec.run_id
        folder.mkdir(parents=True, exist_ok=True)
        for name, text in spec.files.items():
            path = folder / name
            if not path.exists() or path.read_text(encoding="utf-8") != text:
                path.write_text(text, encoding="utf-8")
        return folder


def run_cases(run_id: str, cases: tuple[str, ...]) -> tuple[list[CaseRecord], str]:
    """The Dask task: run a batch of a run's cases (each as define.grid.case_json wrote it) on
    this worker; (their records, this worker). Nothing of a batch is kept until all of it
    comes back, so a batch lost with its worker is simply run again elsewhere."""
    from experiments.define.grid import case_from_json

    worker = get_worker()
    sweep = _RUNS.get(run_id)
    if sweep is None:
        raise RuntimeError(f"worker {worker.address} was not given run {run_id}")
    runner, prepared = sweep.build()

    def run(text: str) -> CaseRecord:
        case = case_from_json(text)
        if (reason := prepared.skipped.get(case.cell.model)) is not None:
            return runner.harness_error(case, f"worker {worker.address} cannot run "
                                              f"{case.cell.model}: {reason}")
        return runner.run(case)

    return list(sweep.pool().map(run, cases)), worker.address
