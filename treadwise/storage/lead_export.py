"""Lead export: stored customer leads as CSV (safe to open in a spreadsheet) or JSON lines."""

from __future__ import annotations

import csv
import json
import unicodedata
from typing import Any, Literal, TextIO

from treadwise.errors import redact
from treadwise.storage.leads import LeadStore

LEAD_COLUMNS = ("id", "created_at", "email", "name", "message")
# A spreadsheet treats a cell starting with one of these as a formula (OWASP CSV injection).
FORMULA_PREFIXES = ("=", "+", "-", "@", "\t", "\r")


def neutralise_cell(value: object) -> object:
    """Text that a spreadsheet would run as a formula, prefixed with ' so it stays text.

    Lookalikes count too: some spreadsheets read a fullwidth ＝ (or ＋ － ＠, or the small
    forms ﹦ ﹢ ﹣ ﹫) as the ASCII sign, and NFKC folds each of them onto it; so do leading
    spaces.
    """
    if not isinstance(value, str):
        return value
    start = unicodedata.normalize("NFKC", value.lstrip(" \u3000")[:1])
    if value.startswith(FORMULA_PREFIXES) or start.startswith(FORMULA_PREFIXES):
        return "'" + value
    return value


def _safe_row(row: dict[str, Any]) -> dict[str, Any]:
    # Rows stored before secrets were redacted on the way in are redacted on the way out.
    return {key: redact(row[key]) if isinstance(row[key], str) else row[key]
            for key in LEAD_COLUMNS}


def export_leads(store: LeadStore, fmt: Literal["csv", "jsonl"], out: TextIO) -> int:
    """Write every lead to `out` as CSV (with a header) or JSON lines; returns rows written."""
    if fmt not in ("csv", "jsonl"):
        raise ValueError(f"unknown export format {fmt!r}; use csv or jsonl")
    rows = [_safe_row(row) for row in store.leads()]
    if fmt == "csv":
        writer = csv.DictWriter(out, fieldnames=LEAD_COLUMNS, lineterminator="\n")
        writer.writeheader()
        for row in rows:
            writer.writerow({key: neutralise_cell(row[key]) for key in LEAD_COLUMNS})
    else:
        for row in rows:
            out.write(json.dumps({key: row[key] for key in LEAD_COLUMNS}, ensure_ascii=False))
            out.write("\n")
    return len(rows)
