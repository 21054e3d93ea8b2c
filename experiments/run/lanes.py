"""Where cases run: threads of this process, or a Dask cluster (run/cluster.py).

Either way finished cases arrive on one queue as events, and this process stays the only one
that writes the run.
"""

from __future__ import annotations

import queue
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any

from experiments.define.grid import Case
from experiments.store.record import CaseRecord

RECORD, LOST, GONE = "record", "lost", "gone"


class LaneGone(ValueError):
    """Where the cases ran is gone (a Dask scheduler lost): one line saying what to do."""


@dataclass(frozen=True)
class Event:
    kind: str
    lane: Any
    records: tuple[CaseRecord, ...] = ()  # a batch's records come back together
    keys: tuple[str, ...] = ()
    why: str = ""


class LocalLane:
    """Cases run on this process's threads."""

    def __init__(self, runner: Any, threads: int, events: queue.SimpleQueue):
        self.runner = runner
        self.events = events
        self.threads = threads
        self.in_flight = 0
        self._pool = ThreadPoolExecutor(max_workers=threads, thread_name_prefix="case")

    def capacity(self) -> int:
        return self.threads

    def submit(self, case: Case) -> None:
        self.in_flight += 1
        self._pool.submit(self._run, case)

    def flush(self) -> None:
        """Nothing waits here: each case went to the pool when submitted."""

    def _run(self, case: Case) -> None:
        self.events.put(Event(RECORD, self, (self.runner.run(case),)))

    def close(self, *, wait: bool) -> None:
        self._pool.shutdown(wait=wait, cancel_futures=True)
