"""Tables computed from a run's rows alone: per configuration, per factor, per scenario.

Success rates count ok against failed cases; errored cases (the provider or harness failed)
say nothing about a configuration, so they are left out and counted beside the rate. Every
interval counts scenarios, not cases (experiments/analyse/inference.py).
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

from experiments.analyse import findings, inference
from experiments.store import NoResults, RunStore, open_run

CELL = ["persona", "model_spec", "temperature", "variation", "strategy", "routing_factor"]

CSV_FLOATS = "%.6g"  # the tables' CSV files keep six significant digits


def as_written(frame: Any) -> Any:
    """The frame as its CSV file holds it (floats to six significant digits): the report and
    a reader of the file (the app's Experiments tab) then format the same numbers. Formatted
    from the full values instead, a latency of 0.08650000000000002 s read "0.087" in the
    report and "0.086" from the file's 0.0865."""
    floats = frame.select_dtypes("float").columns
    return frame.assign(**{column: frame[column].map(lambda v: float(CSV_FLOATS % v))
                           for column in floats})


def write_table(frame: Any, path: Path) -> Any:
    """Write a table's CSV file; return the frame as the file holds it, for the report to
    format (so report.md and the file never differ in a shown digit)."""
    frame.to_csv(path, index=False, float_format=CSV_FLOATS)
    return as_written(frame)


# A run with no finished case yet cannot be reported on.
ReportError = NoResults


def model_label(spec: str) -> str:
    """How a model is named in tables and charts (the offline model says it is rule-based)."""
    from treadwise.models.registry import label

    return label(spec or "offline")


def _model_name(spec: str) -> str:
    from treadwise.models.registry import label

    return label(str(spec or "offline").split("?", 1)[0], settings=False)


def as_run(run: RunStore | Path) -> RunStore:
    """A run store as it is; a path (a folder, or a shared run's name) opened."""
    return run if isinstance(run, RunStore) else open_run(run)


def load_results(run: RunStore | Path) -> Any:
    """A run's rows as a typed frame (one row per case, its latest) with the measures the
    tables read; ReportError when it has none yet."""
    return with_measures(as_run(run).rows())


def with_measures(df: Any) -> Any:
    """A typed frame of rows with what the tables read beside them: the model's label, whether
    the case counts toward success (it did not error), latency per model call."""
    df["model_label"] = df["model_spec"].map({s: model_label(s) for s in df["model_spec"].unique()})
    # The model as a factor: without a local model's settings, which are factors of their own.
    df["model_name"] = df["model_spec"].map(
        {s: _model_name(s) for s in df["model_spec"].unique()})
    # The records' names for what findings reads: capability and safety as rates, and a
    # judge failure as the case's status (its checks' verdict stays in `success`).
    if "capability" in df:
        df["capability_success"], df["safety_success"] = df["capability"], df["safe"]
    if "judge_status" in df:
        judge_failed = df["judge_status"].eq(findings.JUDGE_ERROR) & df["status"].ne("error")
        df["status"] = df["status"].mask(judge_failed, findings.JUDGE_ERROR)
    df["judged"] = df["status"] != "error"
    # A local model's settings are no level for other models: they compare among local cases.
    # A column no row fills (older runs, no local model) is no factor: it is left out, as in
    # runs made before it existed, so such runs still pair.
    for column in ("decoding", "model_routing", "grounding", "routing"):
        if column in df and df[column].eq("").all():
            df = df.drop(columns=column)
        elif column in df and column != "routing":
            df[column] = df[column].replace("", math.nan)
    # Every row records the agent's routing; it tells configurations apart only when crossed.
    routing = df["routing"] if "routing" in df else ""
    df["routing_factor"] = routing if getattr(routing, "nunique", lambda: 1)() > 1 else ""
    df["latency_per_call_s"] = df["latency_s"] / df["model_calls"].where(df["model_calls"] > 0)
    return df


def cell_name(row: Any) -> str:
    name = (f"{row['persona']} / {model_label(row['model_spec'])} / T={row['temperature']:g} / "
            f"{row['variation']}")
    name = name if row.get("strategy", "react") == "react" else f"{name} / {row['strategy']}"
    return f"{name} / routing {row['routing_factor']}" if row.get("routing_factor") else name


def percentile(values: Any, q: float) -> float:
    """The q-th percentile (0-100), numpy's linear interpolation; NaN if empty."""
    import numpy as np

    data = [v for v in values if not math.isnan(v)]
    return float(np.percentile(data, q)) if data else math.nan


def rate(group: Any) -> dict[str, Any]:
    """Success among judged cases (the mean of its scenarios' rates) with its interval over
    scenarios, the errors beside, and the same for capability and safety when recorded."""
    judged = group[group["judged"]]
    found = inference.level_mean(findings.values(group, "success"), "value")
    row = {"n": len(judged), "scenarios": found.scenarios,
           "successes": int(judged["success"].sum()), "errors": int((~group["judged"]).sum()),
           "judge_errors": int(group["status"].eq(findings.JUDGE_ERROR).sum()),
           "success_rate": found.value, "ci_low": found.low, "ci_high": found.high,
           "ci_method": found.method}
    for column in findings.OUTCOMES:
        if column != "success" and column in group:
            other = inference.level_mean(findings.values(group, column), "value")
            row |= {f"{column}_rate": other.value, f"{column}_low": other.low,
                    f"{column}_high": other.high}
    return row


def _mean(series: Any) -> float:
    values = series.dropna()
    return float(values.mean()) if len(values) else math.nan


def _cell_row(key: tuple, group: Any) -> dict[str, Any]:
    judged = group[group["judged"]]
    costs = group["cost_usd"].dropna()
    return {
        **dict(zip(CELL, key, strict=True)), "model": model_label(key[1]),
        "config_hash": group["config_hash"].iloc[0], **rate(group),
        "latency_p50_s": percentile(judged["latency_s"].tolist(), 50),
        "latency_p95_s": percentile(judged["latency_s"].tolist(), 95),
        "latency_per_call_p50_s": percentile(judged["latency_per_call_s"].dropna().tolist(), 50),
        "ttft_p50_s": percentile(judged["ttft_s"].dropna().tolist(), 50),
        "mean_model_calls": _mean(judged["model_calls"]),
        "mean_http_attempts": _mean(group["http_attempts"]),
        "retry_wait_s": float(group["retry_wait_s"].fillna(0).sum()),
        "usage_missing": int(group["usage_missing"].sum()),
        "cache_hits": int(group["cache_hits"].fillna(0).sum()),
        "mean_input_tokens": _mean(group["input_tokens"]),
        "mean_output_tokens": _mean(group["output_tokens"]),
        "mean_cost_usd": costs.mean() if len(costs) else math.nan,
        "total_cost_usd": costs.sum() if len(costs) else math.nan,
        "mean_response_words": _mean(judged["response_words"]),
        "mean_judge_score": _mean(judged["judge_score"]),
    }


def summarise(df: Any) -> Any:
    """One row per configuration, best first; equal rates keep a stable (named) order, never
    one picked by latency."""
    import pandas as pd

    rows = [_cell_row(key, group) for key, group in df.groupby(CELL, sort=True)]
    summary = pd.DataFrame(rows)
    summary["label"] = [cell_name(r) for _, r in summary.iterrows()]
    return summary.sort_values(["success_rate", "ci_low", "label"],
                               ascending=[False, False, True]).reset_index(drop=True)


def calls_per_turn(row: Any) -> float:
    """A case's mean model calls per user turn (its turns' counts, else its total)."""
    counts = getattr(row, "turn_model_calls", None)
    if counts:
        return sum(counts) / len(counts)
    total = getattr(row, "model_calls", math.nan)
    return float(total) if total == total else math.nan


def strategy_comparison(df: Any) -> Any:
    """Per strategy, pooled over the other factors: success and model calls per user turn
    (what a way of thinking costs), each with its interval over scenarios."""
    import pandas as pd

    rows = []
    for name, group in df.groupby("strategy", sort=True):
        judged = group[group["judged"]]
        calls = judged.assign(value=[calls_per_turn(r) for r in judged.itertuples()])
        found = inference.level_mean(calls, "value", bounds=None, count=True)
        rows.append({"strategy": name, **rate(group), "calls_per_turn": found.value,
                     "calls_low": found.low, "calls_high": found.high,
                     "most_calls": calls["value"].max() if len(calls) else math.nan})
    return pd.DataFrame(rows)


def scenario_rates(df: Any) -> Any:
    """Per scenario: pooled success and the spread over configurations (worst, best)."""
    import pandas as pd

    rows = []
    for scenario, group in df.groupby("scenario"):
        judged = group[group["judged"]]
        per_config = judged.groupby("config_hash")["success"].mean()
        rows.append({"scenario": scenario, "category": group["category"].iloc[0],
                     "n": len(judged), "errors": int((~group["judged"]).sum()),
                     "success_rate": float(judged["success"].mean()) if len(judged) else math.nan,
                     "worst_config": float(per_config.min()) if len(per_config) else math.nan,
                     "best_config": float(per_config.max()) if len(per_config) else math.nan})
    return pd.DataFrame(rows).sort_values(["success_rate", "scenario"]).reset_index(drop=True)


def check_failures(df: Any) -> Any:
    """(scenario, check) pairs that failed at least once, with their pass rate and an example."""
    import pandas as pd

    judged = df[df["judged"]]
    cases = judged.groupby("scenario").size()
    rows: dict[tuple[str, str], dict[str, Any]] = {}
    for r in judged.itertuples():
        for check in r.failed_checks:
            entry = rows.setdefault((r.scenario, check), {
                "failures": 0, "example": r.check_details.get(check, "")})
            entry["failures"] += 1
    table = [{"scenario": s, "check": c, "failures": e["failures"], "cases": int(cases[s]),
              "pass_rate": 1 - e["failures"] / cases[s], "example": e["example"]}
             for (s, c), e in rows.items()]
    columns = ["scenario", "check", "failures", "cases", "pass_rate", "example"]
    if not table:
        return pd.DataFrame(columns=columns)
    return pd.DataFrame(table)[columns].sort_values(["pass_rate", "scenario"]).reset_index(
        drop=True)
