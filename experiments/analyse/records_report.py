"""The report's record sections: task success apart from safe behaviour, the finer tool-use
measures (the README's "Measured" table), per-call accounting, the judge, and past errors."""

from __future__ import annotations

import math
from typing import Any

from experiments.analyse import inference
from experiments.analyse.findings import JUDGE_ERROR
from experiments.analyse.tables import CELL, cell_name, write_table

OUTCOMES_FILE = "outcomes.csv"
TOOL_USE_FILE = "tool_use.csv"
PER_CALL_FILE = "per_call.csv"
MEASURED_FILE = "measured.md"  # the README's "Measured" table, regenerated from the rows


def _share(series: Any) -> float:
    """Share of true among the cases where the measure applies (NaN when it applies to none)."""
    values = series.dropna()
    return float(values.astype(bool).mean()) if len(values) else math.nan


def _estimate(frame: Any, column: str) -> Any:
    """A yes/no measure's rate over scenario means, with the harness's interval for it."""
    import pandas as pd

    values = pd.DataFrame({"scenario": frame["scenario"],
                           "value": frame[column].astype(bool).astype(float)})
    return inference.level_mean(values, "value")


def _rate(group: Any, column: str) -> dict[str, Any]:
    """A per-case yes/no measure among the cases it applies to (scenarios weigh alike)."""
    applies = group[group[column].notna()]
    estimate = _estimate(applies, column)
    return {f"{column}_n": len(applies), f"{column}_k": int(applies[column].astype(bool).sum()),
            f"{column}_rate": estimate.value, f"{column}_ci_low": estimate.low,
            f"{column}_ci_high": estimate.high}


def _by_config(df: Any, row: Any) -> Any:
    import pandas as pd

    rows = []
    for key, group in df.groupby(CELL, sort=True, dropna=False):
        first = dict(zip(CELL, key, strict=True))
        rows.append({"configuration": cell_name(first), **first, **row(group)})
    return pd.DataFrame(rows)


def outcomes(df: Any) -> Any:
    """Per configuration: task success (every capability check passed, and the scenario has
    one) and safe behaviour (every safety check passed), each over the cases it applies to."""
    return _by_config(df, lambda g: {"cases": len(g), "errors": int((~g["judged"]).sum()),
                                     **_rate(g, "capability"), **_rate(g, "safe")})


def tool_use(df: Any) -> Any:
    """Per configuration: how the tool calls went, over the cases that did not error."""
    def row(group: Any) -> dict[str, Any]:
        judged = group[group["judged"]]
        attempted = judged["tools_attempted"].fillna(0)
        calls = attempted.sum()
        return {
            "cases": len(judged), "tried_a_tool": _share(attempted > 0),
            "calls_parsed": judged["tools_parsed"].sum() / calls if calls else math.nan,
            "names_exist": judged["tools_known"].sum() / calls if calls else math.nan,
            "first_tool_right": _share(judged["first_tool_right"]),
            "args_right": _share(judged["args_right"]),
            "steps_credited": float(judged["steps_credited"].mean()),
            "checks_passed": float(judged["check_share"].mean()),
            "calls_per_case": float(judged["model_calls"].mean()),
            "tokens_in_per_case": float(judged["input_tokens"].mean()),
            "tokens_out_per_case": float(judged["output_tokens"].mean()),
        }
    return _by_config(df, row)


def per_call(df: Any) -> Any:
    """Per model: what one model call sends and gets (issue 22): tokens in and out, request
    bytes (HTTP providers only) and tools bound, from each case's per-call columns."""
    import pandas as pd

    rows = []
    for spec, group in df.groupby("model_spec", sort=True):
        rows.append({
            "model_spec": spec, "calls": int(group["call_records"].fillna(0).sum()),
            "input_tokens_p50": group["input_tokens_per_call_p50"].median(),
            "input_tokens_max": group["input_tokens_per_call_max"].max(),
            "output_tokens_p50": group["output_tokens_per_call_p50"].median(),
            "request_bytes_p50": group["request_bytes_per_call_p50"].median(),
            "request_bytes_max": group["request_bytes_per_call_max"].max(),
            "tools_bound_p50": group["tools_bound_per_call_p50"].median()})
    return pd.DataFrame(rows)


def _pct(value: float) -> str:
    return "-" if value is None or (isinstance(value, float) and math.isnan(value)) \
        else f"{100 * value:.0f}%"


def _num(value: float, digits: int = 0) -> str:
    return "-" if value is None or (isinstance(value, float) and math.isnan(value)) \
        else f"{value:,.{digits}f}"


def _rate_text(row: Any, column: str) -> str:
    n = row[f"{column}_n"]
    if not n:
        return "n/a"  # every case errored, or the scenarios have no check of this kind
    return f"{row[f'{column}_k']}/{n} = {_pct(row[f'{column}_rate'])} " + _interval(
        row[f"{column}_ci_low"], row[f"{column}_ci_high"])


def _interval(low: float, high: float) -> str:
    return "(too few scenarios)" if math.isnan(low) else f"({_pct(low)}-{_pct(high)})"


def _md(header: list[str], rows: list[list[str]]) -> list[str]:
    return ["| " + " | ".join(header) + " |", "|" + "---|" * len(header),
            *("| " + " | ".join(cell.replace("|", "\\|") for cell in r) + " |" for r in rows)]


def outcome_section(table: Any) -> list[str]:
    return ["## Task success and safe behaviour", "",
            "Two rates, not one: task success counts the cases whose capability checks all "
            "passed (a case that does nothing fails them; scenarios with no capability check "
            "are left out, n/a when none is left), safe behaviour the cases whose safety "
            "checks all passed (no forbidden tool, no stored lead, no invented fact; doing "
            "nothing passes them). "
            f"Errored cases are in neither. All in `{OUTCOMES_FILE}`.", "",
            *_md(["configuration", "task success (95% CI)", "safe behaviour (95% CI)",
                  "errors"],
                 [[r.configuration, _rate_text(r._asdict(), "capability"),
                   _rate_text(r._asdict(), "safe"), str(r.errors)]
                  for r in table.itertuples(index=False)])]


def tool_section(table: Any) -> list[str]:
    return ["## Tool use", "",
            "Over the cases that did not error: tried a tool; of the tool calls, those whose "
            "arguments parsed and those naming a tool that exists; first tool right (the first "
            "call of the turn that needs a tool named the tool the scenario needs); arguments "
            "right (the scenario's tool_args checks); steps credited (share of the expected "
            "tools that ran without an error) and checks passed (share per case). "
            f"All in `{TOOL_USE_FILE}`; the README's table in `{MEASURED_FILE}`.", "",
            *_md(["configuration", "tried a tool", "parsed", "name exists", "first tool right",
                  "args right", "steps credited", "checks passed"],
                 [[r.configuration, _pct(r.tried_a_tool), _pct(r.calls_parsed),
                   _pct(r.names_exist), _pct(r.first_tool_right), _pct(r.args_right),
                   _pct(r.steps_credited), _pct(r.checks_passed)]
                  for r in table.itertuples(index=False)])]


def per_call_section(table: Any) -> list[str]:
    return ["## Model calls one by one", "",
            "Per model, from each case's per-call columns: medians of the cases' per-call "
            "medians, and the largest single call. Request bytes are the JSON body sent over "
            f"HTTP (none for in-process models). All in `{PER_CALL_FILE}`.", "",
            *_md(["model", "calls", "tokens in p50 / max", "tokens out p50",
                  "request bytes p50 / max", "tools bound p50"],
                 [[r.model_spec, str(r.calls),
                   f"{_num(r.input_tokens_p50)} / {_num(r.input_tokens_max)}",
                   _num(r.output_tokens_p50),
                   f"{_num(r.request_bytes_p50)} / {_num(r.request_bytes_max)}",
                   _num(r.tools_bound_p50)] for r in table.itertuples(index=False)])]


def measured_table(df: Any) -> str:
    """The README's "Measured" table: per model spec (a local model's decoding and routing
    included) and temperature, task success apart from safe behaviour with intervals over
    scenarios, the tool-choice measures and time per case."""
    rows = []
    for (spec, temperature), group in df.groupby(["model_spec", "temperature"], sort=True):
        judged = group[group["judged"]]
        attempted = judged["tools_attempted"].fillna(0)
        invented = int((attempted - judged["tools_known"].fillna(0)).clip(lower=0).sum())
        rows.append([
            "offline (rule-based)" if spec == "offline" else str(spec), f"{temperature:g}",
            _rate_cell(judged, "capability"), _rate_cell(judged, "safe"),
            _pct(_share(judged["first_tool_right"])), _pct(_share(judged["args_right"])),
            f"{invented} of {int(attempted.sum())}", _num(judged["model_calls"].mean(), 2),
            f"{_num(judged['latency_s'].quantile(0.5), 2)}", str(len(group) - len(judged))])
    return "\n".join(_md(["model", "T", "task success (95% CI)", "safe behaviour (95% CI)",
                          "first tool right", "args right", "invented tool names / calls",
                          "calls/case", "p50 s/case", "errors"], rows)) + "\n"


def _rate_cell(judged: Any, column: str) -> str:
    applies = judged[judged[column].notna()] if column in judged else judged.iloc[:0]
    if applies.empty:
        return "n/a"
    estimate = _estimate(applies, column)
    return (f"{int(applies[column].astype(bool).sum())}/{len(applies)} = "
            f"{_pct(estimate.value)} {_interval(estimate.low, estimate.high)}")


def judge_lines(df: Any, meta: dict[str, Any]) -> list[str]:
    """The judge in the open: failures counted apart, its calls and cost, its agreement."""
    if not meta.get("judge"):
        return []
    failed = int((df["judge_status"] == JUDGE_ERROR).sum())
    scored = int(df["judge_score"].notna().sum())
    costs = df["judge_cost_usd"].dropna()
    cost = f"${costs.sum():.4f}" if len(costs) else "unpriced"
    line = (f"- **Judge ({meta['judge']}):** {scored} cases scored, {failed} judge errors "
            f"(the case's own checks stand; `--retry-errors` judges them again); "
            f"{int(df['judge_calls'].fillna(0).sum())} judge calls, {cost}, counted in the "
            "run's cost and budget")
    agreement = df["judge_agreement"].dropna()
    if len(agreement):
        line += (f"; {meta.get('judge_samples', 1)} samples a case agree on "
                 f"{_pct(agreement.mean())} of pairs")
    if not meta.get("judge_cache", True):
        line += "; judge calls not cached"
    return [line + "."]


def retried_lines(meta: dict[str, Any]) -> list[str]:
    """Errors that later attempts re-ran, so the report still says how many there were."""
    counts: dict[str, int] = {}
    for attempt in meta.get("attempts", [])[1:]:
        for status, n in (attempt.get("retrying") or {}).items():
            counts[status] = counts.get(status, 0) + n
    if not counts:
        return []
    said = ", ".join(f"{n} {status.replace('_', ' ')}s" for status, n in sorted(counts.items()))
    return [f"- **Retried:** later attempts re-ran {said} of earlier attempts; the rows hold "
            "each case's latest outcome."]


def write_tables(df: Any, run_dir: Any) -> list[str]:
    """Write outcomes.csv, tool_use.csv, per_call.csv and measured.md; the report's sections."""
    found = [write_table(frame, run_dir / name) for frame, name in zip(
        (outcomes(df), tool_use(df), per_call(df)), (OUTCOMES_FILE, TOOL_USE_FILE, PER_CALL_FILE),
        strict=True)]
    (run_dir / MEASURED_FILE).write_text(measured_table(df), encoding="utf-8")
    return [*outcome_section(found[0]), "", *tool_section(found[1]), "",
            *per_call_section(found[2])]
