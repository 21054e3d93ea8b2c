"""Sweeps shared across machines through PostgreSQL: create or join a run and work on it
(the run in the database is experiments/store/database.py, the claims store/claims.py)."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

from experiments.store.database import (
    SharedRunError,
    check_name,
    connect,
    create_or_join,
    database_errors,
    database_url,
    local_folder,
    result_rows,
    run_meta,
)


def report_run(pool: Any, run_id: str, folder: Path, *, charts: bool = True) -> Path:
    """The run's report written from the database's rows into `folder`; report.md's path."""
    from experiments.analyse.report import write_report
    from experiments.analyse.tables import rows_frame

    meta = run_meta(pool, run_id)
    if meta is None:
        raise SharedRunError(f"no shared run {run_id!r} in the database")
    Path(folder).mkdir(parents=True, exist_ok=True)
    frame = rows_frame(result_rows(pool, run_id), run_id)
    return write_report(folder, charts=charts, results=frame, meta=meta)


def join_sweep(run_id: str, grid_path: Path | None, *, out_dir: Path = Path("results"),
               echo: Callable | None = None,
               report: bool = True, retry_errors: bool = False, cache: Any = False,
               limit: int | None = None, workers: int | None = None,
               **options: Any) -> Path:
    """Create or join the shared run `run_id` and work on it until no case is left for this
    worker; returns this machine's folder of the run. The worker that finishes the last case
    writes the report there (from the database)."""
    from experiments.run.runner import echo_stderr

    url, run_id = database_url(), check_name(run_id)
    echo = echo or echo_stderr
    with database_errors():
        return _join(connect(url), url, run_id, grid_path, out_dir=out_dir, echo=echo,
                     report=report, retry_errors=retry_errors, cache=cache, limit=limit,
                     workers=workers, options=options)


def _join(pool: Any, url: str, run_id: str, grid_path: Path | None, *, out_dir: Path,
          echo: Callable, report: bool, retry_errors: bool, cache: Any, limit: int | None,
          workers: int | None, options: dict[str, Any]) -> Path:
    from experiments.define.grid import load_grid
    from experiments.define.prices import load_prices
    from experiments.run.runner import cache_file, saved_grid, sweep_folder
    from experiments.store.claims import SharedRun
    from treadwise.settings import Settings
    from treadwise.storage.postgres import describe

    grid = None
    if grid_path is not None:
        grid = load_grid(Path(grid_path))
        load_prices(grid.prices_file)
    run, created = create_or_join(pool, run_id, grid)
    folder = local_folder(out_dir, run)
    grid = grid or saved_grid(folder)
    shared = SharedRun(pool, run_id, claim_s=Settings.from_env().sweep_claim_s, limit=limit,
                       max_calls=grid.max_calls, max_cost_usd=grid.max_cost_usd)
    echo(f"{'created' if created else 'joined'} shared run {run_id} on {describe(url)} as "
         f"worker {shared.worker} (claims expire {shared.claim_s:g} s after its last "
         "heartbeat)")
    if retry_errors and (reopened := shared.reopen_errors()):
        echo(f"  {reopened} errored cases put back to be run again")
    sweep_folder(grid, folder, resume=True, echo=echo, **options, plan_options={
        "limit": limit, "retry_errors": retry_errors, "cache": cache_file(cache, folder),
        "workers": workers or grid.workers, "shared": shared})
    _summary(pool, shared, echo)
    if report and shared.completed_here:
        echo(f"report: {report_run(pool, run_id, folder)}")
    return folder


def _summary(pool: Any, shared: Any, echo: Callable) -> None:
    meta = run_meta(pool, shared.run_id) or {}
    echo(f"this worker ran {shared.claimed} cases; run {shared.run_id}: {meta.get('rows')} of "
         f"{meta.get('cases')} cases done, {meta['shared']['database_status']}")
    if shared.dropped:
        echo(f"  {shared.dropped} results of this worker were dropped: another worker had "
             "finished those cases after this worker's claim on them expired")
    if shared.left_for_others:
        echo(f"  {shared.left_for_others} cases are left for models or strategies this "
             "machine cannot run: start a worker where they can run")
