"""Sweeps shared across machines: a worker creates or joins a run in PostgreSQL and works on it."""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

from experiments.define.prices import DEFAULT_PRICES
from experiments.run.prepare import git_commit
from experiments.store.connection import (
    SharedRunError,
    check_name,
    connect,
    database_errors,
    database_url,
)
from experiments.store.database import DatabaseRun, create, run_meta, stored


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


def _creation_meta(grid: Any) -> dict[str, Any]:
    import treadwise

    return {"grid_name": grid.name, "grid_file": str(grid.path), "description": grid.description,
            "cells": len(grid.cells()), "judge": grid.judge,
            "budget": {"max_calls": grid.max_calls, "max_cost_usd": grid.max_cost_usd},
            "package_version": treadwise.__version__, "git_commit": git_commit()}


def create_or_join(pool: Any, run_id: str, grid: Any | None) -> bool:
    """Whether this call made the run (from `grid`, when it did not exist yet);
    a grid that means something else than the run's is an error naming what differs."""
    mine = definition(grid) if grid is not None else None
    created = mine is not None and create(pool, run_id, grid, mine, _creation_meta(grid))
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
    return created


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
    from experiments.run.claims import SharedRun
    from experiments.run.runner import cache_file, saved_grid, sweep
    from treadwise.settings import Settings
    from treadwise.storage.postgres import describe

    grid = None
    if grid_path is not None:
        grid = load_grid(Path(grid_path))
        load_prices(grid.prices_file)
    created = create_or_join(pool, run_id, grid)
    folder = DatabaseRun(pool, run_id, Path(out_dir) / run_id).write_files()
    grid = grid or saved_grid(folder)
    shared = SharedRun(pool, run_id, claim_s=Settings.from_env().sweep_claim_s, limit=limit,
                       max_calls=grid.max_calls, max_cost_usd=grid.max_cost_usd, folder=folder)
    echo(f"{'created' if created else 'joined'} shared run {run_id} on {describe(url)} as "
         f"worker {shared.worker} (claims expire {shared.claim_s:g} s after its last "
         "heartbeat)")
    if retry_errors and (reopened := shared.reopen_errors()):
        echo(f"  {reopened} errored cases put back to be run again")
    sweep(grid, shared, resume=True, echo=echo, **options, plan_options={
        "limit": limit, "retry_errors": retry_errors, "cache": cache_file(cache, folder),
        "workers": workers or grid.workers, "shared": shared})
    _summary(pool, shared, echo)
    if report and shared.completed_here:
        from experiments.analyse.report import write_report

        echo(f"report: {write_report(shared.store)}")
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
