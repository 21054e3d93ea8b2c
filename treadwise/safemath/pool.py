"""The parent side of the math pool: warm workers run jobs under CPU, memory and time limits."""

from __future__ import annotations

import atexit
import json
import os
import signal
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Mapping
from dataclasses import asdict
from multiprocessing.connection import Connection
from typing import Any

from treadwise.safemath.admission import DEFAULT_QUEUE_S, Admission
from treadwise.safemath.math_errors import (
    MathError,
    MathInputError,
    MathTimeoutError,
    MathWorkerError,
)
from treadwise.safemath.worker import PID, TEMPLATE_CODE, TEMPLATE_ENV, Limits
from treadwise.settings import child_environment

DEFAULT_TIMEOUT_S = 5.0
START_TIMEOUT_S = 60.0
FORK_TIMEOUT_S = 10.0


class _WorkerLost(Exception):
    """The worker's pipe broke: it died before answering."""


class _WorkerSilent(Exception):
    """The worker did not answer within the timeout."""


def timeout_from_env(env: Mapping[str, str] | None = None) -> float:
    """The job timeout in seconds from TREADWISE_MATH_TIMEOUT_S (default 5), read by Settings."""
    from treadwise.settings import Settings

    return Settings.from_env(env).math_timeout_s


class _Template:
    """The parent's handle on the template process: ask it to fork, get a worker's pipe back."""

    def __init__(self, limits: Limits):
        ours, theirs = socket.socketpair()
        options = {"fd": theirs.fileno(), "path": sys.path, **asdict(limits)}
        self.process = subprocess.Popen(
            [sys.executable, "-c", TEMPLATE_CODE, json.dumps(options)],
            pass_fds=[theirs.fileno()], stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
            env=child_environment(**TEMPLATE_ENV),
        )
        theirs.close()
        self.control = ours
        self.lock = threading.Lock()
        try:
            self.control.settimeout(START_TIMEOUT_S)
            if self.control.recv(1) != b"R":
                raise OSError("the template exited")
            self.control.settimeout(FORK_TIMEOUT_S)
        except OSError:
            self.close()
            raise MathWorkerError("the math engine could not start its worker template") from None

    def fork(self) -> tuple[int, Connection]:
        with self.lock:
            self.control.sendall(b"F")
            data, fds, _, _ = socket.recv_fds(self.control, PID.size, 1)
        if len(data) != PID.size or len(fds) != 1:
            for fd in fds:
                os.close(fd)
            raise OSError("the template did not answer")
        return PID.unpack(data)[0], Connection(fds[0])

    def alive(self) -> bool:
        return self.process.poll() is None

    def close(self) -> None:
        self.control.close()
        try:
            self.process.wait(5)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()


class _Worker:
    """One worker process and the parent's end of its pipe."""

    def __init__(self, pid: int, conn: Connection):
        self.pid = pid
        self.conn = conn
        self.jobs = 0
        try:
            if not conn.poll(START_TIMEOUT_S):
                raise _WorkerLost
            conn.recv()
        except (_WorkerLost, EOFError, OSError):
            self.kill()
            conn.close()
            raise MathWorkerError("a math worker process could not start") from None

    def healthy(self) -> bool:
        """An idle worker has nothing to say; EOF or stray data means it died or misbehaved."""
        try:
            return not self.conn.poll(0)
        except OSError:
            return False

    def call(self, job: tuple, timeout_s: float) -> tuple[str, Any, bool]:
        try:
            self.conn.send(job)
            if not self.conn.poll(timeout_s):
                raise _WorkerSilent
            return self.conn.recv()
        except (EOFError, OSError):
            raise _WorkerLost from None

    def kill(self) -> None:
        try:
            os.kill(self.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass

    def stop(self) -> None:
        """Ask the worker to leave its loop; closing the pipe ends it too."""
        try:
            self.conn.send(None)
        except OSError:
            pass
        self.conn.close()


class MathEngine:
    """A pool of warm math workers: `min_workers` kept ready, growing to `max_workers` on demand.

    Each job runs in a worker process with memory, file-size and CPU limits and a wall-clock
    timeout; a worker that times out or dies is replaced, and the caller gets a MathError
    (MathInputError, MathTimeoutError, MathBusyError or MathWorkerError) whose message is fit
    to show. Workers are forked from a warm template process
    that has sympy, numpy and matplotlib loaded, so a new one is ready in milliseconds.
    Jobs are admitted fairly (`admission.Admission`): at most `per_session` at once per
    session, `quick_reserve` workers kept for quick operations, and a job waits up to
    `queue_s` for its turn before it is refused as busy. Thread-safe.
    """

    def __init__(self, *, timeout_s: float = DEFAULT_TIMEOUT_S, min_workers: int = 2,
                 max_workers: int = 8, limits: Limits | None = None,
                 max_jobs_per_worker: int = 500, per_session: int = 2, quick_reserve: int = 2,
                 queue_s: float = DEFAULT_QUEUE_S):
        if not timeout_s > 0 or not 0 <= min_workers <= max_workers or max_workers < 1:
            raise ValueError("need timeout_s > 0 and 0 <= min_workers <= max_workers >= 1")
        self.timeout_s = timeout_s
        self.min_workers = min_workers
        self.max_workers = max_workers
        self.limits = limits or Limits()
        self.max_jobs_per_worker = max_jobs_per_worker
        self.admission = Admission(max_workers, per_session=per_session,
                                   quick_reserve=quick_reserve, queue_s=queue_s)
        self._cond = threading.Condition()
        self._template_lock = threading.Lock()
        self._template: _Template | None = None
        self._idle: list[_Worker] = []
        self._workers: set[_Worker] = set()
        self._count = 0
        self._owner = os.getpid()
        self.closed = False

    def __enter__(self) -> MathEngine:
        return self.start()

    def __exit__(self, *exc_info: object) -> None:
        self.shutdown()

    def start(self) -> MathEngine:
        """Start the template and the warm workers; the first call takes a few seconds."""
        self._ensure_template()
        self._top_up()
        return self

    def run(self, op: str, /, *, session: str | None = None, timeout_s: float | None = None,
            **kwargs: Any) -> Any:
        """Run engine operation `op` in a worker and return its result.

        `session` (a conversation's thread id) is what fair shares are counted by; without one
        the job counts as a session of its own. Raises MathInputError with a clear message for
        bad input, MathTimeoutError when the job takes longer than the timeout, MathBusyError
        when it waited too long for its turn, MathWorkerError when its worker dies twice in a row.
        """
        self._ensure_template()
        timeout = self.timeout_s if timeout_s is None else float(timeout_s)
        ticket = self.admission.enter(op, session)
        try:
            return self._run(op, kwargs, timeout)
        finally:
            self.admission.leave(ticket)

    def _run(self, op: str, kwargs: dict[str, Any], timeout: float) -> Any:
        for attempt in range(2):
            worker = self._acquire()
            try:
                status, payload, retire = worker.call((op, kwargs, timeout), timeout)
            except _WorkerSilent:
                self._discard(worker)
                raise MathTimeoutError(
                    f"the calculation took too long (over {timeout:g} s); try a simpler expression"
                ) from None
            except _WorkerLost:
                # Retried once: the worker may have died before it saw this job.
                self._discard(worker, kill=False)
                if attempt:
                    raise MathWorkerError(
                        "the calculation crashed its worker process (it probably ran out of "
                        "memory); try a simpler expression"
                    ) from None
                continue
            except BaseException:
                self._discard(worker)
                raise
            self._release(worker, retire)
            if status == "ok":
                return payload
            raise MathInputError(payload)
        raise AssertionError("unreachable")

    def worker_pids(self) -> list[int]:
        """Process ids of the live workers, idle and busy."""
        self._prune()
        with self._cond:
            return sorted(worker.pid for worker in self._workers)

    def shutdown(self) -> None:
        """Stop every worker and the template; running jobs fail with MathWorkerError."""
        if os.getpid() != self._owner:
            return  # a forked child inherited this engine (and its atexit hook): not its to stop
        with self._cond:
            if self.closed:
                return
            self.closed = True
            self.admission.close()
            idle, busy = list(self._idle), self._workers - set(self._idle)
            self._idle.clear()
            self._cond.notify_all()
        for worker in busy:
            worker.kill()
        for worker in idle:
            worker.stop()
        with self._template_lock:
            if self._template is not None:
                self._template.close()
                self._template = None
        atexit.unregister(self.shutdown)

    def _ensure_template(self) -> _Template:
        with self._template_lock:
            self._check_open()
            if self._template is None or not self._template.alive():
                if self._template is None:
                    atexit.register(self.shutdown)
                else:
                    self._template.close()
                self._template = _Template(self.limits)
            return self._template

    def _check_open(self) -> None:
        if self.closed:
            raise MathWorkerError("the math engine has been shut down")
        if os.getpid() != self._owner:
            raise MathWorkerError("this math engine belongs to another process; use get_engine()")

    def _prune(self) -> None:
        """Drop idle workers that died while waiting (killed from outside, say)."""
        with self._cond:
            dead = [worker for worker in self._idle if not worker.healthy()]
            for worker in dead:
                self._idle.remove(worker)
                self._workers.discard(worker)
                self._count -= 1
            short = bool(dead) and not self.closed and self._count < self.min_workers
        for worker in dead:
            worker.conn.close()
        if short:
            threading.Thread(target=self._top_up, name="treadwise-math-top-up", daemon=True).start()

    def _acquire(self) -> _Worker:
        """A worker for an admitted job: admission keeps jobs <= max_workers, so one is idle,
        can be started, or is being started by a top-up and is moments away."""
        deadline = time.monotonic() + FORK_TIMEOUT_S
        self._prune()
        with self._cond:
            while True:
                self._check_open()
                if self._idle:
                    return self._idle.pop()
                if self._count < self.max_workers:
                    self._count += 1
                    break
                remaining = deadline - time.monotonic()
                if remaining <= 0:
                    raise MathWorkerError("no math worker became free; try again in a moment")
                self._cond.wait(remaining)
        return self._spawn()

    def _spawn(self) -> _Worker:
        """Start a worker for a slot already counted in self._count."""
        try:
            worker = self._fork()
        except BaseException:
            with self._cond:
                self._count -= 1
                self._cond.notify()
            raise
        with self._cond:
            if not self.closed:
                self._workers.add(worker)
                return worker
            self._count -= 1
        worker.stop()
        raise MathWorkerError("the math engine has been shut down")

    def _fork(self) -> _Worker:
        for attempt in range(2):
            template = self._ensure_template()
            try:
                return _Worker(*template.fork())
            except OSError:
                if attempt:
                    raise MathWorkerError("the math engine could not start a worker") from None
                # The template died; the next _ensure_template starts a new one.
        raise AssertionError("unreachable")

    def _release(self, worker: _Worker, retire: bool) -> None:
        worker.jobs += 1
        if retire or worker.jobs >= self.max_jobs_per_worker:
            self._discard(worker, kill=False)
            return
        with self._cond:
            if not self.closed:
                self._idle.append(worker)
                self._cond.notify()
                return
        worker.stop()

    def _discard(self, worker: _Worker, kill: bool = True) -> None:
        """Forget a worker; kill it unless it has already exited (its pid may be reused)."""
        if kill:
            worker.kill()
        worker.stop()
        with self._cond:
            self._workers.discard(worker)
            self._count -= 1
            self._cond.notify()
            short = not self.closed and self._count < self.min_workers
        if short:
            threading.Thread(target=self._top_up, name="treadwise-math-top-up", daemon=True).start()

    def _top_up(self) -> None:
        while True:
            with self._cond:
                if self.closed or self._count >= self.min_workers:
                    return
                self._count += 1
            try:
                worker = self._spawn()
            except MathError:
                return
            with self._cond:
                if self.closed:
                    break
                self._idle.append(worker)
                self._cond.notify()
        worker.stop()
