"""records.jsonl: the canonical records of a run folder, one CaseRow JSON line per finished case."""

from __future__ import annotations

import json
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from experiments.store.appending import AppendFile
from experiments.store.record import CaseRow
from experiments.store.transcripts_file import repair
from treadwise.replace_file import replacing

RECORDS_FILE = "records.jsonl"


class RecordsError(ValueError):
    """A complete line of records.jsonl is not a case record (one line naming it)."""


def record_line(row: CaseRow) -> str:
    """A record as one line of JSON: what records.jsonl and the database both keep."""
    return row.model_dump_json()


def _complete_lines(path: Path) -> Iterator[tuple[int, str]]:
    """(line number, line) of every complete line; the last one a kill cut short is left out."""
    try:
        # A kill may cut the last line inside a character: that line is left out anyway.
        handle = Path(path).open(encoding="utf-8", errors="replace")
    except FileNotFoundError:
        return
    with handle:
        for number, line in enumerate(handle, 1):
            if line.endswith("\n") and line.strip():
                yield number, line


def read_records(path: Path) -> list[CaseRow]:
    """Every record of the file in the order written (a case run again has several)."""
    rows = []
    for number, line in _complete_lines(path):
        try:
            rows.append(CaseRow.model_validate_json(line))
        except ValidationError as exc:
            raise RecordsError(f"{path}:{number}: not a case record: "
                               f"{exc.errors()[0].get('msg', exc)}") from None
    return rows


def read_fields(path: Path, *names: str) -> list[dict[str, Any]]:
    """A few fields of every record, without typing whole records (what resuming reads)."""
    found = []
    for _, line in _complete_lines(path):
        try:
            values = json.loads(line)
        except ValueError:
            continue
        found.append({name: values.get(name) for name in names})
    return found


def latest_statuses(path: Path) -> dict[str, str]:
    """case key -> status of its latest record."""
    return {r["case_key"]: r["status"] for r in read_fields(path, "case_key", "status")}


def write_records(path: Path, rows: Iterable[CaseRow]) -> None:
    """Write a whole records file at once (an export, a migrated folder): readers never see
    half of it."""
    path = Path(path)
    with replacing(path) as handle:
        for row in rows:
            handle.write(record_line(row) + "\n")


class RecordsWriter:
    """Appends one line per case and flushes it; a kill leaves at most one partial line,
    which is cut off when the file is next opened for appending."""

    def __init__(self, path: Path):
        self.path = Path(path)
        repair(self.path)
        self._file = AppendFile(self.path)

    def write(self, row: CaseRow) -> None:
        self._file.append(record_line(row) + "\n")

    def close(self) -> None:
        self._file.close()
