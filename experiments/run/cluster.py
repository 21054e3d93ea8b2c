"""Cases on a Dask cluster: a scheduler's address (or a LocalCluster started here), the run
handed to every worker once, a task per small batch of cases (the cases themselves, as JSON),
each batch's records streamed back to this client as it finishes."""

from __future__ import annotations

import logging
import socket
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from experiments.define.grid import Case, case_json
from experiments.run.cluster_worker import RunSpec, SweepOnWorker, run_cases
from experiments.run.lanes import GONE, LOST, RECORD, Event
from experiments.run.placement import is_local, resource
from experiments.store.run_store import GRID_COPY, PRICES_COPY

LOCAL = "local"
CONNECT_TIMEOUT_S = 10
CAPACITY_REFRESH_S = 2.0
# Cases a task carries at most. Each task costs the scheduler, a worker's event loop and this
# client a few milliseconds of CPU whatever it runs (benchmarks/cluster_sweep.py), as much as
# a case's own work; a few cases a task share it.
BATCH_MAX = 8
# What Dask does on every worker and scheduler that a sweep does not need: its sampling
# profiler walks every running thread's stack 100 times a second (a tenth of a busy worker's
# CPU at 16 threads), and its event-loop tick (every 20 ms), system monitor (500 ms) and
# memory monitor (100 ms) keep an idle process at 2% of a core. Used for the LocalCluster
# started here and the test clusters; a shared cluster's processes take it from their own
# config or environment (quiet_dask_env, experiments/README.md).
QUIET_DASK: dict[str, Any] = {
    "distributed.worker.profile.enabled": False,
    "distributed.admin.tick.interval": "500ms",
    "distributed.admin.system-monitor.interval": "2s",
    "distributed.worker.memory.monitor-interval": "1s",
}


class ClusterError(ValueError):
    """The cluster cannot be reached, or it went away during the run (one line)."""


@dataclass
class Cluster:
    """A client on a scheduler, and the LocalCluster behind it when this process started one."""

    client: Any
    address: str
    local: Any = None

    def offers(self) -> dict[str, int]:
        """How many workers offer each resource (the local models they can run)."""
        found: dict[str, int] = {}
        for worker in self.client.scheduler_info(n_workers=-1)["workers"].values():
            for name in worker.get("resources") or {}:
                found[name] = found.get(name, 0) + 1
        return found

    def threads(self) -> int:
        return sum(self.client.nthreads().values())

    def workers(self) -> int:
        return len(self.client.nthreads())

    def close(self) -> None:
        self.client.close()
        if self.local is not None:
            self.local.close()


def connect(address: str, *, workers: int, threads: int,
            local_models: list[str] | None = None) -> Cluster:
    """A client on the scheduler at `address`, or (`local`) on a LocalCluster of `workers`
    processes with `threads` each, bound to 127.0.0.1, each offering `local_models`."""
    from distributed import Client, LocalCluster

    # This process says what went wrong in one line (a lost scheduler included); Dask's own
    # tracebacks of reconnecting would bury it. The workers keep their logs.
    # Dask's logging config gives some of its loggers (distributed.client) levels of their own.
    for name in [*logging.root.manager.loggerDict, "distributed"]:
        if name.split(".")[0] == "distributed":
            logging.getLogger(name).setLevel(logging.CRITICAL)
    if address == LOCAL:
        import dask

        with dask.config.set(QUIET_DASK):  # handed on to the worker processes by their nannies
            cluster = LocalCluster(
                n_workers=workers, threads_per_worker=threads, processes=True,
                host="127.0.0.1", scheduler_port=0, dashboard_address=None,
                silence_logs=logging.CRITICAL,
                resources={resource(model): 1 for model in local_models or []} or None)
        return Cluster(Client(cluster), cluster.scheduler_address, cluster)
    try:
        client = Client(address, timeout=CONNECT_TIMEOUT_S)
    except (OSError, TimeoutError, ValueError) as exc:
        raise ClusterError(f"cannot reach the Dask scheduler at {address}: "
                           f"{_first_line(exc)}") from None
    return Cluster(client, address)


def quiet_dask_env() -> dict[str, str]:
    """QUIET_DASK as the environment variables a `dask scheduler` or `dask worker` reads."""
    return {"DASK_" + name.replace(".", "__").replace("-", "_").upper(): str(value)
            for name, value in QUIET_DASK.items()}


def _first_line(exc: BaseException) -> str:
    text = str(exc).strip().splitlines()
    return text[0][:200] if text else type(exc).__name__


def run_spec(run_dir: Path, cache: Path | None, rate_share: float, package_version: str,
             git_commit: str) -> RunSpec:
    files = {name: (run_dir / name).read_text(encoding="utf-8")
             for name in (GRID_COPY, PRICES_COPY) if (run_dir / name).exists()}
    return RunSpec(run_dir.name, socket.gethostname(), str(run_dir.resolve()), files,
                   str(cache) if cache else None, rate_share, package_version, git_commit)


def batch_key(run_id: str, keys: tuple[str, ...]) -> str:
    """A batch's Dask key: its run and its cases (what a worker's task log shows)."""
    return f"cases-{run_id}/" + "+".join(keys)


def batch_cases(task_key: str) -> list[str]:
    """The case keys a batch_key names."""
    return task_key.split("/", 1)[1].split("+") if "/" in task_key else []


@dataclass
class ClusterLane:
    """The lane the runner drives when cases run on a cluster: cases go out in small batches,
    a Dask task each (a local model's cases restricted to the workers offering it), and a
    batch's records are put on the events queue when it comes back. Cases in flight never
    exceed the cluster's threads, batched or not. A worker's death is the scheduler's to
    handle: it runs that worker's batches again elsewhere (nothing of them was kept); a batch
    that killed several workers is split and each case tried alone, so only a case that kills
    workers itself comes back an error."""

    cluster: Cluster
    spec: RunSpec
    events: Any
    in_flight: int = 0
    closing: bool = False  # cancelled by close(), not by a lost scheduler
    placed: dict[str, int] = field(default_factory=dict)  # worker -> cases it ran
    _futures: dict[str, Any] = field(default_factory=dict)
    # resource -> (key, the case as JSON) of the cases waiting for flush()
    _pending: dict[str | None, list[tuple[str, str]]] = field(default_factory=dict)
    _capacity: tuple[float, int, int] = (0.0, 1, 1)  # (checked, threads, batch size)
    _lock: threading.Lock = field(default_factory=threading.Lock)

    def __post_init__(self) -> None:
        self.cluster.client.register_plugin(SweepOnWorker(self.spec),
                                            name=self.spec.plugin_name)

    def capacity(self) -> int:
        """Cases kept in flight: every thread of the cluster's workers (at least one, so a
        run waits for workers rather than ending), refreshed every few seconds."""
        checked, threads, batch = self._capacity
        if time.monotonic() - checked > CAPACITY_REFRESH_S:
            threads = max(1, self.cluster.threads())
            # At least two batches a worker, so the scheduler can share them out.
            batch = max(1, min(BATCH_MAX, threads // max(1, self.cluster.workers()) // 2))
            self._capacity = (time.monotonic(), threads, batch)
        return threads

    def submit(self, case: Case) -> None:
        """Queue a case for the next flush(), with the cases needing the same workers."""
        model = case.cell.model
        self._pending.setdefault(resource(model) if is_local(model) else None,
                                 []).append((case.key, case_json(case)))
        self.in_flight += 1

    def flush(self) -> None:
        """Send the queued cases, a task per batch."""
        batch = self._capacity[2]
        for needs, cases in self._pending.items():
            for at in range(0, len(cases), batch):
                self._send(tuple(cases[at:at + batch]), needs)
        self._pending.clear()

    def _send(self, cases: tuple[tuple[str, str], ...], needs: str | None) -> None:
        """A task carrying these cases (key, JSON); a worker runs them as they are."""
        keys = tuple(key for key, _ in cases)
        key = batch_key(self.spec.run_id, keys)
        future = self.cluster.client.submit(run_cases, self.spec.run_id,
                                            tuple(text for _, text in cases), key=key,
                                            pure=False, resources={needs: 1} if needs else None)
        with self._lock:
            self._futures[key] = future
        future.add_done_callback(lambda done: self._done(cases, needs, done))

    def _done(self, cases: tuple[tuple[str, str], ...], needs: str | None,
              future: Any) -> None:
        """On Dask's callback thread: the records, a lost batch, or the scheduler gone."""
        keys = tuple(key for key, _ in cases)
        with self._lock:
            self._futures.pop(future.key, None)
        if future.status == "cancelled":
            if not self.closing:
                self.events.put(Event(GONE, self, keys=keys,
                                      why=gone_message(self.cluster.address)))
            return
        try:
            records, worker = future.result()
        except Exception as exc:  # noqa: BLE001 - every failure is these cases' error rows
            self._lost(cases, needs, exc)
            return
        with self._lock:
            self.placed[worker] = self.placed.get(worker, 0) + len(records)
        self.events.put(Event(RECORD, self, tuple(records)))

    def _lost(self, cases: tuple[tuple[str, str], ...], needs: str | None,
              exc: BaseException) -> None:
        from distributed import KilledWorker

        if isinstance(exc, KilledWorker) and len(cases) > 1 and not self.closing:
            sent = 0
            try:
                for case in cases:  # which of them kills workers: each case alone
                    self._send((case,), needs)
                    sent += 1
                return
            except Exception as failed:  # noqa: BLE001 - the unsent become error rows
                cases, exc = cases[sent:], failed
        self.events.put(Event(LOST, self, keys=tuple(key for key, _ in cases),
                              why=_lost_why(exc)))

    def close(self, *, wait: bool) -> None:
        """Cancel what is still queued or running (the records that came back are kept),
        and take the run back from the workers."""
        self.closing = True
        self._pending.clear()
        with self._lock:
            left = list(self._futures.values())
        client = self.cluster.client
        if client.status != "running":
            return
        try:
            if left:
                client.cancel(left)
            client.unregister_worker_plugin(self.spec.plugin_name)
        except Exception:  # a scheduler going away now loses nothing kept
            logging.getLogger(__name__).debug("cluster cleanup failed", exc_info=True)


def _lost_why(exc: BaseException) -> str:
    from distributed import KilledWorker

    if isinstance(exc, KilledWorker):
        return ("every Dask worker that ran this case died before finishing it (it was "
                "tried on several)")
    return f"the Dask task failed: {type(exc).__name__}: {_first_line(exc)}"


def gone_message(address: str) -> str:
    return (f"the Dask scheduler at {address} went away; every case that finished is kept: "
            "finish the run with --resume (and --cluster) once a scheduler is up")
