"""A finished case's record: its results row and its transcript."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class CaseRecord:
    """A finished case: its results.csv row and its transcript line."""

    row: dict[str, Any]
    transcript: dict[str, Any]
