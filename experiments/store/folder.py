"""Run folders under results/: naming, metadata (meta.json) and listing them newest first."""

from __future__ import annotations

import json
import os
import re
import secrets
import subprocess
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from experiments.store.record import CaseRecord
from experiments.store.results_file import RESULTS_FILE, ResultsWriter, latest_statuses, read_rows
from experiments.store.transcripts_file import TRANSCRIPTS_FILE, TranscriptWriter

META_FILE = "meta.json"
REPORT_FILE = "report.md"
LOCK_FILE = ".lock"
REPO_ROOT = Path(__file__).resolve().parents[2]


@dataclass(frozen=True)
class RunInfo:
    id: str
    path: Path
    created: datetime
    rows: int
    has_report: bool
    grid: str = ""
    status: str = ""
    shared: bool = False  # a run in the database (experiments/shared.py), not a folder


def new_run_id(grid_name: str, now: datetime | None = None) -> str:
    """Sortable and unique: UTC time, the grid's name and a short random tail."""
    now = now or datetime.now(UTC)
    slug = re.sub(r"[^a-z0-9]+", "-", grid_name.lower()).strip("-")[:24] or "grid"
    return f"{now:%Y%m%d-%H%M%S}-{slug}-{secrets.token_hex(2)}"


def git_commit(root: Path = REPO_ROOT) -> str:
    """The checked-out commit of the project, or "unknown" outside a git checkout."""
    try:
        done = subprocess.run(["git", "rev-parse", "HEAD"], cwd=root, capture_output=True,
                              text=True, timeout=5, check=False)
    except (OSError, subprocess.SubprocessError):
        return "unknown"
    commit = done.stdout.strip()
    return commit if done.returncode == 0 and re.fullmatch(r"[0-9a-f]{40}", commit) else "unknown"


def read_meta(run_dir: Path) -> dict[str, Any]:
    try:
        return json.loads((Path(run_dir) / META_FILE).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}


def alive(pid: Any) -> bool:
    """Whether a process with this id exists on this machine."""
    try:
        os.kill(int(pid), 0)
    except (ProcessLookupError, ValueError, TypeError):
        return False
    except PermissionError:
        return True  # someone else's process: it exists
    return True


def run_status(meta: dict[str, Any]) -> str:
    """The status meta.json records, except that a "running" run whose process is gone (killed,
    crashed, machine restarted) is "interrupted": resume it with --resume."""
    status = str(meta.get("status", ""))
    if status == "running" and "pid" in meta and not alive(meta["pid"]):
        return "interrupted"
    return status


def write_meta(run_dir: Path, meta: dict[str, Any]) -> None:
    """Replace meta.json atomically, so a kill never leaves it half written."""
    path = Path(run_dir) / META_FILE
    tmp = path.with_suffix(".json.tmp")
    tmp.write_text(json.dumps(meta, indent=2, default=str) + "\n", encoding="utf-8")
    os.replace(tmp, path)


def update_meta(run_dir: Path, **changes: Any) -> dict[str, Any]:
    meta = {**read_meta(run_dir), **changes}
    write_meta(run_dir, meta)
    return meta


class RunBusy(RuntimeError):
    """Another process is running this run folder right now."""


@contextmanager
def locked(run_dir: Path) -> Iterator[None]:
    """Hold the run folder's lock so two processes never append to the same run.

    The operating system drops the lock when its process ends, even by SIGKILL, so a killed
    sweep can be resumed at once.
    """
    try:
        import fcntl
    except ImportError:  # not POSIX: no lock, as before
        yield
        return
    with (Path(run_dir) / LOCK_FILE).open("a+") as handle:
        try:
            fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            handle.seek(0)
            owner = handle.read().strip() or "another process"
            raise RunBusy(f"{run_dir} is being run right now by {owner}; wait for it to "
                          "finish (or stop it) before resuming") from None
        handle.seek(0)
        handle.truncate()
        handle.write(f"pid {os.getpid()}")
        handle.flush()
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


def _created(run_dir: Path, meta: dict[str, Any]) -> datetime:
    raw = meta.get("created")
    if isinstance(raw, str):
        try:
            return datetime.fromisoformat(raw)
        except ValueError:
            pass
    return datetime.fromtimestamp(run_dir.stat().st_mtime, UTC)


def list_runs(results_dir: Path) -> list[RunInfo]:
    """Every run folder (one holding results.csv or meta.json), newest first."""
    results_dir = Path(results_dir)
    if not results_dir.is_dir():
        return []
    runs = []
    for path in results_dir.iterdir():
        if not path.is_dir() or not ((path / RESULTS_FILE).exists()
                                     or (path / META_FILE).exists()):
            continue
        meta = read_meta(path)
        runs.append(RunInfo(
            id=path.name, path=path, created=_created(path, meta),
            rows=len(read_rows(path / RESULTS_FILE)), has_report=(path / REPORT_FILE).exists(),
            grid=str(meta.get("grid_name", "")), status=run_status(meta),
        ))
    return sorted(runs, key=lambda r: (r.created, r.id), reverse=True)


class RunFolder:
    """results.csv (a row appended and flushed per case) beside transcripts.jsonl.

    The transcript goes first: a kill between the two leaves a transcript without a row, so
    the case runs again on resume and its later line wins, instead of a row nobody can read.
    """

    def __init__(self, run_dir: Path):
        self.run_dir = Path(run_dir)
        self._transcripts: TranscriptWriter | None = None
        self._rows: ResultsWriter | None = None

    def finished(self) -> dict[str, str]:
        return latest_statuses(self.run_dir / RESULTS_FILE)

    def open(self) -> RunFolder:
        self._transcripts = TranscriptWriter(self.run_dir / TRANSCRIPTS_FILE)
        self._rows = ResultsWriter(self.run_dir / RESULTS_FILE)
        return self

    def write(self, record: CaseRecord) -> None:
        if self._rows is None or self._transcripts is None:
            raise RuntimeError("open the run folder before writing to it")
        self._transcripts.write(record.transcript)
        self._rows.write(vars(record.row))

    def close(self) -> None:
        for writer in (self._transcripts, self._rows):
            if writer is not None:
                writer.close()

    def __enter__(self) -> RunFolder:
        return self.open()

    def __exit__(self, *exc: Any) -> None:
        self.close()
