"""A finished case typed once: the row all formats and readers derive from, and its transcript."""

from __future__ import annotations

import types
import typing
from dataclasses import dataclass
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict

from experiments.define.schema import DEFAULT_STRATEGY
from treadwise.redaction import redact, redact_tree

# ok: every check passed; failed: a check failed; error: the provider or the harness failed,
# so the case says nothing about the configuration (it is left out of success rates).
STATUSES = ("ok", "failed", "error")
Status = Literal["ok", "failed", "error"]


class CaseRow(BaseModel):
    """A case's row of results.csv: the fields in column order, each with its type.

    A field added here is a new column at the end of new runs' files (a resumed run keeps its
    own header); readers of older files get it empty.
    """

    model_config = ConfigDict(frozen=True, extra="ignore")

    run_id: str
    case_key: str
    config_hash: str
    scenario: str
    repeat: int
    persona: str
    provider: str
    model: str
    model_spec: str
    temperature: float
    variation: str
    strategy: str
    category: str
    status: Status
    success: bool
    checks_passed: int
    checks_total: int
    failed_checks: str
    check_details: str
    latency_s: float
    model_calls: int
    iterations: int
    turn_iterations: str
    turn_model_calls: str
    stopped_by_cap: bool
    http_attempts: int
    retry_wait_s: float
    ttft_s: float | None
    usage_missing: bool
    cache_hits: int
    tool_sequence: str
    tool_errors: int
    tool_error_detail: str
    artifacts: int
    input_tokens: int
    output_tokens: int
    cost_usd: float | None  # None: the model has no price
    response_chars: int
    response_words: int
    hedges: int
    questions: int
    numbers: int
    units: int
    judge_score: int | None = None  # the judge's fields stay empty when the grid has none
    judge_reason: str | None = None
    judge_cached: bool | None = None
    answer: str
    error_type: str
    error_message: str
    seed: int
    timestamp: str
    package_version: str
    git_commit: str

    @property
    def paid_calls(self) -> int:
        """Model calls that cost something (answers from the response cache are free)."""
        return max(0, self.model_calls - self.cache_hits)


@dataclass(frozen=True)
class CaseRecord:
    """A finished case: its row and its transcript (one JSON line of transcripts.jsonl)."""

    row: CaseRow
    transcript: dict[str, Any]

    def redacted(self) -> CaseRecord:
        """The record as every store keeps it: no secret in any text of the row or the
        transcript (treadwise.redaction, the one list of shapes)."""
        texts = {name: redact(value) for name, value in vars(self.row).items()
                 if isinstance(value, str)}
        return CaseRecord(self.row.model_copy(update=texts), redact_tree(self.transcript))


COLUMNS: tuple[str, ...] = tuple(CaseRow.model_fields)


def _kind(annotation: Any) -> str:
    """numeric, flag or text: how a column is typed in a frame."""
    if isinstance(annotation, types.UnionType) or typing.get_origin(annotation) is typing.Union:
        annotation = next(a for a in typing.get_args(annotation) if a is not type(None))
    if annotation is bool:
        return "flag"
    return "numeric" if annotation in (int, float) else "text"


KINDS: dict[str, str] = {name: _kind(field.annotation)
                         for name, field in CaseRow.model_fields.items()}


def _status(df: Any) -> Any:
    """Rows written before the status column existed: an error type means error."""
    import numpy as np

    derived = np.where(df["error_type"] != "", "error", np.where(df["success"], "ok", "failed"))
    return df["status"].where(df["status"].isin(STATUSES), derived)


def typed_frame(df: Any, *, text: bool) -> Any:
    """Rows as a frame typed by CaseRow, the latest row of each case (a case re-run with
    --retry-errors has several).

    `text`: the values are results.csv's fields (strings); otherwise they are the rows' own
    values (from the database), which get results.csv's rounding so both read the same.
    Columns an older file lacks are added empty.
    """
    import pandas as pd

    for column, kind in KINDS.items():
        if column not in df:
            df[column] = "" if kind == "text" else (False if kind == "flag" else float("nan"))
        elif kind == "numeric":
            values = df[column] if text else df[column].map(_rounded)
            df[column] = pd.to_numeric(values, errors="coerce")
        elif kind == "flag":
            df[column] = (df[column].str.lower().eq("true") if text
                          else df[column].fillna(False).astype(bool))
        elif not text:
            df[column] = df[column].fillna("").astype(str)
    df["strategy"] = df["strategy"].replace("", DEFAULT_STRATEGY)
    df["status"] = _status(df)
    return df.drop_duplicates("case_key", keep="last").reset_index(drop=True)


def _rounded(value: Any) -> Any:
    """A float as results.csv keeps it (8 decimals)."""
    return round(value, 8) if isinstance(value, float) else value


def rows_frame(rows: list[CaseRow]) -> Any:
    """Rows as the runner made them, typed like the same rows read back from results.csv."""
    import pandas as pd

    return typed_frame(pd.DataFrame([dict(row) for row in rows], columns=list(COLUMNS)),
                       text=False)
