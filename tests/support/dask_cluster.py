"""A real Dask scheduler and workers on 127.0.0.1 for tests and benchmarks, and what they watch:
the tasks each worker started, the llama.cpp engines it loaded, every socket the processes hold."""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Container
from pathlib import Path
from typing import Any

import psutil
from distributed import WorkerPlugin

from experiments.run.cluster import batch_cases, quiet_dask_env
from treadwise.settings import child_environment

LOOPBACK = ("127.0.0.1", "::1", "::ffff:127.0.0.1")
START_TIMEOUT_S = 120


class LoopbackCluster:
    """A `dask scheduler` and `dask worker` processes bound to 127.0.0.1, their HTTP endpoints
    too (`--no-dashboard` alone still serves /health on every interface), workers without a
    nanny so a killed one stays dead; `stop()` ends every process it started."""

    def __init__(self, folder: Path, env: dict[str, str] | None = None):
        self.folder = Path(folder)
        self.folder.mkdir(parents=True, exist_ok=True)
        # Dask configured as a sweep's LocalCluster is (no sampling profiler, slower ticks).
        self.env = child_environment(**{**quiet_dask_env(), **(env or {})})
        self.scheduler: subprocess.Popen | None = None
        self.workers: dict[str, subprocess.Popen] = {}
        self.address = ""
        self._client: Any = None

    def start(self, workers: dict[str, dict[str, Any]]) -> LoopbackCluster:
        """The scheduler, then a worker per name ({"nthreads": 4, "resources": "x=1"})."""
        info = self.folder / "scheduler.json"
        info.unlink(missing_ok=True)
        self.scheduler = self._spawn("scheduler", [
            "distributed.cli.dask_scheduler", "--host", "127.0.0.1", "--port", "0",
            "--no-dashboard", "--dashboard-address", "127.0.0.1:0",
            "--scheduler-file", str(info)])
        deadline = time.monotonic() + START_TIMEOUT_S
        while not self.address:
            if self.scheduler.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError(f"the scheduler did not start: {self._log('scheduler')}")
            try:
                self.address = json.loads(info.read_text())["address"]
            except (OSError, ValueError, KeyError):
                time.sleep(0.05)
        for name, options in workers.items():
            self.add_worker(name, **options)
        self.client().wait_for_workers(len(workers), timeout=START_TIMEOUT_S)
        return self

    def add_worker(self, name: str, nthreads: int = 4, resources: str = "") -> None:
        args = ["distributed.cli.dask_worker", self.address, "--host", "127.0.0.1",
                "--nthreads", str(nthreads), "--no-nanny", "--no-dashboard",
                "--dashboard-address", "127.0.0.1:0", "--name", name,
                "--local-directory", str(self.folder / name)]
        self.workers[name] = self._spawn(name, args + (["--resources", resources]
                                                       if resources else []))

    def _spawn(self, name: str, args: list[str]) -> subprocess.Popen:
        log = (self.folder / f"{name}.log").open("ab")
        return subprocess.Popen([sys.executable, "-m", *args], env=self.env, stdout=log,
                                stderr=subprocess.STDOUT, cwd=self.folder)

    def _log(self, name: str) -> str:
        path = self.folder / f"{name}.log"
        return path.read_text(errors="replace")[-2000:] if path.exists() else ""

    def client(self) -> Any:
        from distributed import Client

        if self._client is None:
            self._client = Client(self.address, timeout=START_TIMEOUT_S)
        return self._client

    def kill(self, name: str) -> None:
        """SIGKILL a worker (or "scheduler"): no goodbye to anyone."""
        process = self.scheduler if name == "scheduler" else self.workers[name]
        assert process is not None
        process.send_signal(signal.SIGKILL)
        process.wait(timeout=30)

    def pids(self) -> list[int]:
        return [p.pid for p in (self.scheduler, *self.workers.values())
                if p is not None and p.poll() is None]

    def stop(self) -> None:
        """The workers first, while their scheduler can still take their goodbye (a worker
        whose scheduler has gone retries it for Dask's 30 s connect timeout before it exits,
        so one is killed outright then), and the scheduler last."""
        if self._client is not None:
            self._client.close()
            self._client = None
        scheduler = self.scheduler if self.scheduler and self.scheduler.poll() is None else None
        workers = [p for p in self.workers.values() if p.poll() is None]
        for process in workers:
            if scheduler is None:
                process.kill()
            else:
                process.terminate()
        for process in workers:
            _wait_or_kill(process)
        if scheduler is not None:
            scheduler.terminate()
            _wait_or_kill(scheduler)
        # A later start() reads its new scheduler's address and starts its own workers.
        self.scheduler, self.workers, self.address = None, {}, ""

    def __enter__(self) -> LoopbackCluster:
        return self

    def __exit__(self, *exc: Any) -> None:
        self.stop()


def _wait_or_kill(process: subprocess.Popen) -> None:
    try:
        process.wait(timeout=30)
    except subprocess.TimeoutExpired:
        process.kill()
        process.wait(timeout=30)


class TaskLog(WorkerPlugin):
    """A worker plugin that writes each task key a worker starts to FOLDER/<worker name>.log
    (register it with `client.register_plugin`): where every task really ran."""

    name = "treadwise-task-log"

    def __init__(self, folder: str):
        self.folder = folder
        self.path = ""

    def setup(self, worker: Any) -> None:
        self.path = str(Path(self.folder) / f"{worker.name}.log")

    def teardown(self, worker: Any) -> None:
        """Nothing held open: each key is appended and closed."""

    def transition(self, key: Any, start: str, finish: str, **kwargs: Any) -> None:
        if finish == "executing":
            with open(self.path, "a", encoding="utf-8") as handle:
                handle.write(f"{key}\n")


def started_tasks(folder: Path) -> dict[str, list[str]]:
    """What a TaskLog wrote: worker name -> the task keys it started, in order."""
    return {path.stem: path.read_text(encoding="utf-8").split()
            for path in Path(folder).glob("*.log")}


def started_cases(folder: Path) -> dict[str, list[str]]:
    """The case keys of the tasks a TaskLog saw started: worker name -> cases, in order."""
    return {name: [case for task in tasks for case in batch_cases(task)]
            for name, tasks in started_tasks(folder).items()}


def loaded_engines() -> int:
    """Run on a worker (client.run): how many llama.cpp models its process has loaded."""
    from treadwise.models import llamacpp

    return len(llamacpp._engines)


# /proc/net's TCP states (include/net/tcp_states.h), for saying what a found socket was doing.
TCP_STATES = {"01": "ESTABLISHED", "02": "SYN_SENT", "03": "SYN_RECV", "04": "FIN_WAIT1",
              "05": "FIN_WAIT2", "06": "TIME_WAIT", "07": "CLOSE", "08": "CLOSE_WAIT",
              "09": "LAST_ACK", "0A": "LISTEN", "0B": "CLOSING"}
TABLES = ("tcp", "tcp6", "udp", "udp6")
FIXED_STATES = ("01", "0A")  # ESTABLISHED, LISTEN: a TCP socket's ends no longer change


def foreign_connections(pids: list[int], settled: set[str] | None = None) -> list[str]:
    """Every socket of these processes (and their children) bound or connected to an address
    other than loopback, as text: what a loopback-only test must never see.

    The sockets' inodes come from each process's fd folder and the kernel's socket tables are
    read once for all of them: psutil's per-process call reads every table again for each
    process, which took a third of a core at ten samples a second with a cluster running.
    `settled`, when given, collects the TCP sockets seen on loopback with their ends fixed; the
    tables (the kernel lists every socket of the machine) are read only while one is not."""
    owners: dict[str, int] = {}
    for pid in pids:
        try:
            root = psutil.Process(pid)
            processes = [root, *root.children(recursive=True)]
        except psutil.NoSuchProcess:
            continue
        for process in processes:
            owners.update(dict.fromkeys(_socket_inodes(process.pid), process.pid))
    if settled is None:
        settled = set()
    if owners.keys() <= settled:
        return []
    found = []
    for table in TABLES:
        for local, remote, state, inode in _table(pids[0], table, owners):
            ends = [local] + ([remote] if remote[1] else [])
            tcp = table.startswith("tcp")
            if any(ip not in LOOPBACK for ip, _ in ends):
                status = TCP_STATES.get(state, state) if tcp else "NONE"
                found.append(f"pid {owners[inode]}: {local} -> {remote if remote[1] else ()} "
                             f"{status}")
            elif tcp and state in FIXED_STATES:
                settled.add(inode)
    return found


def _socket_inodes(pid: int) -> list[str]:
    folder = f"/proc/{pid}/fd"
    try:
        fds = os.listdir(folder)
    except OSError:  # gone, or not ours to read
        return []
    inodes = []
    for fd in fds:
        try:
            target = os.readlink(f"{folder}/{fd}")
        except OSError:
            continue
        if target.startswith("socket:["):
            inodes.append(target[8:-1])
    return inodes


def _table(pid: int, name: str, inodes: Container[str]
           ) -> list[tuple[tuple[str, int], tuple[str, int], str, str]]:
    """(local end, remote end, state, inode) of the sockets with these inodes in
    /proc/PID/net/NAME (the namespace of PID, which its children share)."""
    try:
        lines = Path(f"/proc/{pid}/net/{name}").read_text().splitlines()[1:]
    except OSError:
        return []
    rows = []
    for line in lines:
        fields = line.split()
        if fields[9] in inodes:
            rows.append((_address(fields[1]), _address(fields[2]), fields[3], fields[9]))
    return rows


def _address(text: str) -> tuple[str, int]:
    """'0100007F:1F90' (the kernel's byte order, each 32-bit word reversed) as (ip, port)."""
    host, port = text.split(":")
    raw = bytes.fromhex(host)
    words = b"".join(raw[at:at + 4][::-1] for at in range(0, len(raw), 4))
    family = socket.AF_INET if len(raw) == 4 else socket.AF_INET6
    return socket.inet_ntop(family, words), int(port, 16)


class ConnectionWatch:
    """Samples foreign_connections of some processes every `every_s` until stopped."""

    def __init__(self, pids: Any, every_s: float = 0.1):
        self.pids = pids  # a callable giving the pids to watch now
        self.every_s = every_s
        self.found: list[str] = []
        self.samples = 0
        self._settled: set[str] = set()
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._watch, name="connection-watch",
                                        daemon=True)

    def _watch(self) -> None:
        while not self._stop.wait(self.every_s):
            self.found += foreign_connections(self.pids(), self._settled)
            self.samples += 1

    def __enter__(self) -> ConnectionWatch:
        self._thread.start()
        return self

    def __exit__(self, *exc: Any) -> None:
        self._stop.set()
        self._thread.join()
