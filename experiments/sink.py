"""Where a sweep gets its next case and puts each finished one: the seam another backend (a
shared database for workers on several machines) implements instead of the run folder."""

from __future__ import annotations

import threading
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

from experiments.grid import Case
from experiments.results import RESULTS_FILE, ResultsWriter, latest_statuses
from experiments.transcripts import TRANSCRIPTS_FILE, TranscriptWriter


@dataclass(frozen=True)
class CaseRecord:
    """A finished case: its results.csv row and its transcript line."""

    row: dict[str, Any]
    transcript: dict[str, Any]


class CaseSource(Protocol):
    def claim(self) -> Case | None:
        """The next case for this worker to run (no other worker gets it), or None."""


class ResultsSink(Protocol):
    def finished(self) -> dict[str, str]:
        """case key -> status of every case already done."""

    def write(self, record: CaseRecord) -> None:
        """Keep a finished case; safe to call from several threads."""

    def close(self) -> None: ...


class CaseQueue:
    """The cases of one process's plan, handed out in order."""

    def __init__(self, cases: Iterable[Case]):
        self._cases = iter(cases)
        self._lock = threading.Lock()

    def claim(self) -> Case | None:
        with self._lock:
            return next(self._cases, None)


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
        self._rows.write(record.row)

    def close(self) -> None:
        for writer in (self._transcripts, self._rows):
            if writer is not None:
                writer.close()

    def __enter__(self) -> RunFolder:
        return self.open()

    def __exit__(self, *exc: Any) -> None:
        self.close()
