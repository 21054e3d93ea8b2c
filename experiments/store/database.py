"""A run kept in PostgreSQL: made with its files and cases, one record per case, read typed.

`sweep_results.row_json` holds a case's record as the very JSON line a run folder's
records.jsonl holds (records_file.record_line): a run reads back the same from either store.
"""

from __future__ import annotations

import functools
import json
import os
import socket
from collections.abc import Callable, Iterator
from contextlib import contextmanager, suppress
from datetime import UTC
from pathlib import Path
from typing import Any

from experiments.define.prices import DEFAULT_PRICES
from experiments.store.connection import SharedRunError, database_errors
from experiments.store.folder import write_meta
from experiments.store.legacy import database_record
from experiments.store.record import CaseRecord, CaseRow
from experiments.store.records_file import RECORDS_FILE, record_line, write_records
from experiments.store.results_file import RESULTS_FILE, write_results
from experiments.store.run_store import (
    GRID_COPY,
    PRICES_COPY,
    SCENARIOS_COPY,
    RunInfo,
    RunStore,
    ran_on_cluster,
)
from experiments.store.transcripts_file import TRANSCRIPTS_FILE, encode, pick_transcript
from treadwise.replace_file import replace_text

# A run is running while its client holds the run's advisory lock (a killed client's
# connection closes and PostgreSQL lets the lock go), so no heartbeat is needed to tell.
RUN_LOCK = 0x73776565  # "swee": the first key of every run's lock; the second is the name's hash
_STATUS = f"""
    SELECT r.run_id, r.created_at, r.grid_name, r.meta, r.status, r.budget_stop,
           (SELECT count(*) FROM sweep_cases c WHERE c.run_id = r.run_id) AS cases,
           (SELECT count(*) FROM sweep_results s WHERE s.run_id = r.run_id) AS done,
           EXISTS (SELECT 1 FROM pg_locks l WHERE l.locktype = 'advisory' AND l.granted
                   AND l.classid = {RUN_LOCK} AND l.objsubid = 2
                   AND l.objid = hashtext(r.run_id)::oid) AS alive
    FROM sweep_runs r"""
# One result per case: a later result replaces only an error (as --retry-errors does), so a
# duplicate is dropped. model_calls are the paid ones.
_KEEP = """
    INSERT INTO sweep_results (run_id, case_key, status, model_calls, cost_usd, worker,
                               row_json, transcript)
    VALUES (%(run)s, %(key)s, %(status)s, %(calls)s, %(cost)s, %(worker)s, %(row)s, %(line)s)
    ON CONFLICT (run_id, case_key) DO UPDATE
    SET status = excluded.status, model_calls = excluded.model_calls,
        cost_usd = excluded.cost_usd, worker = excluded.worker, finished_at = now(),
        row_json = excluded.row_json, transcript = excluded.transcript
    WHERE sweep_results.status = 'error'
    RETURNING seq"""
_DONE = """
    UPDATE sweep_cases SET state = 'done'
    WHERE run_id = %(run)s AND case_key = %(key)s"""
_FILES = ((GRID_COPY, "grid_yaml"), (SCENARIOS_COPY, "scenarios_yaml"),
          (PRICES_COPY, "prices_yaml"))


def _one_line(method: Callable) -> Callable:
    """The database's errors as one line (SharedRunError), never a traceback."""
    @functools.wraps(method)
    def wrapped(*args: Any, **kwargs: Any) -> Any:
        with database_errors():
            return method(*args, **kwargs)

    return wrapped


def keep(conn: Any, run_id: str, writer: str, record: CaseRecord) -> bool:
    """Keep a finished case's row and transcript, and mark the case done, in the caller's
    transaction; False when a result for the case stands already (this one is dropped)."""
    record = record.redacted()
    row = record.row
    params = {"run": run_id, "key": row.case_key, "status": row.status,
              "calls": row.paid_calls, "cost": row.cost_usd or 0.0, "worker": writer,
              "row": record_line(row), "line": encode(record.transcript)}
    kept = conn.execute(_KEEP, params).fetchone()
    conn.execute(_DONE, params)
    return kept is not None


class DatabaseRun(RunStore):
    """A run whose rows and transcripts are in PostgreSQL; `folder` is this machine's folder
    of it (copies of its files, the data dirs of the cases run here, its report)."""

    source = (f"the run's records in PostgreSQL (`python -m experiments export` writes them as "
              f"`{RECORDS_FILE}` and `{RESULTS_FILE}`)")

    def __init__(self, pool: Any, run_id: str, folder: Path, *, writer: str = ""):
        self.pool, self.name, self.folder = pool, run_id, Path(folder)
        self.writer = writer or f"{socket.gethostname()}:{os.getpid()}"

    def _all(self, sql: str, *params: Any) -> list[dict[str, Any]]:
        with self.pool.connection() as conn:
            return conn.execute(sql, params).fetchall()

    @contextmanager
    def locked(self) -> Iterator[None]:
        """Hold the run's advisory lock on a connection of its own while running it (RunBusy
        when another client does); the lock is also what says the run is running."""
        import psycopg

        from experiments.store.folder import RunBusy

        with database_errors(), psycopg.connect(self.pool.conninfo, autocommit=True) as conn:
            got = conn.execute("SELECT pg_try_advisory_lock(%s, hashtext(%s))",
                               (RUN_LOCK, self.name)).fetchone()
            if not (got and got[0]):
                raise RunBusy(f"run {self.name} is being run right now by another client; "
                              "wait for it to finish (or stop it) before resuming")
            try:
                yield
            finally:
                # Let go before closing: a closed connection's server process may still hold
                # the lock for a moment, and the finished run would read as running.
                with suppress(psycopg.Error):
                    conn.execute("SELECT pg_advisory_unlock(%s, hashtext(%s))",
                                 (RUN_LOCK, self.name))

    def prepare_folder(self) -> Path:
        return self.write_files()

    @_one_line
    def finished(self) -> dict[str, str]:
        rows = self._all("SELECT case_key, status FROM sweep_results WHERE run_id = %s"
                         " ORDER BY seq", self.name)
        return {row["case_key"]: row["status"] for row in rows}

    @_one_line
    def meta(self) -> dict[str, Any]:
        return run_meta(self.pool, self.name) or {}

    @_one_line
    def start(self, meta: dict[str, Any]) -> None:
        from psycopg.types.json import Jsonb

        with self.pool.connection() as conn:
            conn.execute("UPDATE sweep_runs SET status = 'running', budget_stop = NULL,"
                         " finished_at = NULL, meta = meta || %s WHERE run_id = %s",
                         (Jsonb(_kept(meta)), self.name))

    @_one_line
    def append(self, record: CaseRecord) -> bool:
        with self.pool.connection() as conn, conn.transaction():
            return keep(conn, self.name, self.writer, record)

    @_one_line
    def finish(self, **changes: Any) -> None:
        from psycopg.types.json import Jsonb

        stop = changes.get("budget_stop") or {}
        with self.pool.connection() as conn:
            conn.execute("UPDATE sweep_runs SET status = %s, budget_stop = %s,"
                         " finished_at = now(), meta = meta || %s WHERE run_id = %s",
                         (changes.get("status", "finished"), stop.get("reason"),
                          Jsonb(_kept(changes)), self.name))

    @_one_line
    def records(self) -> list[CaseRow]:
        """Every record of the run (one per case) in the order they were kept."""
        found = self._all("SELECT row_json FROM sweep_results WHERE run_id = %s ORDER BY seq",
                          self.name)
        return [database_record(row["row_json"]) for row in found]

    @_one_line
    def transcript(self, case: str) -> dict[str, Any]:
        found = self._all("SELECT case_key, transcript FROM sweep_results WHERE run_id = %s"
                          " AND strpos(case_key, %s) > 0", self.name, case)
        return pick_transcript(((r["case_key"], r["transcript"]) for r in found), case,
                               self.name)

    @_one_line
    def info(self) -> RunInfo:
        found = self._all(_STATUS + " WHERE r.run_id = %s", self.name)
        if not found:
            raise SharedRunError(f"no shared run {self.name!r} in the database")
        return _info(found[0])

    @_one_line
    def write_files(self) -> Path:
        """This machine's folder of the run with the run's files in it (what a rebuilt grid
        and `workers: N` processes read)."""
        (run,) = self._all("SELECT grid_yaml, scenarios_yaml, prices_yaml FROM sweep_runs"
                           " WHERE run_id = %s", self.name)
        self.folder.mkdir(parents=True, exist_ok=True)
        for name, column in _FILES:
            _replace(self.folder / name, run[column])
        return self.folder

    @_one_line
    def export(self) -> Path:
        """Write the run into its folder as a run folder (its files, records.jsonl, the
        results.csv export, transcripts.jsonl, meta.json) that reads like any other."""
        meta = run_meta(self.pool, self.name)
        if meta is None:
            raise SharedRunError(f"no shared run {self.name!r} in the database")
        folder = self.write_files()
        records = self.records()
        write_records(folder / RECORDS_FILE, records)
        write_results(folder / RESULTS_FILE, records)
        lines = self._all("SELECT transcript FROM sweep_results WHERE run_id = %s ORDER BY seq",
                          self.name)
        _replace(folder / TRANSCRIPTS_FILE, "".join(r["transcript"] + "\n" for r in lines))
        write_meta(folder, meta)
        return folder


def create(pool: Any, run_id: str, grid: Any, meta: dict[str, Any]) -> bool:
    """Store a new run: its files, its metadata and every case of its grid; False when a run
    of that name exists already."""
    from psycopg.types.json import Jsonb

    texts = {column: Path(path).read_text(encoding="utf-8") for column, path in (
        ("grid_yaml", grid.path), ("scenarios_yaml", grid.scenarios_file),
        ("prices_yaml", grid.prices_file or DEFAULT_PRICES))}
    with pool.connection() as conn, conn.transaction():
        made = conn.execute(
            "INSERT INTO sweep_runs (run_id, grid_name, grid_yaml, scenarios_yaml,"
            " prices_yaml, meta) VALUES (%(run)s, %(name)s, %(grid_yaml)s,"
            " %(scenarios_yaml)s, %(prices_yaml)s, %(meta)s) ON CONFLICT (run_id) DO NOTHING"
            " RETURNING run_id",
            {"run": run_id, "name": grid.name, "meta": Jsonb(meta), **texts}).fetchone()
        if made is None:
            return False
        cases = grid.cases()
        conn.execute(
            "INSERT INTO sweep_cases (run_id, case_key, position, model, strategy)"
            " SELECT %(run)s, key, position, model, strategy FROM unnest(%(keys)s::text[],"
            " %(models)s::text[], %(strategies)s::text[]) WITH ORDINALITY"
            " AS t(key, model, strategy, position)",
            {"run": run_id, "keys": [c.key for c in cases],
             "models": [c.cell.model for c in cases],
             "strategies": [c.cell.strategy for c in cases]})
    return True


def _replace(path: Path, text: str) -> None:
    if path.exists() and path.read_text(encoding="utf-8") == text:
        return
    replace_text(path, text)  # workers sharing this folder never read half a file


def _status(row: dict[str, Any]) -> str:
    if row["alive"]:
        return "running"
    if row["status"] == "running":  # its client is gone without finishing: resume it
        return "interrupted"
    return row["status"]


def _kept(meta: dict[str, Any]) -> dict[str, Any]:
    """meta.json's fields as the database keeps them (what the table's columns say is left
    out)."""
    return json.loads(json.dumps({k: v for k, v in meta.items()
                                  if k not in ("status", "budget_stop")}, default=str))


def run_meta(pool: Any, run_id: str) -> dict[str, Any] | None:
    """meta.json's fields for a run in the database (what the report and the list read)."""
    with pool.connection() as conn:
        row = conn.execute(_STATUS + " WHERE r.run_id = %s", (run_id,)).fetchone()
    if row is None:
        return None
    stop = row["budget_stop"]
    return {**row["meta"], "run_id": run_id, "shared": True, "created": _iso(row["created_at"]),
            "status": _status(row), "cases": row["cases"], "rows": row["done"],
            "budget_stop": {"reason": stop, "not_launched": row["cases"] - row["done"]}
            if stop else None}


def _iso(value: Any) -> Any:
    return value.astimezone(UTC).isoformat(timespec="seconds") if hasattr(
        value, "astimezone") else value


def _info(row: dict[str, Any]) -> RunInfo:
    return RunInfo(id=row["run_id"], path=Path(row["run_id"]), created=row["created_at"],
                   rows=row["done"], has_report=False, grid=row["grid_name"],
                   status=_status(row), shared=True, cluster=ran_on_cluster(row["meta"] or {}))


def list_database(pool: Any) -> list[RunInfo]:
    """Every run in the database, newest first."""
    with database_errors(), pool.connection() as conn:
        rows = conn.execute(_STATUS + " ORDER BY r.created_at DESC, r.run_id DESC").fetchall()
    return [_info(row) for row in rows]
