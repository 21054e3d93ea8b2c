"""results.csv: the export of a run's records (one row per case), and reading its cells back.

The columns are CaseRow's fields in order (`COLUMNS`). A list or mapping cell (failed_checks,
check_details, turn_model_calls, tool_sequence...) holds its value as JSON, so nothing is lost
to a separator a check name may contain; an empty number is an empty cell. Runs made before
records.jsonl appended their rows here instead, joined with separators (`store/legacy.py`
reads those); a kill could leave their last record half written, which readers ignore.
"""

from __future__ import annotations

import csv
import io
import json
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from experiments.store.record import COLUMNS, STATUSES, CaseRow
from treadwise.replace_file import replacing

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


def cell(value: Any) -> Any:
    """A value as its results.csv cell: a list or mapping as JSON, None as an empty cell."""
    if value is None:
        return ""
    if isinstance(value, list | dict | tuple):
        return json.dumps(value, ensure_ascii=False, separators=(",", ":"))
    return value


def _record(values: Iterable[Any]) -> str:
    buffer = io.StringIO()
    csv.writer(buffer, lineterminator="\n").writerow(values)
    return buffer.getvalue()


def write_results(path: Path, rows: Iterable[CaseRow]) -> Path:
    """Export records as results.csv, replacing the file at once (a reader never sees half)."""
    path = Path(path)
    with replacing(path, newline="") as handle:
        handle.write(_record(COLUMNS))
        for row in rows:
            handle.write(_record(cell(getattr(row, column)) for column in COLUMNS))
    return path


def data_cell(text: str) -> Any:
    """A list or mapping cell written as JSON, or None when the cell is not JSON (an older
    run's joined text)."""
    if not text.startswith(("[", "{")):
        return None
    try:
        value = json.loads(text)
    except ValueError:
        return None
    return value if isinstance(value, list | dict) else None

