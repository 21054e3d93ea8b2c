"""Which runs exist and where: the only place that decides between a folder and the database."""

from __future__ import annotations

import sys
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from experiments.store.folder import FolderRun, holds_rows, list_folders, new_run_id
from experiments.store.run_store import RunInfo, RunStore

if TYPE_CHECKING:
    from experiments.store.database import DatabaseRun

RESULTS_DIR = Path("results")


def _database_configured() -> bool:
    from treadwise.settings import Settings

    return bool(Settings.from_env().database_url)


def _pool() -> object:
    from experiments.store.connection import connect, database_url

    return connect(database_url())


def open_run(run: Path | str, results_dir: Path = RESULTS_DIR) -> RunStore:
    """The run `run` names, to read (and report into).

    A folder holding rows (records.jsonl, or an older run's results.csv) is always that
    folder. Otherwise, with TREADWISE_DATABASE_URL set, a run of that name in the database,
    whose folder here is the path given (or RESULTS_DIR/NAME for a name alone). Otherwise the
    folder, which may have no rows yet.
    """
    path = Path(run)
    if holds_rows(path) or not _database_configured():
        return FolderRun(path)
    from experiments.store.connection import database_errors
    from experiments.store.database import DatabaseRun, run_meta

    pool = _pool()
    with database_errors():
        if run_meta(pool, path.name) is None:
            return FolderRun(path)
    return DatabaseRun(pool, path.name, path if path.parent != Path() else results_dir / path)


def new_run(grid: Any, results_dir: Path = RESULTS_DIR) -> RunStore:
    """A new run of `grid`: in the database when TREADWISE_DATABASE_URL is set (its folder here
    RESULTS_DIR/NAME), otherwise a new folder under RESULTS_DIR."""
    if not _database_configured():
        return FolderRun.create(grid, results_dir)
    from experiments.store.connection import database_errors
    from experiments.store.database import DatabaseRun, create

    pool, name = _pool(), new_run_id(grid.name)
    with database_errors():
        create(pool, name, grid, {"grid_name": grid.name, "grid_file": str(grid.path)})
    run = DatabaseRun(pool, name, Path(results_dir) / name)
    run.write_files()
    return run


def database_run(name: str, results_dir: Path = RESULTS_DIR) -> DatabaseRun:
    """The run of this name in the database (TREADWISE_DATABASE_URL), whatever folders exist;
    its folder here is RESULTS_DIR/NAME."""
    from experiments.store.connection import SharedRunError, check_name, database_errors
    from experiments.store.database import DatabaseRun, run_meta

    pool = _pool()
    with database_errors():
        if run_meta(pool, check_name(name)) is None:
            raise SharedRunError(f"no shared run {name!r} in the database")
    return DatabaseRun(pool, name, Path(results_dir) / name)


def shared_run(name: str, results_dir: Path = RESULTS_DIR) -> RunStore | None:
    """The database run of this name (its folder here RESULTS_DIR/NAME), or None: no database
    configured, no such run, or a name no run can have."""
    if not _database_configured():
        return None
    try:
        return database_run(name, results_dir)
    except ValueError:  # a bad name, no such run, or the database unreadable (said elsewhere)
        return None


def list_runs(results_dir: Path = RESULTS_DIR, *, database: bool = True,
              warn: Callable[[str], None] | None = None) -> list[RunInfo]:
    """Every run folder under `results_dir` and (unless `database` is False, and when
    TREADWISE_DATABASE_URL is set) every run in the database, newest first. A database that
    cannot be read is said through `warn` (stderr by default); the folders are listed all the
    same."""
    runs = list_folders(results_dir)
    if database and _database_configured():
        from experiments.store.database import list_database

        try:
            runs += list_database(_pool())
        except ValueError as exc:
            (warn or _stderr)(f"note: shared runs not listed: {exc}")
    return sorted(runs, key=lambda r: (r.created, r.id), reverse=True)


def _stderr(line: str) -> None:
    print(line, file=sys.stderr)
