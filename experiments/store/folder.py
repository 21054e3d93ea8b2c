"""A run kept in a folder: records.jsonl, transcripts.jsonl, meta.json, the results.csv export;
naming, locking, listing."""

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
from experiments.store.legacy import legacy_records
from experiments.store.record import CaseRecord, CaseRow, latest
from experiments.store.records_file import (
    RECORDS_FILE,
    RecordsWriter,
    latest_statuses,
    read_fields,
    read_records,
    write_records,
)
from experiments.store.results_file import RESULTS_FILE, read_rows, status_of, write_results
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
from treadwise.replace_file import replace_text

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
    """A run folder: each case's record appended to records.jsonl and flushed as it finishes,
    beside its transcript in transcripts.jsonl; meta.json replaced whole at the start and the
    end of each attempt, and results.csv exported from the records when an attempt ends.

    The transcript goes first: a kill between the two leaves a transcript without a record,
    so the case runs again on resume and its later line wins, instead of a record nobody can
    read. A folder from before records.jsonl (results.csv alone) is read through
    store/legacy.py; resuming it moves its rows into records.jsonl first.
    """

    def __init__(self, folder: Path):
        self.folder = Path(folder)
        self.name = self.folder.name
        self._transcripts: TranscriptWriter | None = None
        self._records: RecordsWriter | None = None

    @property
    def legacy(self) -> bool:
        """A run made before records.jsonl: its rows are results.csv's."""
        return not (self.folder / RECORDS_FILE).exists() \
            and (self.folder / RESULTS_FILE).exists()

    @property
    def source(self) -> str:  # type: ignore[override]  # a folder's rows can change file
        if self.legacy:
            return f"`{RESULTS_FILE}` (a run made before `{RECORDS_FILE}`)"
        return f"`{RECORDS_FILE}` (exported as `{RESULTS_FILE}`)"

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
        if self.legacy:
            return {row["case_key"]: status_of(row)
                    for row in read_rows(self.folder / RESULTS_FILE)}
        return latest_statuses(self.folder / RECORDS_FILE)

    def meta(self) -> dict[str, Any]:
        return read_meta(self.folder)

    def start(self, meta: dict[str, Any]) -> None:
        write_meta(self.folder, meta)

    def open(self) -> FolderRun:
        if self.legacy:
            write_records(self.folder / RECORDS_FILE,
                          legacy_records(self.folder / RESULTS_FILE))
        self._records = RecordsWriter(self.folder / RECORDS_FILE)
        # A transcript a kill left without its record goes: every line then has its record.
        kept = Counter(r["case_key"] for r in read_fields(self.folder / RECORDS_FILE,
                                                          "case_key"))
        drop_unkept(self.folder / TRANSCRIPTS_FILE, kept)
        self._transcripts = TranscriptWriter(self.folder / TRANSCRIPTS_FILE)
        return self

    def append(self, record: CaseRecord) -> bool:
        if self._records is None or self._transcripts is None:
            raise RuntimeError("open the run folder before appending to it")
        record = record.redacted()
        self._transcripts.write(record.transcript)
        self._records.write(record.row)
        return True

    def finish(self, **changes: Any) -> None:
        """The attempt's metadata, and results.csv exported from the records so far."""
        update_meta(self.folder, **changes)
        if not self.legacy:
            write_results(self.folder / RESULTS_FILE, self.records())

    def close(self) -> None:
        for writer in (self._transcripts, self._records):
            if writer is not None:
                writer.close()
        self._transcripts = self._records = None

    def records(self) -> list[CaseRow]:
        if self.legacy:
            return latest(legacy_records(self.folder / RESULTS_FILE))
        return latest(read_records(self.folder / RECORDS_FILE))

    def rows(self) -> Any:
        if not holds_rows(self.folder):
            raise NoResults(f"{self.folder}: no {RECORDS_FILE} yet")
        return super().rows()

    def transcript(self, case: str) -> dict[str, Any]:
        return find_transcript(self.folder, case)

    def info(self) -> RunInfo:
        meta = self.meta()
        rows = len(read_rows(self.folder / RESULTS_FILE)) if self.legacy else len(
            read_fields(self.folder / RECORDS_FILE))
        return RunInfo(id=self.name, path=self.folder, created=_created(self.folder, meta),
                       rows=rows, has_report=(self.folder / REPORT_FILE).exists(),
                       grid=str(meta.get("grid_name", "")), status=run_status(meta),
                       cluster=ran_on_cluster(meta))


def holds_rows(path: Path) -> bool:
    """A run folder with case rows to read: records.jsonl, or an older run's results.csv."""
    return (Path(path) / RECORDS_FILE).exists() or (Path(path) / RESULTS_FILE).exists()


def is_run_folder(path: Path) -> bool:
    """A folder a sweep wrote (records.jsonl, results.csv or meta.json in it)."""
    return path.is_dir() and (holds_rows(path) or (path / META_FILE).exists())


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
    replace_text(Path(run_dir) / META_FILE, json.dumps(meta, indent=2, default=str) + "\n")


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
