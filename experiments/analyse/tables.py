"""Tables computed from a run's rows alone: per configuration, per factor, pairwise, per persona.

Success rates count ok against failed cases; errored cases (the provider or harness failed)
say nothing about a configuration, so they are left out and counted beside the rate.
"""

from __future__ import annotations

import math
from itertools import combinations
from pathlib import Path
from typing import Any

from experiments.analyse.stats import (
    ALPHA,
    cluster_bootstrap,
    holm,
    kruskal,
    mcnemar_exact,
    percentile,
)
from experiments.store import NoResults, RunStore, open_run

CELL = ["persona", "model_spec", "temperature", "variation", "strategy", "routing_factor"]
FACTOR_COLUMNS = {"persona": "persona", "model": "model_label", "temperature": "temperature",
                  "variation": "variation", "strategy": "strategy"}
# Factors a grid may add (agent routing, a local model's decoding and routing): shown only
# when the run crosses them.
MORE_FACTORS = {"routing": "routing", "decoding": "decoding", "model routing": "model_routing"}
STYLE = {"response_words": "words", "hedges": "hedging words", "questions": "questions asked",
         "numbers": "numbers given", "units": "numbers with units"}


# A run with no finished case yet cannot be reported on.
ReportError = NoResults


def model_label(spec: str) -> str:
    """How a model is named in tables and charts (the offline model says it is rule-based)."""
    from treadwise.models.registry import label

    return label(spec or "offline")


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
    df["judged"] = df["status"] != "error"
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


def rate(group: Any) -> dict[str, Any]:
    """Success among judged cases, its scenario-clustered interval, and the errors beside."""
    judged = group[group["judged"]]
    estimate = cluster_bootstrap(judged["success"].astype(float).tolist(),
                                 judged["scenario"].tolist())
    return {"n": len(judged), "successes": int(judged["success"].sum()),
            "errors": int((~group["judged"]).sum()), "success_rate": estimate.value,
            "ci_low": estimate.low, "ci_high": estimate.high, "ci_method": estimate.method}


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


def factor_effects(df: Any) -> Any:
    """Success by level of each factor, pooled over the others, with the gap to the best level."""
    import pandas as pd

    rows = []
    # A local model's settings are compared among the cases that have them ("" elsewhere).
    crossed = {f: c for f, c in MORE_FACTORS.items()
               if c in df and df.loc[df[c] != "", c].nunique() > 1}
    for factor, column in {**FACTOR_COLUMNS, **crossed}.items():
        levels = [(level, rate(g)) for level, g in df.groupby(column, sort=True)
                  if level != "" or factor not in crossed]
        best = max((r["success_rate"] for _, r in levels if not math.isnan(r["success_rate"])),
                   default=math.nan)
        for level, found in levels:
            rows.append({"factor": factor, "level": level, **found,
                         "diff_vs_best": found["success_rate"] - best, "levels": len(levels)})
    return pd.DataFrame(rows)


def calls_per_turn(row: Any) -> float:
    """A case's mean model calls per user turn (its turns' counts, else its total)."""
    counts = [int(v) for v in str(getattr(row, "turn_model_calls", "")).split("|")
              if v.strip().isdigit()]
    if counts:
        return sum(counts) / len(counts)
    total = getattr(row, "model_calls", math.nan)
    return float(total) if total == total else math.nan


def strategy_comparison(df: Any) -> Any:
    """Per strategy, pooled over the other factors: success with its scenario-clustered
    interval, and model calls per user turn (what a way of thinking costs) with theirs."""
    import pandas as pd

    rows = []
    for name, group in df.groupby("strategy", sort=True):
        judged = group[group["judged"]]
        pairs = [(calls_per_turn(r), r.scenario) for r in judged.itertuples()]
        pairs = [(v, s) for v, s in pairs if not math.isnan(v)]
        calls = cluster_bootstrap([v for v, _ in pairs], [s for _, s in pairs],
                                  proportion=False)
        rows.append({"strategy": name, **rate(group), "calls_per_turn": calls.value,
                     "calls_low": calls.low, "calls_high": calls.high,
                     "most_calls": max((v for v, _ in pairs), default=math.nan)})
    return pd.DataFrame(rows)


def outcomes(df: Any) -> dict[str, dict[tuple[str, int], bool]]:
    """config hash -> {(scenario, repeat): passed} over judged cases."""
    found: dict[str, dict[tuple[str, int], bool]] = {}
    judged = df[df["judged"]]
    for config, scenario, repeat, success in zip(judged["config_hash"], judged["scenario"],
                                                 judged["repeat"], judged["success"],
                                                 strict=True):
        found.setdefault(config, {})[(scenario, int(repeat))] = bool(success)
    return found


def mcnemar_pair(a: dict[Any, bool], b: dict[Any, bool]) -> dict[str, Any]:
    """Exact McNemar over the cases both configurations ran."""
    pairs = sorted(set(a) & set(b))
    first_only = sum(1 for p in pairs if a[p] and not b[p])
    second_only = sum(1 for p in pairs if b[p] and not a[p])
    return {"pairs": len(pairs), "first_only": first_only, "second_only": second_only,
            "p_value": mcnemar_exact(first_only, second_only)}


def pairwise(df: Any, summary: Any) -> Any:
    """Every pair of configurations compared on paired cases, p-values Holm-corrected."""
    import pandas as pd

    found = outcomes(df)
    names = dict(zip(summary["config_hash"], summary["label"], strict=True))
    order = [h for h in summary["config_hash"] if h in found]
    rows = [{"first": names[a], "second": names[b], "first_hash": a, "second_hash": b,
             **mcnemar_pair(found[a], found[b])} for a, b in combinations(order, 2)]
    table = pd.DataFrame(rows, columns=["first", "second", "first_hash", "second_hash",
                                        "pairs", "first_only", "second_only", "p_value"])
    table["p_holm"] = holm(table["p_value"].tolist())
    table["significant"] = table["p_holm"] < ALPHA
    return table


def top_group(summary: Any, pairs: Any) -> dict[str, Any]:
    """The configurations tied at the top rate, and those the data cannot tell from the top."""
    rated = summary[~summary["success_rate"].isna()]
    if rated.empty:
        return {"tied": [], "indistinct": []}
    best = rated.iloc[0]
    tied = rated[rated["success_rate"] == best["success_rate"]]["label"].tolist()
    against = pairs[(pairs["first_hash"] == best["config_hash"])
                    | (pairs["second_hash"] == best["config_hash"])]
    indistinct = []
    for _, row in against.iterrows():
        other = row["second"] if row["first_hash"] == best["config_hash"] else row["first"]
        if not row["significant"] and other not in tied:
            indistinct.append(other)
    return {"best": best, "tied": tied, "indistinct": indistinct}


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
        details = dict(d.split(": ", 1) for d in r.check_details.split(" | ") if ": " in d)
        for check in filter(None, r.failed_checks.split(";")):
            entry = rows.setdefault((r.scenario, check), {"failures": 0,
                                                          "example": details.get(check, "")})
            entry["failures"] += 1
    table = [{"scenario": s, "check": c, "failures": e["failures"], "cases": int(cases[s]),
              "pass_rate": 1 - e["failures"] / cases[s], "example": e["example"]}
             for (s, c), e in rows.items()]
    columns = ["scenario", "check", "failures", "cases", "pass_rate", "example"]
    if not table:
        return pd.DataFrame(columns=columns)
    return pd.DataFrame(table)[columns].sort_values(["pass_rate", "scenario"]).reset_index(
        drop=True)


def persona_style(df: Any) -> Any:
    """Each style measure (and the judge's score) by persona: mean, scenario-clustered interval,
    and a Kruskal-Wallis p-value across personas."""
    import pandas as pd

    judged = df[df["judged"]]
    measures = {**STYLE, "judge_score": "judge score (1-5)"}
    rows = []
    for column, name in measures.items():
        if column not in judged or judged[column].dropna().empty:
            continue
        groups = {p: g.dropna(subset=[column]) for p, g in judged.groupby("persona")}
        p_value = kruskal([g[column].tolist() for g in groups.values()])
        for persona, group in groups.items():
            estimate = cluster_bootstrap(group[column].tolist(), group["scenario"].tolist(),
                                         proportion=False)
            rows.append({"measure": name, "column": column, "persona": persona,
                         "n": len(group), "mean": estimate.value, "ci_low": estimate.low,
                         "ci_high": estimate.high, "kruskal_p": p_value})
    return pd.DataFrame(rows, columns=["measure", "column", "persona", "n", "mean", "ci_low",
                                       "ci_high", "kruskal_p"])
