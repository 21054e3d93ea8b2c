"""Runs kept in PostgreSQL (sweeps shared across machines): create or join one, then list, read
and export it (the claims are in claims.py, the joining worker in run/shared.py).

The first worker of a run stores its grid, scenario and price files and every case; later
workers check that their grid means the same (or take the run's own) and claim cases from it.
Each worker keeps a scratch folder OUT/RUN (copies of the run's files and the data dirs of its
cases); the rows and transcripts live in the database until `export` writes them as a run folder.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
from contextlib import contextmanager
from datetime import UTC
from pathlib import Path
from typing import Any

from experiments.define.prices import DEFAULT_PRICES
from experiments.store.folder import RunInfo, write_meta
from experiments.store.record import CaseRow
from experiments.store.results_file import RESULTS_FILE, ResultsWriter
from experiments.store.transcripts_file import TRANSCRIPTS_FILE, pick_transcript

RUN_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,79}")
GRID_COPY, SCENARIOS_COPY, PRICES_COPY = "grid.yaml", "scenarios.yaml", "prices.yaml"
NO_CLIENT = ("the PostgreSQL client is not installed: python -m pip install -r "
             "requirements-postgres.txt")
_STATUS = """
    SELECT r.run_id, r.created_at, r.grid_name, r.meta, r.status, r.budget_stop,
           (SELECT count(*) FROM sweep_cases c WHERE c.run_id = r.run_id) AS cases,
           (SELECT count(*) FROM sweep_results s WHERE s.run_id = r.run_id) AS done,
           (SELECT count(*) FROM sweep_workers w WHERE w.run_id = r.run_id
              AND w.finished_at IS NULL
              AND w.last_seen > now() - make_interval(secs => w.claim_s)) AS alive
    FROM sweep_runs r"""


class SharedRunError(ValueError):
    """A shared run cannot be used: no database, a bad name, a different grid, no such run."""


def database_url() -> str:
    from treadwise.settings import Settings

    url = Settings.from_env().database_url
    if not url:
        raise SharedRunError(
            "--workers-join needs TREADWISE_DATABASE_URL=postgresql://user:password@host/db, "
            "the PostgreSQL database every worker of the run shares")
    return url


def connect(url: str) -> Any:
    """This process's pool on the database, the schema migrated."""
    try:
        from treadwise.storage.postgres import describe, shared_pool
    except ImportError:
        raise SharedRunError(NO_CLIENT) from None
    from treadwise.storage.leads import StoreUnavailable

    try:
        return shared_pool(url)
    except StoreUnavailable as exc:
        raise SharedRunError(f"cannot use the database {describe(url)}: {exc}") from None


@contextmanager
def database_errors() -> Any:
    """psycopg's errors as one line (a SharedRunError), never a traceback."""
    try:
        from psycopg import Error
        from psycopg_pool import PoolTimeout
    except ImportError:
        raise SharedRunError(NO_CLIENT) from None

    try:
        yield
    except (Error, PoolTimeout) as exc:
        detail = str(exc).strip().splitlines()[0][:200] if str(exc).strip() else ""
        raise SharedRunError(f"the shared run's database failed: {type(exc).__name__}"
                             + (f": {detail}" if detail else "")) from None


def check_name(run_id: str) -> str:
    if not RUN_NAME.fullmatch(run_id):
        raise SharedRunError(f"{run_id!r} cannot name a shared run: use 1-80 letters, digits, "
                             "'.', '_' or '-', starting with a letter or digit")
    return run_id


def definition(grid: Any) -> dict[str, Any]:
    """What a run's rows mean; every worker's grid must agree on it. How one machine runs
    the cases (concurrency, worker processes, rate limits, which case folders it keeps) is
    left out."""
    prices = grid.prices_file or DEFAULT_PRICES
    found = {
        "personas": grid.personas, "models": grid.models,
        "temperatures": grid.temperatures, "strategies": grid.strategies,
        "variations": [[v.name, v.system_suffix, v.max_tokens] for v in grid.variations],
        "exclude": grid.exclude, "repeats": grid.repeats,
        "scenarios": [[s.id, s.category, s.turns, s.checks] for s in grid.scenarios()],
        "timeout_s": grid.timeout_s, "max_retries": grid.max_retries,
        "max_retry_wait_s": grid.max_retry_wait_s, "judge": grid.judge, "stream": grid.stream,
        "budget": [grid.max_calls, grid.max_cost_usd],
        "prices": hashlib.sha256(Path(prices).read_bytes()).hexdigest()[:16]}
    return json.loads(json.dumps(found, default=str))


def differences(run: dict[str, Any], mine: dict[str, Any]) -> list[str]:
    """The parts of two definitions that differ, each as a short phrase."""
    def short(value: Any) -> str:
        text = json.dumps(value, ensure_ascii=False)
        return text if len(text) <= 80 else text[:77] + "..."

    found = []
    for key in sorted(set(run) | set(mine)):
        have, want = run.get(key), mine.get(key)
        if have == want:
            continue
        if key == "scenarios":  # too long to show whole: their ids, or that their content differs
            have, want = [s[0] for s in have or []], [s[0] for s in want or []]
            if have == want:
                found.append("scenarios (the same ids, other turns or checks)")
                continue
        found.append(f"{key} (run: {short(have)}, yours: {short(want)})")
    return found


def _texts(grid: Any) -> dict[str, str]:
    return {"grid_yaml": Path(grid.path).read_text(encoding="utf-8"),
            "scenarios_yaml": Path(grid.scenarios_file).read_text(encoding="utf-8"),
            "prices_yaml": Path(grid.prices_file or DEFAULT_PRICES).read_text(encoding="utf-8")}


def _creation_meta(grid: Any) -> dict[str, Any]:
    import treadwise
    from experiments.store.folder import git_commit

    return {"grid_name": grid.name, "grid_file": str(grid.path), "description": grid.description,
            "cells": len(grid.cells()), "judge": grid.judge,
            "budget": {"max_calls": grid.max_calls, "max_cost_usd": grid.max_cost_usd},
            "package_version": treadwise.__version__, "git_commit": git_commit()}


def create(pool: Any, run_id: str, grid: Any, mine: dict[str, Any] | None = None) -> bool:
    """Store a new run with every case of its grid (`mine` is its definition); False when the
    run exists already (two workers creating it at once: one does, the other waits for it and
    finds it)."""
    from psycopg.types.json import Jsonb

    mine = definition(grid) if mine is None else mine
    with pool.connection() as conn, conn.transaction():
        made = conn.execute(
            "INSERT INTO sweep_runs (run_id, grid_name, definition, grid_yaml, scenarios_yaml,"
            " prices_yaml, meta) VALUES (%(run)s, %(name)s, %(definition)s, %(grid_yaml)s,"
            " %(scenarios_yaml)s, %(prices_yaml)s, %(meta)s) ON CONFLICT (run_id) DO NOTHING"
            " RETURNING run_id",
            {"run": run_id, "name": grid.name, "definition": Jsonb(mine),
             "meta": Jsonb(_creation_meta(grid)), **_texts(grid)}).fetchone()
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


def stored(pool: Any, run_id: str) -> dict[str, Any] | None:
    """The run's stored files and definition, or None."""
    with pool.connection() as conn:
        return conn.execute("SELECT run_id, definition, grid_yaml, scenarios_yaml, prices_yaml"
                            " FROM sweep_runs WHERE run_id = %s", (run_id,)).fetchone()


def create_or_join(pool: Any, run_id: str, grid: Any | None) -> tuple[dict[str, Any], bool]:
    """The run (created from `grid` when it does not exist yet) and whether this call made it;
    a grid that means something else than the run's is an error naming what differs."""
    mine = definition(grid) if grid is not None else None
    created = mine is not None and create(pool, run_id, grid, mine)
    run = stored(pool, run_id)
    if run is None:
        raise SharedRunError(f"no shared run {run_id!r} in the database: start it with "
                             f"python -m experiments run --grid GRID --workers-join {run_id}")
    if grid is not None and not created:
        if diff := differences(run["definition"], mine):
            raise SharedRunError(
                f"{grid.path} differs from the grid of shared run {run_id!r}: "
                f"{'; '.join(diff)}. Join without --grid to run the run's own grid, or name "
                "a new run")
    return run, created


def _replace(path: Path, text: str) -> None:
    if path.exists() and path.read_text(encoding="utf-8") == text:
        return
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    tmp.write_text(text, encoding="utf-8")
    os.replace(tmp, path)  # workers sharing this folder never read half a file


def local_folder(out_dir: Path, run: dict[str, Any]) -> Path:
    """This machine's folder of the run: the run's files (what `workers: N` processes and
    a rebuilt grid read) and, under cases/, the data dirs of the cases run here."""
    folder = Path(out_dir) / run["run_id"]
    folder.mkdir(parents=True, exist_ok=True)
    for name, column in ((GRID_COPY, "grid_yaml"), (SCENARIOS_COPY, "scenarios_yaml"),
                         (PRICES_COPY, "prices_yaml")):
        _replace(folder / name, run[column])
    return folder


def _status(row: dict[str, Any]) -> str:
    if row["status"] in ("finished", "stopped_by_budget"):
        return row["status"]
    if row["alive"]:
        return f"running ({row['alive']} worker{'s' if row['alive'] != 1 else ''})"
    return "finished" if row["done"] == row["cases"] else "interrupted"


def run_meta(pool: Any, run_id: str) -> dict[str, Any] | None:
    """meta.json's fields for a shared run (what the report and the list read), or None."""
    with pool.connection() as conn:
        row = conn.execute(_STATUS + " WHERE r.run_id = %s", (run_id,)).fetchone()
        if row is None:
            return None
        workers = conn.execute("SELECT worker, status, started_at, finished_at FROM "
                               "sweep_workers WHERE run_id = %s ORDER BY started_at",
                               (run_id,)).fetchall()
    status = _status(row)
    stop = row["budget_stop"]
    return {**row["meta"], "run_id": run_id, "created": _iso(row["created_at"]),
            "status": status.split(" ")[0], "cases": row["cases"], "rows": row["done"],
            "shared": {"database_status": status,
                       "workers": [{k: _iso(v) for k, v in w.items()} for w in workers]},
            "budget_stop": {"reason": stop, "not_launched": row["cases"] - row["done"]}
            if stop else None}


def _iso(value: Any) -> Any:
    return value.astimezone(UTC).isoformat(timespec="seconds") if hasattr(
        value, "astimezone") else value


def list_shared(pool: Any) -> list[RunInfo]:
    """Every shared run in the database, newest first."""
    with pool.connection() as conn:
        rows = conn.execute(_STATUS + " ORDER BY r.created_at DESC, r.run_id DESC").fetchall()
    return [RunInfo(id=row["run_id"], path=Path(row["run_id"]), created=row["created_at"],
                    rows=row["done"], has_report=False, grid=row["grid_name"],
                    status=_status(row), shared=True) for row in rows]


def result_rows(pool: Any, run_id: str) -> list[CaseRow]:
    """Every result of the run, in the order they were kept, typed."""
    with pool.connection() as conn:
        found = conn.execute("SELECT row_json FROM sweep_results WHERE run_id = %s ORDER BY "
                             "seq", (run_id,)).fetchall()
    return [CaseRow.model_validate_json(row["row_json"]) for row in found]


def find_transcript(pool: Any, run_id: str, case: str) -> dict[str, Any]:
    """One case's transcript: its key, or any part of a key that only one case has."""
    with pool.connection() as conn:
        found = conn.execute("SELECT case_key, transcript FROM sweep_results WHERE run_id = %s"
                             " AND strpos(case_key, %s) > 0", (run_id, case)).fetchall()
    return pick_transcript(((r["case_key"], r["transcript"]) for r in found), case, run_id)


def export_run(pool: Any, run_id: str, out_dir: Path) -> Path:
    """Write the run as a run folder, OUT/RUN: its files, results.csv, transcripts.jsonl and
    meta.json, which `report`, `compare` and `show` read like any other run."""
    meta = run_meta(pool, run_id)
    run = stored(pool, run_id)
    if meta is None or run is None:
        raise SharedRunError(f"no shared run {run_id!r} in the database")
    folder = local_folder(out_dir, run)
    tmp = folder / f".{RESULTS_FILE}.{os.getpid()}.tmp"
    tmp.unlink(missing_ok=True)
    with ResultsWriter(tmp) as writer:
        for row in result_rows(pool, run_id):
            writer.write(vars(row))
    os.replace(tmp, folder / RESULTS_FILE)
    with pool.connection() as conn:
        lines = conn.execute("SELECT transcript FROM sweep_results WHERE run_id = %s ORDER BY "
                             "seq", (run_id,)).fetchall()
    _replace(folder / TRANSCRIPTS_FILE, "".join(r["transcript"] + "\n" for r in lines))
    write_meta(folder, meta)
    return folder


