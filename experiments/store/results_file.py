"""results.csv: one row per finished case, appended and flushed at once, read back after a kill."""

from __future__ import annotations

import csv
import io
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

from experiments.store.appending import AppendFile
from experiments.store.record import COLUMNS, STATUSES, typed_frame

RESULTS_FILE = "results.csv"


def _complete_length(data: bytes) -> int:
    """Bytes up to the end of the last complete record (a newline outside quotes)."""
    in_quotes = False
    end = 0
    for i, byte in enumerate(data):
        if byte == 0x22:  # '"': a doubled quote inside a field toggles twice, which is a no-op
            in_quotes = not in_quotes
        elif byte == 0x0A and not in_quotes:
            end = i + 1
    return end


def _parse(data: bytes) -> list[dict[str, str]]:
    text = data[:_complete_length(data)].decode("utf-8", errors="replace")
    reader = csv.reader(io.StringIO(text, newline=""))
    header = next(reader, None)
    if header is None:
        return []
    rows = []
    for record in reader:
        if len(record) == len(header):
            rows.append(dict(zip(header, record, strict=True)))
    return rows


def read_rows(path: Path) -> list[dict[str, str]]:
    """Every complete row of a results file; a record cut short by a kill is ignored."""
    try:
        return _parse(Path(path).read_bytes())
    except FileNotFoundError:
        return []


def status_of(row: dict[str, str]) -> str:
    """A row's status; rows written before the column existed are read from success/error."""
    if row.get("status") in STATUSES:
        return row["status"]
    if row.get("error_type"):
        return "error"
    return "ok" if row.get("success") in ("True", "true", True) else "failed"


def latest_statuses(path: Path) -> dict[str, str]:
    """case key -> status of its latest row (a case re-run with --retry-errors has several)."""
    return {row["case_key"]: status_of(row) for row in read_rows(path)}


def complete_text(path: Path) -> str:
    """The file's text up to its last complete record (what pandas may safely parse)."""
    data = Path(path).read_bytes()
    return data[:_complete_length(data)].decode("utf-8", errors="replace")


def read_frame(path: Path) -> Any:
    """Every complete row of a results file as a typed frame, the latest row of each case."""
    import pandas as pd

    df = pd.read_csv(io.StringIO(complete_text(path)), dtype=str, keep_default_na=False)
    return typed_frame(df, text=True)


def repair(path: Path) -> int:
    """Cut a half-written last record off the file so appending continues cleanly.

    Returns the number of bytes removed.
    """
    path = Path(path)
    if not path.exists():
        return 0
    data = path.read_bytes()
    keep = _complete_length(data)
    if keep < len(data):
        with path.open("r+b") as handle:
            handle.truncate(keep)
    return len(data) - keep


def _header(path: Path) -> tuple[str, ...]:
    with path.open(encoding="utf-8", newline="") as handle:
        return tuple(next(csv.reader(handle), ()))


def _cell(value: Any) -> Any:
    if value is None:
        return ""
    if isinstance(value, float):
        return round(value, 8)
    return value


def _record(values: Iterable[Any]) -> str:
    buffer = io.StringIO()
    csv.writer(buffer, lineterminator="\n").writerow(values)
    return buffer.getvalue()


class ResultsWriter:
    """Appends rows to results.csv under one lock; each row is written whole and flushed."""

    def __init__(self, path: Path):
        self.path = Path(path)
        repair(self.path)
        new = not self.path.exists() or self.path.stat().st_size == 0
        # A run resumed by a newer harness keeps its own header: rows follow its columns.
        self.columns = COLUMNS if new else _header(self.path) or COLUMNS
        self._file = AppendFile(self.path, newline="")
        if new:
            self._file.append(_record(COLUMNS))

    def write(self, values: Mapping[str, Any]) -> None:
        """Append one row: a CaseRow's fields (`vars(row)`), or any mapping of columns."""
        self._file.append(_record(_cell(values.get(column)) for column in self.columns))

    def close(self) -> None:
        self._file.close()

    def __enter__(self) -> ResultsWriter:
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()
