"""Cases on a Dask cluster: a scheduler's address (or a LocalCluster started here), the run
handed to every worker once, one task per case, each record streamed back to this client."""

from __future__ import annotations

import logging
import socket
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from experiments.define.grid import Case
from experiments.run.cluster_worker import RunSpec, SweepOnWorker, is_local, resource, run_case
from experiments.run.lanes import GONE, LOST, RECORD, Event
from experiments.store.run_store import GRID_COPY, PRICES_COPY, SCENARIOS_COPY

LOCAL = "local"
CONNECT_TIMEOUT_S = 10
CAPACITY_REFRESH_S = 2.0


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
        cluster = LocalCluster(
            n_workers=workers, threads_per_worker=threads, processes=True, host="127.0.0.1",
            scheduler_port=0, dashboard_address=None, silence_logs=logging.CRITICAL,
            resources={resource(model): 1 for model in local_models or []} or None)
        return Cluster(Client(cluster), cluster.scheduler_address, cluster)
    try:
        client = Client(address, timeout=CONNECT_TIMEOUT_S)
    except (OSError, TimeoutError, ValueError) as exc:
        raise ClusterError(f"cannot reach the Dask scheduler at {address}: "
                           f"{_first_line(exc)}") from None
    return Cluster(client, address)


def _first_line(exc: BaseException) -> str:
    text = str(exc).strip().splitlines()
    return text[0][:200] if text else type(exc).__name__


def run_spec(run_dir: Path, cache: Path | None, rate_share: float, package_version: str,
             git_commit: str) -> RunSpec:
    files = {name: (run_dir / name).read_text(encoding="utf-8")
             for name in (GRID_COPY, SCENARIOS_COPY, PRICES_COPY) if (run_dir / name).exists()}
    return RunSpec(run_dir.name, socket.gethostname(), str(run_dir.resolve()), files,
                   str(cache) if cache else None, rate_share, package_version, git_commit)


@dataclass
class ClusterLane:
    """The lane the runner drives when cases run on a cluster: each case a Dask task (a local
    model's case restricted to the workers offering it), its record put on the events queue
    when it comes back. A worker's death is the scheduler's to handle: it runs that worker's
    cases again elsewhere, and only a case that killed several workers comes back an error."""

    cluster: Cluster
    spec: RunSpec
    events: Any
    in_flight: int = 0
    closing: bool = False  # cancelled by close(), not by a lost scheduler
    placed: dict[str, int] = field(default_factory=dict)  # worker -> cases it ran
    _futures: dict[str, Any] = field(default_factory=dict)
    _capacity: tuple[float, int] = (0.0, 1)
    _lock: threading.Lock = field(default_factory=threading.Lock)

    def __post_init__(self) -> None:
        self.cluster.client.register_plugin(SweepOnWorker(self.spec),
                                            name=self.spec.plugin_name)

    def capacity(self) -> int:
        """Cases kept in flight: every thread of the cluster's workers (at least one, so a
        run waits for workers rather than ending), refreshed every few seconds."""
        checked, threads = self._capacity
        if time.monotonic() - checked > CAPACITY_REFRESH_S:
            threads = max(1, self.cluster.threads())
            self._capacity = (time.monotonic(), threads)
        return threads

    def submit(self, case: Case) -> None:
        model = case.cell.model
        future = self.cluster.client.submit(
            run_case, self.spec.run_id, case.key, key=f"case-{self.spec.run_id}-{case.key}",
            pure=False, resources={resource(model): 1} if is_local(model) else None)
        self.in_flight += 1
        with self._lock:
            self._futures[case.key] = future
        future.add_done_callback(lambda done, key=case.key: self._done(key, done))

    def _done(self, key: str, future: Any) -> None:
        """On Dask's callback thread: the record, a lost case, or the scheduler gone."""
        with self._lock:
            self._futures.pop(key, None)
        if future.status == "cancelled":
            if self.closing:
                return
            self.events.put(Event(GONE, self, keys=(key,),
                                  why=gone_message(self.cluster.address)))
            return
        try:
            record, worker = future.result()
        except Exception as exc:  # noqa: BLE001 - every failure is this case's error row
            self.events.put(Event(LOST, self, keys=(key,), why=_lost(exc)))
            return
        with self._lock:
            self.placed[worker] = self.placed.get(worker, 0) + 1
        self.events.put(Event(RECORD, self, record))

    def close(self, *, wait: bool) -> None:
        """Cancel what is still queued or running (the records that came back are kept),
        and take the run back from the workers."""
        self.closing = True
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


def _lost(exc: BaseException) -> str:
    from distributed import KilledWorker

    if isinstance(exc, KilledWorker):
        return ("every Dask worker that ran this case died before finishing it (it was "
                "tried on several)")
    return f"the Dask task failed: {type(exc).__name__}: {_first_line(exc)}"


def gone_message(address: str) -> str:
    return (f"the Dask scheduler at {address} went away; every case that finished is kept: "
            "finish the run with --resume (and --cluster) once a scheduler is up")
