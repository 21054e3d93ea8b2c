"""Analysis of a run from results.csv alone: summary.csv, factor effects, McNemar, report.md."""

from __future__ import annotations

import io
import math
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from experiments.results import RESULTS_FILE, complete_text
from experiments.runs import REPORT_FILE, read_meta
from experiments.stats import mcnemar_exact, percentile, wilson
from treadwise.models.registry import label as model_label

SUMMARY_FILE = "summary.csv"
EFFECTS_FILE = "effects.csv"
CHARTS_DIR = "charts"
CELL = ["persona", "model_spec", "temperature", "variation"]
FACTOR_COLUMNS = {"persona": "persona", "model": "model_label", "temperature": "temperature",
                  "variation": "variation"}
NUMERIC = ("repeat", "temperature", "checks_passed", "checks_total", "latency_s", "model_calls",
           "iterations", "tool_errors", "artifacts", "input_tokens", "output_tokens", "cost_usd",
           "response_chars", "response_words")


class ReportError(ValueError):
    """A run folder cannot be reported on (no results yet)."""


def load_results(run_dir: Path) -> Any:
    """results.csv as a DataFrame with typed columns (a half-written last row is ignored)."""
    import pandas as pd

    path = Path(run_dir) / RESULTS_FILE
    if not path.exists():
        raise ReportError(f"{run_dir}: no {RESULTS_FILE} yet")
    df = pd.read_csv(io.StringIO(complete_text(path)), dtype=str, keep_default_na=False)
    if df.empty:
        raise ReportError(f"{run_dir}: {RESULTS_FILE} has no finished cases yet")
    for column in NUMERIC:
        df[column] = pd.to_numeric(df[column], errors="coerce")
    for column in ("success", "stopped_by_cap"):
        df[column] = df[column].str.lower().eq("true")
    df["model_label"] = df["model_spec"].map(model_label)
    return df.drop_duplicates("case_key", keep="first").reset_index(drop=True)


def _rate_row(group: Any) -> dict[str, Any]:
    n, k = len(group), int(group["success"].sum())
    low, high = wilson(k, n)
    return {"n": n, "successes": k, "success_rate": k / n if n else math.nan,
            "ci_low": low, "ci_high": high}


def summarise(df: Any) -> Any:
    """One row per cell (persona x model x temperature x variation), best first."""
    import pandas as pd

    rows = []
    for key, group in df.groupby(CELL, sort=True):
        costs = group["cost_usd"].dropna()
        rows.append({
            **dict(zip(CELL, key, strict=True)), "model": model_label(key[1]),
            "config_hash": group["config_hash"].iloc[0], **_rate_row(group),
            "latency_p50_s": percentile(group["latency_s"].tolist(), 50),
            "latency_p95_s": percentile(group["latency_s"].tolist(), 95),
            "mean_model_calls": group["model_calls"].mean(),
            "mean_input_tokens": group["input_tokens"].mean(),
            "mean_output_tokens": group["output_tokens"].mean(),
            "mean_cost_usd": costs.mean() if len(costs) else math.nan,
            "total_cost_usd": costs.sum() if len(costs) else math.nan,
            "errors": int((group["error_type"] != "").sum()),
            "mean_response_words": group["response_words"].mean(),
        })
    summary = pd.DataFrame(rows)
    return summary.sort_values(["success_rate", "ci_low", "latency_p50_s"],
                               ascending=[False, False, True]).reset_index(drop=True)


def factor_effects(df: Any) -> Any:
    """Success by level of each factor, pooled over the others, with the gap to the best level."""
    import pandas as pd

    rows = []
    for factor, column in FACTOR_COLUMNS.items():
        levels = [(level, _rate_row(g)) for level, g in df.groupby(column, sort=True)]
        best = max((r["success_rate"] for _, r in levels), default=math.nan)
        for level, rate in levels:
            rows.append({"factor": factor, "level": level, **rate,
                         "diff_vs_best": rate["success_rate"] - best,
                         "levels": len(levels)})
    return pd.DataFrame(rows)


@dataclass(frozen=True)
class Comparison:
    """Exact McNemar test of two configurations over the same (scenario, repeat) pairs."""

    first: str
    second: str
    pairs: int
    both_pass: int
    first_only: int
    second_only: int
    both_fail: int
    p_value: float


def _cell_name(row: Any) -> str:
    return (f"{row['persona']} / {model_label(row['model_spec'])} / T={row['temperature']:g} / "
            f"{row['variation']}")


def compare_best(df: Any, summary: Any) -> Comparison | None:
    """McNemar between the two best cells, or None with fewer than two cells."""
    if len(summary) < 2:
        return None
    first, second = summary.iloc[0], summary.iloc[1]
    outcome = {}
    for cell in (first, second):
        rows = df[df["config_hash"] == cell["config_hash"]]
        outcome[cell["config_hash"]] = {(r.scenario, r.repeat): bool(r.success)
                                        for r in rows.itertuples()}
    a, b = outcome[first["config_hash"]], outcome[second["config_hash"]]
    pairs = sorted(set(a) & set(b))
    counts = {(True, True): 0, (True, False): 0, (False, True): 0, (False, False): 0}
    for pair in pairs:
        counts[(a[pair], b[pair])] += 1
    return Comparison(_cell_name(first), _cell_name(second), len(pairs), counts[(True, True)],
                      counts[(True, False)], counts[(False, True)], counts[(False, False)],
                      mcnemar_exact(counts[(True, False)], counts[(False, True)]))


def scenario_rates(df: Any) -> Any:
    import pandas as pd

    rows = [{"scenario": s, "category": g["category"].iloc[0], **_rate_row(g)}
            for s, g in df.groupby("scenario")]
    return pd.DataFrame(rows).sort_values(["success_rate", "scenario"]).reset_index(drop=True)


def check_failures(df: Any) -> Any:
    """(scenario, check) pairs that failed at least once, with their pass rate and an example."""
    import pandas as pd

    cases = df.groupby("scenario").size()
    rows: dict[tuple[str, str], dict[str, Any]] = {}
    for r in df.itertuples():
        details = dict(d.split(": ", 1) for d in r.check_details.split(" | ") if ": " in d)
        for check in filter(None, r.failed_checks.split(";")):
            entry = rows.setdefault((r.scenario, check), {"failures": 0,
                                                          "example": details.get(check, "")})
            entry["failures"] += 1
    table = [{"scenario": s, "check": c, "failures": e["failures"], "cases": int(cases[s]),
              "pass_rate": 1 - e["failures"] / cases[s], "example": e["example"]}
             for (s, c), e in rows.items()]
    if not table:
        return pd.DataFrame(columns=["scenario", "check", "failures", "cases", "pass_rate",
                                     "example"])
    return pd.DataFrame(table).sort_values(["pass_rate", "scenario"]).reset_index(drop=True)


def _pct(value: float) -> str:
    return "n/a" if value is None or (isinstance(value, float) and math.isnan(value)) \
        else f"{value:.0%}"


def _money(value: float) -> str:
    if value is None or math.isnan(value):
        return "unknown"
    return "$0 (free)" if value == 0 else f"${value:.4f}"


def _table(frame: Any, columns: dict[str, Any]) -> str:
    """A Markdown table: header -> column name or a function of the row."""
    lines = ["| " + " | ".join(columns) + " |", "|" + "---|" * len(columns)]
    for _, row in frame.iterrows():
        cells = [fn(row) if callable(fn) else str(row[fn]) for fn in columns.values()]
        lines.append("| " + " | ".join(c.replace("|", "\\|").replace("\n", " ")
                                       for c in cells) + " |")
    return "\n".join(lines)


def _level(value: Any) -> str:
    return f"{value:g}" if isinstance(value, float) else str(value)


def _largest_effects(effects: Any) -> list[str]:
    spreads = []
    for factor, group in effects[effects["levels"] > 1].groupby("factor"):
        best = group.loc[group["success_rate"].idxmax()]
        worst = group.loc[group["success_rate"].idxmin()]
        spreads.append((best["success_rate"] - worst["success_rate"], factor, best, worst))
    spreads.sort(key=lambda s: s[0], reverse=True)
    return [f"**{factor}**: no difference between its levels" if spread == 0 else
            f"**{factor}**: {spread * 100:.1f} points between {_level(best['level'])} "
            f"({_pct(best['success_rate'])}) and {_level(worst['level'])} "
            f"({_pct(worst['success_rate'])})"
            for spread, factor, best, worst in spreads]


def _notes(run_dir: Path, df: Any) -> list[str]:
    meta = read_meta(run_dir)
    notes = []
    if "offline" in set(df["model_spec"]):
        notes.append("`offline` is TreadWise's built-in rule-based model, not an LLM: it is "
                     "deterministic at temperature 0 and only varies its wording above 0, and it "
                     "ignores prompt suffixes and max_tokens.")
    if stop := meta.get("budget_stop"):
        notes.append(f"The budget stopped the sweep early: {stop.get('reason')}; "
                     f"{stop.get('not_launched')} cases were not run.")
    for spec, reason in (meta.get("skipped_models") or {}).items():
        notes.append(f"Skipped {spec}: {reason}")
    for name, reason in (meta.get("missing_toolsets") or {}).items():
        notes.append(f"Toolset {name} was unavailable ({reason}); scenarios needing it fail.")
    if meta.get("status") not in (None, "finished", "stopped_by_budget"):
        notes.append(f"The run's status is {meta.get('status')!r}: resume it with "
                     f"`python -m experiments run --resume {run_dir}`.")
    return notes


def _summary_text(df: Any, summary: Any, effects: Any, comparison: Comparison | None,
                  scenarios: Any, checks: Any) -> list[str]:
    best = summary.iloc[0]
    tied = int(((summary["success_rate"] == best["success_rate"])
                & (summary["ci_low"] == best["ci_low"])).sum()) - 1
    tie = f" (tied on success with {tied} other configuration(s); the fastest is shown)" \
        if tied else ""
    lines = [
        f"- **Cases:** {len(df)} in {len(summary)} configurations; overall success "
        f"{_pct(df['success'].mean())} ({int(df['success'].sum())}/{len(df)}).",
        f"- **Best configuration:** {_cell_name(best)}{tie}: {_pct(best['success_rate'])} "
        f"(95% CI {_pct(best['ci_low'])}-{_pct(best['ci_high'])}, n={best['n']}), "
        f"median latency {best['latency_p50_s']:.3f} s, mean cost {_money(best['mean_cost_usd'])}"
        " per case.",
    ]
    effects_text = _largest_effects(effects)
    if effects_text:
        lines.append("- **Largest effects (pooled success):** " + "; ".join(effects_text) + ".")
    if comparison is not None:
        verdict = "a significant" if comparison.p_value < 0.05 else "no significant"
        lines.append(
            f"- **Best vs. runner-up (exact McNemar):** {comparison.first} vs. "
            f"{comparison.second}: {comparison.pairs} paired cases, {comparison.first_only} won "
            f"only by the first, {comparison.second_only} only by the second, "
            f"p = {comparison.p_value:.3g} ({verdict} difference at 5%).")
    worst = scenarios[scenarios["success_rate"] < 1].head(3)
    if len(worst):
        lines.append("- **Failed most (scenarios):** " + ", ".join(
            f"{r.scenario} ({_pct(r.success_rate)})" for r in worst.itertuples()) + ".")
    if len(checks):
        lines.append("- **Failed most (checks):** " + ", ".join(
            f"{r.scenario}/{r.check} ({_pct(r.pass_rate)} pass)"
            for r in checks.head(3).itertuples()) + ".")
    errors = df.loc[df["error_type"] != "", "error_type"].value_counts()
    lines.append("- **Errors:** " + (", ".join(f"{t} x{n}" for t, n in errors.items())
                                     if len(errors) else "none") + ".")
    return lines


def write_report(run_dir: Path) -> Path:
    """Write summary.csv, effects.csv, charts/*.png and report.md for a run; return report.md."""
    from experiments.charts import write_charts

    run_dir = Path(run_dir)
    df = load_results(run_dir)
    summary = summarise(df)
    summary.to_csv(run_dir / SUMMARY_FILE, index=False, float_format="%.6g")
    effects = factor_effects(df)
    effects.to_csv(run_dir / EFFECTS_FILE, index=False, float_format="%.6g")
    comparison = compare_best(df, summary)
    scenarios, checks = scenario_rates(df), check_failures(df)
    charts = write_charts(df, summary, run_dir / CHARTS_DIR)
    meta = read_meta(run_dir)
    parts = [f"# Sweep report: {run_dir.name}", "",
             f"Grid `{meta.get('grid_name', '?')}`; package {df['package_version'].iloc[0]}, "
             f"commit `{df['git_commit'].iloc[0][:12]}`. Everything below is computed from "
             f"`{RESULTS_FILE}`; intervals are Wilson 95%.", "", "## Summary", "",
             *_summary_text(df, summary, effects, comparison, scenarios, checks)]
    notes = _notes(run_dir, df)
    if notes:
        parts += ["", "## Notes", "", *(f"- {n}" for n in notes)]
    parts += ["", "## Configurations", "", f"All of them are in `{SUMMARY_FILE}`; the best 12:",
              "", _table(summary.head(12), {
                  "persona": "persona", "model": "model",
                  "T": lambda r: f"{r['temperature']:g}", "variation": "variation",
                  "n": "n", "success": lambda r: _pct(r["success_rate"]),
                  "95% CI": lambda r: f"{_pct(r['ci_low'])}-{_pct(r['ci_high'])}",
                  "latency p50/p95 (s)": lambda r: f"{r['latency_p50_s']:.3f} / "
                                                   f"{r['latency_p95_s']:.3f}",
                  "tokens in/out": lambda r: f"{r['mean_input_tokens']:.0f} / "
                                             f"{r['mean_output_tokens']:.0f}",
                  "cost/case": lambda r: _money(r["mean_cost_usd"])}),
              "", "## Factor effects", "",
              "Success pooled over the other factors; the gap is to the factor's best level.", "",
              _table(effects, {
                  "factor": "factor",
                  "level": lambda r: _level(r["level"]),
                  "n": "n", "success": lambda r: _pct(r["success_rate"]),
                  "95% CI": lambda r: f"{_pct(r['ci_low'])}-{_pct(r['ci_high'])}",
                  "vs. best": lambda r: f"{r['diff_vs_best'] * 100:+.1f} pts"}),
              "", "## Failures", "", "Scenarios by success rate:", "",
              _table(scenarios, {"scenario": "scenario", "category": "category", "n": "n",
                                 "success": lambda r: _pct(r["success_rate"])})]
    if len(checks):
        parts += ["", "Checks that failed (pass rate within their scenario, one example):", "",
                  _table(checks.head(15), {"scenario": "scenario", "check": "check",
                                           "pass": lambda r: _pct(r["pass_rate"]),
                                           "example": lambda r: r["example"][:160]})]
    parts += ["", "## Charts", ""]
    for chart in charts:
        parts += [f"### {chart.title}", "", f"![{chart.title}]({CHARTS_DIR}/{chart.name})", ""]
        if chart.error:
            parts += [f"(This chart could not be drawn: {chart.error}.)", ""]
    path = run_dir / REPORT_FILE
    path.write_text("\n".join(parts).rstrip() + "\n", encoding="utf-8")
    return path
