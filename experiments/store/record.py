"""A finished case typed once: the canonical record every store keeps and every reader reads.

The record is a `CaseRow` (its fields below, in order) kept as one JSON line: the run folder's
records.jsonl (`store/records_file.py`) and the database's `sweep_results.row_json` hold the
same line, `CaseRow.model_dump_json()`, so both read back equal rows, floats to the last bit.
Lists and mappings stay lists and mappings (the failed checks, each failed check's reason, the
per-turn counts and tools); readers never split text or re-type values. results.csv is an
export of these records (`store/results_file.py`); folders from before records.jsonl are read
by `store/legacy.py`.
"""

from __future__ import annotations

import types
import typing
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field

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
    """A case's record: the fields in column order (results.csv's columns), each with its type.

    A field added here goes at the end, with a default: records written before it read back
    with the default.
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
    failed_checks: list[str]  # the ids of the checks that failed, in the scenario's order
    check_details: dict[str, str]  # failed check id -> why it failed
    latency_s: float
    model_calls: int
    iterations: int
    turn_iterations: list[int]  # per user turn
    turn_model_calls: list[int]
    stopped_by_cap: bool
    http_attempts: int
    retry_wait_s: float
    ttft_s: float | None
    usage_missing: bool
    cache_hits: int
    tool_sequence: list[list[str]]  # per user turn, the tools called in order
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
    judge_scores: list[int | None] = Field(default_factory=list)  # per sample; None: no score
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
    # Per turn, the tool groups its first call bound (None: all of them, no routing).
    toolsets: list[list[str] | None] = Field(default_factory=list)
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
        transcript (treadwise.privacy.redaction, the one list of shapes), the check ids that
        key `check_details` included."""
        texts = redact_tree({name: value for name, value in vars(self.row).items()
                             if KINDS[name] in ("text", "data") and name != "check_details"})
        texts["check_details"] = dict(redact_tree(list(self.row.check_details.items())))
        return CaseRecord(self.row.model_copy(update=texts), redact_tree(self.transcript))


COLUMNS: tuple[str, ...] = tuple(CaseRow.model_fields)


def _kind(annotation: Any, metadata: list[Any] | None = None) -> str:
    """numeric, flag, maybe (a flag that may be missing), data (a list or mapping) or text."""
    if TRI_STATE in (metadata or []):
        return "maybe"
    if isinstance(annotation, types.UnionType) or typing.get_origin(annotation) is typing.Union:
        annotation = next(a for a in typing.get_args(annotation) if a is not type(None))
    if typing.get_origin(annotation) in (list, dict):
        return "data"
    if annotation is bool:
        return "flag"
    return "numeric" if annotation in (int, float) else "text"


KINDS: dict[str, str] = {name: _kind(field.annotation, field.metadata)
                         for name, field in CaseRow.model_fields.items()}


def latest(rows: Iterable[CaseRow]) -> list[CaseRow]:
    """The latest row of each case (a case re-run with --retry-errors has several), in the
    order their latest rows came."""
    found: dict[str, CaseRow] = {}
    for row in rows:
        found.pop(row.case_key, None)
        found[row.case_key] = row
    return list(found.values())


def records_frame(rows: Sequence[CaseRow]) -> Any:
    """Rows as the frame the analysis reads: one column per field, holding the rows' own
    values (lists stay lists); pandas is only told each column's kind (a yes/no that may be
    missing is its nullable boolean, an empty number NaN)."""
    import pandas as pd

    frame = pd.DataFrame([dict(row) for row in rows], columns=list(COLUMNS))
    for column, kind in KINDS.items():
        if kind == "maybe":
            frame[column] = frame[column].astype("boolean")
        elif kind == "numeric" and frame[column].dtype == object:
            frame[column] = frame[column].astype(float)
        elif kind == "flag" and frame[column].dtype == object:
            frame[column] = frame[column].astype(bool)
    return frame
