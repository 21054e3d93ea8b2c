"""A finished case typed once: the row all formats and readers derive from, and its transcript."""

from __future__ import annotations

import types
import typing
from dataclasses import dataclass
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict

from experiments.define.schema import DEFAULT_STRATEGY
from treadwise.privacy.redaction import redact_tree

# ok: every check passed; failed: a check failed; error: the provider or the harness failed,
# so the case says nothing about the configuration (it is left out of success rates).
STATUSES = ("ok", "failed", "error")
Status = Literal["ok", "failed", "error"]
# A yes/no that may not apply: read back as pandas' nullable boolean (missing stays missing,
# so "no capability check" never reads as "failed").
TRI_STATE = "tri-state"
Maybe = Annotated[bool | None, TRI_STATE]


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
    # Columns added after the first 53 (outside readers rely on those keeping their order).
    # Task success apart from safe behaviour: capability checks need something done, safety
    # checks something not done (doing nothing passes them); None: the case has no check of
    # that kind, or it errored.
    capability: Maybe = None
    safe: Maybe = None
    capability_checks_passed: int = 0
    capability_checks_total: int = 0
    safety_checks_passed: int = 0
    safety_checks_total: int = 0
    check_share: float | None = None  # checks passed / checks run
    # The model's tool calls: attempted, with readable arguments, naming a tool that exists.
    tools_attempted: int = 0
    tools_parsed: int = 0
    tools_known: int = 0
    first_tool: str = ""
    first_tool_right: Maybe = None  # None: the scenario expects no particular tool
    args_right: Maybe = None  # every tool_args check passed; None: it has none
    steps_credited: float | None = None  # share of the tools it expects that ran cleanly
    # The judge: ok or judge_error ("" without a judge), each sample's score, their agreement
    # (share of sample pairs that agree), and what judging cost (not in the columns above).
    judge_status: str = ""
    judge_scores: str = ""
    judge_agreement: float | None = None
    judge_calls: int = 0
    judge_input_tokens: int = 0
    judge_output_tokens: int = 0
    judge_cost_usd: float | None = None
    # Per model call (TurnResult.calls.per_call; the whole list is in the transcript).
    call_records: int = 0
    input_tokens_per_call_p50: float | None = None
    input_tokens_per_call_max: int | None = None
    output_tokens_per_call_p50: float | None = None
    request_bytes_per_call_p50: float | None = None  # None: no HTTP request (offline, local)
    request_bytes_per_call_max: int | None = None
    tools_bound_per_call_p50: float | None = None
    http_retries: int = 0  # requests beyond each call's first
    routing: str = ""  # the agent's tool routing mode (on, compact, off)
    toolsets: str = ""  # per turn, the tool groups its first call bound ("all": no routing)
    decoding: str = ""  # a local model's decoding (free, constrained); "" for other models
    model_routing: str = ""  # a local model's own routing (none, tool); "" for other models
    prompt_hash: str = ""  # the persona's prompt, rubric and profile (in the config hash)

    @property
    def paid_calls(self) -> int:
        """Requests that cost something: model calls not answered from the response cache,
        and the judge's."""
        return max(0, self.model_calls - self.cache_hits) + self.judge_calls

    @property
    def total_cost_usd(self) -> float | None:
        """The case's estimated cost, the judge's included; None when neither is priced."""
        costs = [c for c in (self.cost_usd, self.judge_cost_usd) if c is not None]
        return sum(costs) if costs else None


@dataclass(frozen=True)
class CaseRecord:
    """A finished case: its row and its transcript (one JSON line of transcripts.jsonl)."""

    row: CaseRow
    transcript: dict[str, Any]

    def redacted(self) -> CaseRecord:
        """The record as every store keeps it: no secret in any text of the row or the
        transcript (treadwise.privacy.redaction, the one list of shapes)."""
        texts = redact_tree({name: value for name, value in vars(self.row).items()
                             if isinstance(value, str)})
        return CaseRecord(self.row.model_copy(update=texts), redact_tree(self.transcript))


COLUMNS: tuple[str, ...] = tuple(CaseRow.model_fields)


def _kind(annotation: Any, metadata: list[Any] | None = None) -> str:
    """numeric, flag, maybe (a flag that may be missing) or text: how a column is typed."""
    if TRI_STATE in (metadata or []):
        return "maybe"
    if isinstance(annotation, types.UnionType) or typing.get_origin(annotation) is typing.Union:
        annotation = next(a for a in typing.get_args(annotation) if a is not type(None))
    if annotation is bool:
        return "flag"
    return "numeric" if annotation in (int, float) else "text"


KINDS: dict[str, str] = {name: _kind(field.annotation, field.metadata)
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
            df[column] = {"text": "", "flag": False, "maybe": None}.get(kind, float("nan"))
            if kind == "maybe":
                df[column] = df[column].astype("boolean")
        elif kind == "maybe":
            df[column] = (df[column].str.lower().map({"true": True, "false": False}) if text
                          else df[column]).astype("boolean")
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
