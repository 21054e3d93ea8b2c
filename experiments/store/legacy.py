"""Runs from before lists were kept as lists: their results.csv rows (and database rows) read
back as case records.

Those runs appended their rows to results.csv as text, lists joined with separators (failed
checks with ";", reasons with " | ", per-turn counts with "|", tools with ">" within a turn
and " | " between turns); the database kept the same joined text inside its JSON. This is the
one place that splits them again, so every reader gets the same records a new run keeps; a
cell already written as JSON (an export) is read as JSON. Columns a file lacks get the field's
default (a number 0 or NaN, a list empty).
"""

from __future__ import annotations

import json
import math
import types
import typing
from collections.abc import Callable
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from experiments.define.schema import DEFAULT_STRATEGY
from experiments.store.record import KINDS, CaseRow
from experiments.store.results_file import data_cell, read_rows, status_of


def _counts(text: str) -> list[int]:
    return [int(v) for v in text.split("|") if v.strip().isdigit()]


def _details(text: str) -> dict[str, str]:
    return dict(d.split(": ", 1) for d in text.split(" | ") if ": " in d)


def _tools(text: str) -> list[list[str]]:
    if not text:
        return []
    return [[n for n in turn.split(">") if n and n != "(none)"] for turn in text.split(" | ")]


def _scores(text: str) -> list[int | None]:
    return [None if v == "-" else int(v) for v in text.split("|") if v == "-" or v.isdigit()]


def _toolsets(text: str) -> list[list[str] | None]:
    if not text:
        return []
    return [None if t == "all" else [] if t == "none" else t.split("+")
            for t in text.split(" | ")]


JOINED: dict[str, Callable[[str], Any]] = {
    "failed_checks": lambda text: [c for c in text.split(";") if c],
    "check_details": _details, "turn_iterations": _counts, "turn_model_calls": _counts,
    "tool_sequence": _tools, "judge_scores": _scores, "toolsets": _toolsets,
}


def _base(annotation: Any) -> tuple[Any, bool]:
    """(the type, whether None is allowed) of a field."""
    if isinstance(annotation, types.UnionType) or typing.get_origin(annotation) is typing.Union:
        args = typing.get_args(annotation)
        return next(a for a in args if a is not type(None)), type(None) in args
    return annotation, False


def _number(text: str, kind: Any) -> float | int | None:
    try:
        value = float(text)
    except ValueError:
        return None
    if kind is int:
        return int(value) if value.is_integer() else None
    return value


def _missing(name: str) -> Any:
    """What a field reads as when an older file has no value for it."""
    kind, optional = _base(CaseRow.model_fields[name].annotation)
    if optional:
        return None
    return {"flag": False, "data": {} if typing.get_origin(kind) is dict else [],
            "numeric": 0 if kind is int else math.nan}.get(KINDS[name], "")


def _value(name: str, text: str) -> Any:
    kind = KINDS[name]
    if kind == "data":
        decoded = data_cell(text)
        return decoded if decoded is not None else JOINED[name](text)
    if kind == "maybe":
        return {"true": True, "false": False}.get(text.lower())
    if kind == "flag":
        return None if not text and _base(CaseRow.model_fields[name].annotation)[1] \
            else text.lower() == "true"
    if kind == "numeric":
        found = _number(text, _base(CaseRow.model_fields[name].annotation)[0])
        return _missing(name) if found is None else found
    return text if text or not _base(CaseRow.model_fields[name].annotation)[1] else None


def legacy_row(cells: dict[str, str]) -> CaseRow:
    """One row of an older results.csv as a record."""
    values: dict[str, Any] = {}
    for name, field in CaseRow.model_fields.items():
        if name in cells:
            values[name] = _value(name, cells[name])
        elif field.is_required():
            values[name] = _missing(name)
    values["status"] = status_of(cells)
    values["strategy"] = values.get("strategy") or DEFAULT_STRATEGY
    return CaseRow.model_validate(values)


def legacy_records(path: Path) -> list[CaseRow]:
    """Every complete row of an older results.csv as a record, in file order."""
    return [legacy_row(cells) for cells in read_rows(path)]


def database_record(text: str) -> CaseRow:
    """A record as the database keeps it (its JSON line); a row kept before lists were lists
    has its joined text split."""
    try:
        return CaseRow.model_validate_json(text)
    except ValidationError:
        values = json.loads(text)
        for name, split in JOINED.items():
            if isinstance(values.get(name), str):
                values[name] = split(values[name])
        return CaseRow.model_validate(values)
