"""One worker's part in a shared sweep: cases claimed from PostgreSQL, results kept there.

A claim is a row lock taken with `FOR UPDATE SKIP LOCKED` (two workers never get the same
case) that stamps the case with this worker and an expiry; a heartbeat thread pushes the expiry
forward while the worker lives. A worker that dies stops beating, its claims expire, and any
other worker claims those cases again. A result is kept once per (run, case key): if a worker
whose claim had expired finishes after all, the first result stands (an error is replaced by a
later result, as --retry-errors does). Times are the database's, so the machines' clocks do
not matter.
"""

from __future__ import annotations

import logging
import os
import secrets
import socket
import threading
import time
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

from experiments.define.grid import Case
from experiments.run.budget import Budget
from experiments.store.database import DatabaseRun, keep
from experiments.store.record import CaseRecord

log = logging.getLogger(__name__)
MAX_CLAIMS = 3  # a case whose workers died this many times is recorded as an error
WRITE_ATTEMPTS = 3
BUDGET_CHECK_S = 0.5  # how often the run-wide spending is summed
DIED = ("claimed {n} times, and each worker running it stopped before finishing it (killed, "
        "crashed or cut off from the database)")

# The case is picked by a scalar subquery, which runs once. Joined as a FROM item instead, the
# planner may rescan it once per row of the table (a nested loop, seen on a fresh table), each
# rescan locking and claiming another case.
_CLAIM = """
    UPDATE sweep_cases
    SET state = 'claimed', claimed_by = %(worker)s, claims = claims + 1,
        claimed_until = now() + make_interval(secs => %(claim_s)s)
    WHERE run_id = %(run)s AND case_key = (
        SELECT case_key FROM sweep_cases
        WHERE run_id = %(run)s AND model = ANY(%(models)s) AND strategy = ANY(%(strategies)s)
          AND (state = 'todo' OR (state = 'claimed' AND claimed_until < now()))
        ORDER BY position LIMIT 1 FOR UPDATE SKIP LOCKED)
    RETURNING case_key, claims"""
_LEFT = """
    SELECT count(*) AS open,
           count(*) FILTER (WHERE model = ANY(%(models)s) AND strategy = ANY(%(strategies)s))
               AS runnable
    FROM sweep_cases WHERE run_id = %(run)s AND state <> 'done'
      AND claimed_by IS DISTINCT FROM %(worker)s"""
_SPENT = """
    SELECT r.status, r.budget_stop, coalesce(sum(s.model_calls), 0) AS calls,
           coalesce(sum(s.cost_usd), 0) AS cost
    FROM sweep_runs r LEFT JOIN sweep_results s ON s.run_id = r.run_id
    WHERE r.run_id = %(run)s GROUP BY r.run_id"""


def worker_name() -> str:
    """host:pid:tail, unique across machines and restarts."""
    return f"{socket.gethostname()}:{os.getpid()}:{secrets.token_hex(2)}"


class SharedRun:
    """A worker's case source in a shared run, and where it keeps its results (the run's
    DatabaseRun, written as this worker); open it with `with`."""

    def __init__(self, pool: Any, run_id: str, *, claim_s: float, limit: int | None = None,
                 max_calls: int | None = None, max_cost_usd: float | None = None,
                 folder: Path | None = None):
        if claim_s < 0.5:
            raise ValueError(f"TREADWISE_SWEEP_CLAIM_S must be at least 0.5 s, got {claim_s:g}")
        self.pool, self.run_id, self.claim_s = pool, run_id, claim_s
        self.worker = worker_name()
        self.store = DatabaseRun(pool, run_id, folder or Path(run_id), writer=self.worker)
        self.name, self.folder = run_id, self.store.folder
        self.limit = limit
        self.budget = (max_calls, max_cost_usd)
        self.claimed = self.dropped = self.left_for_others = 0
        self.completed_here = False
        self.stop_reason: str | None = None
        self._cases: dict[str, Case] = {}
        self._lost: Callable[[str, str], CaseRecord] | None = None
        self._filters: dict[str, list[str]] = {"models": [], "strategies": []}
        self._budget_checked = -BUDGET_CHECK_S
        self._mine: set[str] = set()
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._beat: threading.Thread | None = None

    def _params(self, **more: Any) -> dict[str, Any]:
        return {"run": self.run_id, "worker": self.worker, "claim_s": self.claim_s, **more}

    def _execute(self, sql: str, params: dict[str, Any]) -> list[dict[str, Any]]:
        with self.pool.connection() as conn:
            cursor = conn.execute(sql, params)
            return cursor.fetchall() if cursor.description else []

    def bind(self, cases: Iterable[Case],
             lost: Callable[[str, str], CaseRecord]) -> SharedRun:
        """The cases this worker can run (its models and strategies), and how to record one
        that no worker could finish."""
        self._cases = {case.key: case for case in cases}
        self._lost = lost
        self._filters = {"models": sorted({c.cell.model for c in self._cases.values()}),
                         "strategies": sorted({c.cell.strategy for c in self._cases.values()})}
        return self

    def finished(self) -> dict[str, str]:
        return self.store.finished()

    def meta(self) -> dict[str, Any]:
        """Nothing of the run's own: each worker records the commit it runs."""
        return {}

    def start(self, meta: dict[str, Any]) -> None:
        """The run's metadata was kept when it was created; this worker joined at open()."""

    def reopen_errors(self) -> int:
        """Put the cases whose result is an error back to be claimed (--retry-errors)."""
        with self.pool.connection() as conn, conn.transaction():
            count = conn.execute("""
                UPDATE sweep_cases AS c SET state = 'todo', claimed_by = NULL,
                       claimed_until = NULL, claims = 0
                FROM sweep_results AS r
                WHERE c.run_id = %(run)s AND r.run_id = c.run_id AND r.case_key = c.case_key
                  AND r.status = 'error' AND c.state = 'done'""", self._params()).rowcount
            if count:
                conn.execute("UPDATE sweep_runs SET status = 'running', finished_at = NULL"
                             " WHERE run_id = %(run)s AND status = 'finished'", self._params())
        return count

    def claim(self) -> Case | None:
        """The next case for this worker, or None when there is none for it.

        With none of its own cases in flight, it waits while other workers hold claims on
        cases it could run: those finish, or their worker died and the claims expire here.
        """
        while True:
            if self.limit is not None and self.claimed >= self.limit:
                return None
            if self._over_budget():
                return None
            got = self._execute(_CLAIM, self._params(**self._filters))
            if got:
                case = self._take(got[0]["case_key"], got[0]["claims"])
                if case is not None:
                    return case
                continue
            with self._lock:
                if self._mine:
                    return None  # the driver asks again as each of ours finishes
            left = self._execute(_LEFT, self._params(**self._filters))[0]
            if not left["runnable"]:
                self.left_for_others = left["open"]
                return None
            time.sleep(min(1.0, self.claim_s / 4))

    def _take(self, key: str, claims: int) -> Case | None:
        if claims > MAX_CLAIMS and self._lost is not None:
            self.append(self._lost(key, DIED.format(n=claims - 1)))
            return None
        with self._lock:
            self._mine.add(key)
        self.claimed += 1
        return self._cases[key]

    def _over_budget(self) -> bool:
        if self.stop_reason is not None or self.budget == (None, None):
            return self.stop_reason is not None
        # Summing the run's rows before every claim would cost O(rows) each time; this
        # worker's own spending is checked after every case by the runner anyway.
        if time.monotonic() - self._budget_checked < BUDGET_CHECK_S:
            return False
        self._budget_checked = time.monotonic()
        spent = self._execute(_SPENT, self._params())[0]
        if spent["status"] == "stopped_by_budget":
            self.stop_reason = spent["budget_stop"] or "the run's budget"
            return True
        budget = Budget(*self.budget, calls=int(spent["calls"]), cost_usd=float(spent["cost"]))
        if (reason := budget.exceeded()) is None:
            return False
        self.stop_reason = reason
        self._execute("UPDATE sweep_runs SET status = 'stopped_by_budget', budget_stop = "
                      "%(why)s WHERE run_id = %(run)s AND status = 'running'",
                      self._params(why=reason))
        return True

    def append(self, record: CaseRecord) -> bool:
        """Keep a finished case once; a result another worker already kept stands."""
        from psycopg import OperationalError
        from psycopg_pool import PoolTimeout

        key = record.row.case_key
        for attempt in range(1, WRITE_ATTEMPTS + 1):
            try:
                with self.pool.connection() as conn, conn.transaction():
                    kept = keep(conn, self.run_id, self.worker, record)
                break
            except (OperationalError, PoolTimeout) as exc:
                if attempt == WRITE_ATTEMPTS:
                    raise ConnectionError(f"cannot write case {key} to the database: "
                                          f"{type(exc).__name__}") from exc
                time.sleep(attempt)
        with self._lock:
            self._mine.discard(key)
        if not kept:
            self.dropped += 1
            log.warning("case %s: another worker kept its result first; this one is dropped",
                        key)
        return kept

    def _heartbeat(self) -> None:
        from psycopg import Error
        from psycopg_pool import PoolTimeout

        while not self._stop.wait(self.claim_s / 3):
            try:
                self._execute("UPDATE sweep_cases SET claimed_until = now() + make_interval("
                              "secs => %(claim_s)s) WHERE run_id = %(run)s AND claimed_by = "
                              "%(worker)s AND state = 'claimed'", self._params())
                self._execute("UPDATE sweep_workers SET last_seen = now() WHERE run_id = "
                              "%(run)s AND worker = %(worker)s", self._params())
            except (Error, PoolTimeout) as exc:
                log.warning("shared sweep heartbeat failed (%s); claims expire in %g s unless "
                            "it recovers", type(exc).__name__, self.claim_s)

    def open(self) -> SharedRun:
        host, pid = socket.gethostname(), os.getpid()
        self._execute("INSERT INTO sweep_workers (run_id, worker, host, pid, claim_s) VALUES "
                      "(%(run)s, %(worker)s, %(host)s, %(pid)s, %(claim_s)s)",
                      self._params(host=host, pid=pid))
        self._stop.clear()
        self._beat = threading.Thread(target=self._heartbeat, name="sweep-heartbeat",
                                      daemon=True)
        self._beat.start()
        return self

    def close(self) -> None:
        """Stop beating and hand back the claims of cases this worker did not finish."""
        self._stop.set()
        if self._beat is not None:
            self._beat.join(timeout=10)
        self._execute("UPDATE sweep_cases SET state = 'todo', claimed_by = NULL, "
                      "claimed_until = NULL WHERE run_id = %(run)s AND claimed_by = %(worker)s"
                      " AND state = 'claimed'", self._params())

    def finish(self, status: str, budget_stop: dict[str, Any] | None = None, **_: Any) -> None:
        """Record how this worker ended; the worker that sees the last case done marks the run
        finished (and writes its report)."""
        self._execute("UPDATE sweep_workers SET status = %(status)s, finished_at = now(), "
                      "last_seen = now() WHERE run_id = %(run)s AND worker = %(worker)s",
                      self._params(status=status))
        self.store.finish(status=status, budget_stop=budget_stop)
        self.completed_here = self.store.completed

    def __enter__(self) -> SharedRun:
        return self.open()

    def __exit__(self, *exc: Any) -> None:
        self.close()
