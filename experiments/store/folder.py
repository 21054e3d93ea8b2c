"""A run kept in a folder: results.csv, transcripts.jsonl, meta.json; naming, locking, listing."""

from __future__ import annotations

import json
import logging
import os
import re
import secrets
from collections import Counter
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from experiments.define.prices import DEFAULT_PRICES
from experiments.store.record import CaseRecord
from experiments.store.results_file import (
    RESULTS_FILE,
    ResultsWriter,
    latest_statuses,
    read_frame,
    read_rows,
)
from experiments.store.run_store import (
    GRID_COPY,
    PRICES_COPY,
    REPORT_FILE,
    SCENARIOS_COPY,
    NoResults,
    RunInfo,
    RunStore,
    ran_on_cluster,
)
from experiments.store.transcripts_file import (
    TRANSCRIPTS_FILE,
    TranscriptWriter,
    drop_unkept,
    find_transcript,
)
from treadwise.privacy.redaction import redact

META_FILE = "meta.json"
LOCK_FILE = ".lock"

log = logging.getLogger(__name__)


class RunBusy(RuntimeError):
    """Another process is running this run folder right now."""


def _copy_redacted(source: Path, copy: Path) -> None:
    """Copy a file the run reads, without any secret in it (a resume reads the copy, so a
    scenario quoting a key or card number runs on with the redaction marker in its place)."""
    text = source.read_text(encoding="utf-8")
    kept = redact(text)
    if kept != text:
        log.warning("%s: secrets redacted in the run's copy %s", source, copy.name)
    copy.write_text(kept, encoding="utf-8")


class FolderRun(RunStore):
    """A run folder: a row appended to results.csv and flushed per case, beside its transcript
    in transcripts.jsonl; meta.json replaced whole at the start and the end of each attempt.

    The transcript goes first: a kill between the two leaves a transcript without a row, so
    the case runs again on resume and its later line wins, instead of a row nobody can read.
    """

    source = f"`{RESULTS_FILE}`"

    def __init__(self, folder: Path):
        self.folder = Path(folder)
        self.name = self.folder.name
        self._transcripts: TranscriptWriter | None = None
        self._rows: ResultsWriter | None = None

    @classmethod
    def create(cls, grid: Any, out_dir: Path) -> FolderRun:
        """A new run folder under `out_dir` for `grid`, with copies of the files it reads (a
        resume reads the copies)."""
        folder = Path(out_dir) / new_run_id(grid.name)
        folder.mkdir(parents=True)
        for source, copy in ((grid.path, GRID_COPY), (grid.scenarios_file, SCENARIOS_COPY),
                             (grid.prices_file or DEFAULT_PRICES, PRICES_COPY)):
            _copy_redacted(Path(source), folder / copy)
        return cls(folder)

    def locked(self) -> Any:
        """Hold the folder's lock while running it (RunBusy when another process does)."""
        return locked(self.folder)

    def finished(self) -> dict[str, str]:
        return latest_statuses(self.folder / RESULTS_FILE)

    def meta(self) -> dict[str, Any]:
        return read_meta(self.folder)

    def start(self, meta: dict[str, Any]) -> None:
        write_meta(self.folder, meta)

    def open(self) -> FolderRun:
        self._rows = ResultsWriter(self.folder / RESULTS_FILE)
        # A transcript a kill left without its row goes: every line then has its row.
        kept = Counter(row["case_key"] for row in read_rows(self.folder / RESULTS_FILE))
        drop_unkept(self.folder / TRANSCRIPTS_FILE, kept)
        self._transcripts = TranscriptWriter(self.folder / TRANSCRIPTS_FILE)
        return self

    def append(self, record: CaseRecord) -> bool:
        if self._rows is None or self._transcripts is None:
            raise RuntimeError("open the run folder before appending to it")
        record = record.redacted()
        self._transcripts.write(record.transcript)
        self._rows.write(vars(record.row))
        return True

    def finish(self, **changes: Any) -> None:
        update_meta(self.folder, **changes)

    def close(self) -> None:
        for writer in (self._transcripts, self._rows):
            if writer is not None:
                writer.close()
        self._transcripts = self._rows = None

    def rows(self) -> Any:
        path = self.folder / RESULTS_FILE
        if not path.exists():
            raise NoResults(f"{self.folder}: no {RESULTS_FILE} yet")
        frame = read_frame(path)
        if frame.empty:
            raise NoResults(f"{self.folder}: {RESULTS_FILE} has no finished cases yet")
        return frame

    def transcript(self, case: str) -> dict[str, Any]:
        return find_transcript(self.folder, case)

    def info(self) -> RunInfo:
        meta = self.meta()
        return RunInfo(id=self.name, path=self.folder, created=_created(self.folder, meta),
                       rows=len(read_rows(self.folder / RESULTS_FILE)),
                       has_report=(self.folder / REPORT_FILE).exists(),
                       grid=str(meta.get("grid_name", "")), status=run_status(meta),
                       cluster=ran_on_cluster(meta))


def is_run_folder(path: Path) -> bool:
    """A folder a sweep wrote (results.csv or meta.json in it)."""
    return path.is_dir() and ((path / RESULTS_FILE).exists() or (path / META_FILE).exists())


def list_folders(results_dir: Path) -> list[RunInfo]:
    """Every run folder under `results_dir`, newest first."""
    results_dir = Path(results_dir)
    if not results_dir.is_dir():
        return []
    runs = [FolderRun(path).info() for path in results_dir.iterdir() if is_run_folder(path)]
    return sorted(runs, key=lambda r: (r.created, r.id), reverse=True)


def new_run_id(grid_name: str, now: datetime | None = None) -> str:
    """Sortable and unique: UTC time, the grid's name and a short random tail."""
    now = now or datetime.now(UTC)
    slug = re.sub(r"[^a-z0-9]+", "-", grid_name.lower()).strip("-")[:24] or "grid"
    return f"{now:%Y%m%d-%H%M%S}-{slug}-{secrets.token_hex(2)}"


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
