"""A run store's one face: write a run (start, append each case, finish) and read it back."""

from __future__ import annotations

from abc import ABC, abstractmethod
from contextlib import AbstractContextManager, nullcontext
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any, Protocol

from experiments.store.record import CaseRecord, CaseRow, records_frame

# What every run keeps beside its rows: copies of the files it was run from.
GRID_COPY, SCENARIOS_COPY, PRICES_COPY = "grid.yaml", "scenarios.yaml", "prices.yaml"
CASES_DIR = "cases"  # each case's own data dir (leads.db, plots), under the run's folder
REPORT_FILE = "report.md"


class NoResults(ValueError):
    """A run has no finished case to read yet."""


@dataclass(frozen=True)
class RunInfo:
    """One line of `python -m experiments list`."""

    id: str
    path: Path
    created: datetime
    rows: int
    has_report: bool
    grid: str = ""
    status: str = ""
    shared: bool = False  # its rows are in the database, not in a folder
    cluster: bool = False  # some of its cases ran on a Dask cluster


def ran_on_cluster(meta: dict[str, Any]) -> bool:
    """Whether any attempt of a run sent its cases to a Dask cluster (meta.json's fields)."""
    return bool(meta.get("cluster")) or any(
        isinstance(a, dict) and a.get("cluster") for a in meta.get("attempts") or [])


class RunWriter(Protocol):
    """What the runner needs of where it keeps a run (`with` opens it for appending)."""

    name: str
    folder: Path

    def finished(self) -> dict[str, str]:
        """case key -> status of each case already done (its latest row)."""

    def meta(self) -> dict[str, Any]:
        """The run's metadata (meta.json's fields)."""

    def start(self, meta: dict[str, Any]) -> None:
        """An attempt at the run begins with this metadata."""

    def append(self, record: CaseRecord) -> bool:
        """Keep a finished case, at once (a kill loses nothing kept); safe from several
        threads. False when the case was kept already and this record is dropped."""

    def finish(self, **changes: Any) -> None:
        """The attempt ended: its status, spending and budget stop go into the metadata."""

    def close(self) -> None: ...

    def __enter__(self) -> RunWriter: ...

    def __exit__(self, *exc: Any) -> None: ...


class RunStore(ABC):
    """One run, written and read through one face, whichever place keeps it.

    `name` is the run's id; `folder` is this machine's folder of it (its files, the case data
    dirs, the report); `source` says in the report where its rows were read from.
    """

    name: str
    folder: Path
    source: str

    @abstractmethod
    def finished(self) -> dict[str, str]: ...

    @abstractmethod
    def meta(self) -> dict[str, Any]: ...

    @abstractmethod
    def start(self, meta: dict[str, Any]) -> None: ...

    @abstractmethod
    def append(self, record: CaseRecord) -> bool: ...

    @abstractmethod
    def finish(self, **changes: Any) -> None: ...

    @abstractmethod
    def records(self) -> list[CaseRow]:
        """The run's records as it keeps them, the latest of each case, in the order their
        latest records came."""

    def rows(self) -> Any:
        """The records as the frame the analysis reads (CaseRow's columns, lists kept);
        NoResults when there is none."""
        rows = self.records()
        if not rows:
            raise NoResults(f"{self.name}: no finished cases yet")
        return records_frame(rows)

    @abstractmethod
    def transcript(self, case: str) -> dict[str, Any]:
        """One case's transcript: its key, or any part of a key that only one case has."""

    @abstractmethod
    def info(self) -> RunInfo: ...

    def judge_errors(self) -> set[str]:
        """The cases whose latest row says the judge failed (--retry-errors runs them again)."""
        return {row.case_key for row in self.records() if row.judge_status == "judge_error"}

    def open(self) -> RunStore:
        """Get ready to append (the folder opens its files)."""
        return self

    def locked(self) -> AbstractContextManager[Any]:
        """Held while a process runs the run, so two never append to it at once."""
        return nullcontext()

    def prepare_folder(self) -> Path:
        """This machine's folder of the run, holding the run's files (what a resume reads)."""
        return self.folder

    def close(self) -> None:  # noqa: B027 - a store with nothing open has nothing to do
        """Flush what was appended and let go of the files."""

    def __enter__(self) -> RunStore:
        return self.open()

    def __exit__(self, *exc: Any) -> None:
        self.close()
