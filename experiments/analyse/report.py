"""A run's report from its rows alone: summary.csv, effects.csv, best_vs_rest.csv, style.csv,
style_differences.csv, charts/ and report.md, which says plainly what the data can and cannot
tell apart, at one error rate for the whole report."""

from __future__ import annotations

import dataclasses
import math
from pathlib import Path
from typing import Any

from experiments.analyse import findings, limits, records_report
from experiments.analyse.markdown import (
    cells,
    confidence,
    interval,
    level,
    money,
    number,
    p_value,
    pct,
    points,
    span,
    table,
)
from experiments.analyse.summary_text import summary_lines
from experiments.analyse.tables import (
    ReportError,
    as_run,
    check_failures,
    load_results,
    model_label,
    scenario_rates,
    strategy_comparison,
    summarise,
    write_table,
)
from experiments.store import RunStore
from experiments.store.folder import run_status
from experiments.store.run_store import REPORT_FILE, ran_on_cluster

__all__ = ["ReportError", "cells", "configuration_columns", "load_results", "model_label",
           "summarise", "write_report"]

SUMMARY_FILE = "summary.csv"
EFFECTS_FILE = "effects.csv"
BEST_FILE = "best_vs_rest.csv"
STYLE_FILE = "style.csv"
STYLE_DIFFERENCES_FILE = "style_differences.csv"
CHARTS_DIR = "charts"


def _resume_hint(run_dir: Path, meta: dict[str, Any], *more: str) -> str:
    run = meta.get("run_id") if meta.get("shared") else run_dir  # a database run: its name
    cluster = " --cluster ADDRESS" if ran_on_cluster(meta) else ""
    return f"`python -m experiments run --resume {run}{cluster}{''.join(more)}`"


def _notes(run_dir: Path, df: Any, meta: dict[str, Any]) -> list[str]:
    notes = []
    if "offline" in set(df["model_spec"]):
        notes.append("`offline` is TreadWise's built-in rule-based model, not an LLM: it is "
                     "deterministic at temperature 0 and only varies its wording above 0, and it "
                     "ignores prompt suffixes and max_tokens.")
    if limit := (meta.get("attempts") or [{}])[-1].get("limit"):
        notes.append(limit)  # what a case limit left out of the latest attempt
    if stop := meta.get("budget_stop"):
        notes.append(f"The budget stopped the sweep early: {stop.get('reason')}; "
                     f"{stop.get('not_launched')} cases were not run.")
    for spec, reason in (meta.get("skipped_models") or {}).items():
        notes.append(f"Skipped {spec}: {reason}")
    for name, reason in (meta.get("missing_toolsets") or {}).items():
        notes.append(f"Toolset {name} was unavailable ({reason}); scenarios needing it fail.")
    status = run_status(meta)
    if status not in ("", "finished", "stopped_by_budget"):
        notes.append(f"The run's status is {status!r}: finish it with "
                     f"{_resume_hint(run_dir, meta)}.")
    if int((~df["judged"]).sum()):
        notes.append("Re-run the errored cases with "
                     f"{_resume_hint(run_dir, meta, ' --retry-errors')}.")
    return notes


def configuration_columns(summary: Any) -> dict[str, Any]:
    """The configurations table's columns (header -> column or function of a summary row), as
    the report and the app's Experiments tab both show them."""
    outcomes = {f"{name} (95% CI)": (lambda r, c=column: f"{pct(r[f'{c}_rate'])} ("
                                     f"{interval(r, f'{c}_low', f'{c}_high')})")
                for column, name in findings.OUTCOMES.items()
                if column != "success" and f"{column}_rate" in summary}
    return {"configuration": "label", "scenarios": "scenarios", "cases": "n",
            "errors": "errors", "success": lambda r: pct(r["success_rate"]),
            "95% CI": interval, **outcomes,
            "latency/call p50 (s)": lambda r: number(r["latency_per_call_p50_s"]),
            "first token p50 (s)": lambda r: number(r["ttft_p50_s"]),
            "HTTP requests/case": lambda r: f"{r['mean_http_attempts']:.1f}",
            "tokens in/out": lambda r: f"{r['mean_input_tokens']:.0f} / "
                                       f"{r['mean_output_tokens']:.0f}",
            "cost/case": lambda r: money(r["mean_cost_usd"])}


def _configurations(summary: Any) -> list[str]:
    return ["## Configurations", "", f"All of them are in `{SUMMARY_FILE}`; the first 12 in "
            "order of success (equal rates in name order). A rate is the mean of the "
            "configuration's scenario rates; its 95% interval is exact (Clopper-Pearson) with "
            "n = the scenarios, not the cases, and holds for that configuration alone (the "
            "best's interval in the summary holds for all of them at once).", "",
            table(summary.head(12), configuration_columns(summary))]


COMPARED = {"difference": lambda r: points(r["effect"]), "interval": span,
            "confidence": confidence, "p (report)": lambda r: p_value(r["p_adjusted"]),
            "scenarios": "scenarios",
            "detectable": lambda r: "-" if math.isnan(r["ci_low"]) else
            "none up to 100 pts" if math.isnan(r["mdd"]) else points(r["mdd"]).lstrip("+")}


def _effects(effects: Any) -> list[str]:
    if effects.empty:
        return []
    return ["## Factor effects", "", "Every pair of each factor's levels, matched on scenario, "
            "repeat and the other factors (so adjusted for them): one difference per scenario, "
            "a t-interval with scenarios - 1 degrees of freedom, floored where scenarios tie, "
            "widened so that an errored case may have been a pass or a fail. Each interval is "
            "at its comparison's level in the report's one family (the confidence column); p is on "
            "the report's scale, below 0.05 exactly when the interval leaves out 0. "
            "'Detectable' is the difference found 80% of the time at that level.", "",
            table(effects, {"factor": "factor", "level": lambda r: level(r["level"]),
                            "vs": lambda r: level(r["reference"]), **COMPARED,
                            "left out (errors)": "left_out"})]


def _best_vs_rest(winner: Any) -> list[str]:
    if winner.empty:
        return []
    return ["## Best against the rest", "", f"The best configuration against each other one "
            f"(all in `{BEST_FILE}`), paired on scenario and repeat. The best is picked from "
            "the same data, so each comparison's level allows for picking it among "
            f"{len(winner) + 1} (the studentized range, at this kind of claim's share of the "
            "report's error rate).", "", table(winner.head(20), {
                "best": "best", "other": "other", **COMPARED})]


def _style(style: Any, differences: Any) -> list[str]:
    if style.empty:
        return []
    lines = ["## Persona style", "", "Each measure (and the judge's score when the grid names "
             "a judge) by persona on scenario means: a mean with its 95% interval over "
             "scenarios (none when every scenario gives the same value; a count's never below "
             "0), then every pair of personas, matched on scenario and the other factors, at "
             f"the report's one error rate (all in `{STYLE_FILE}` and "
             f"`{STYLE_DIFFERENCES_FILE}`).", "", table(style, {
                 "measure": "measure", "persona": "persona", "cases": "cases",
                 "scenarios": "scenarios", "mean": lambda r: f"{r['mean']:.2f}",
                 "95% CI": lambda r: _mean_interval(r)})]
    if len(differences):
        lines += ["", table(differences, {
            "measure": "measure", "persona": "level", "vs": "reference",
            "difference": lambda r: f"{r['effect']:+.2f}",
            "interval": lambda r: r["note"] or "no interval" if math.isnan(r["ci_low"])
            else f"{r['ci_low']:+.2f} to {r['ci_high']:+.2f}",
            "confidence": confidence, "p (report)": lambda r: p_value(r["p_adjusted"])})]
    return lines


def _mean_interval(row: Any) -> str:
    if not math.isnan(row["ci_low"]):
        return f"{row['ci_low']:.2f}-{row['ci_high']:.2f}"
    if row["scenarios"] < findings.MIN_SCENARIOS:
        return "too few scenarios"
    return "none: every scenario gives the same value"


def _strategies(strategies: Any) -> list[str]:
    if len(strategies) < 2:
        return []
    return ["## Strategies", "", "Each way of thinking pooled over the other factors: success, "
            "and the model calls it spends per user turn (each strategy has its own budget), "
            "both with 95% intervals over scenarios.", "", table(strategies, {
                "strategy": "strategy", "n": "n", "errors": "errors",
                "success": lambda r: pct(r["success_rate"]), "95% CI": interval,
                "model calls per turn": lambda r: f"{r['calls_per_turn']:.2f}",
                "95% CI (calls)": lambda r: "too few scenarios" if math.isnan(r["calls_low"])
                else f"{r['calls_low']:.2f}-{r['calls_high']:.2f}",
                "most in one case": lambda r: f"{r['most_calls']:.1f}"})]


def _failures(scenarios: Any, checks: Any) -> list[str]:
    lines = ["## Failures", "", "Scenarios by success rate (pooled, and the worst and best "
             "configuration on it):", "", table(scenarios, {
                 "scenario": "scenario", "category": "category", "n": "n", "errors": "errors",
                 "success": lambda r: pct(r["success_rate"]),
                 "worst / best configuration": lambda r: f"{pct(r['worst_config'])} / "
                                                         f"{pct(r['best_config'])}"})]
    if len(checks):
        lines += ["", "Checks that failed (pass rate within their scenario, one example):", "",
                  table(checks.head(15), {"scenario": "scenario", "check": "check",
                                          "pass": lambda r: pct(r["pass_rate"]),
                                          "example": lambda r: r["example"][:160]})]
    return lines


def write_report(run: RunStore | Path, *, charts: bool = True) -> Path:
    """Write the CSV tables, charts/*.png (unless `charts` is False: a 10 000-case run draws
    for a while) and report.md into the run's folder (a path: a run folder, or the name of
    a shared run); return report.md."""
    from experiments.analyse.charts import write_charts

    run = as_run(run)
    df, meta, run_dir = load_results(run), run.meta(), run.folder
    run_dir.mkdir(parents=True, exist_ok=True)
    # Every table is formatted from what its CSV file holds, as a reader of the file sees it.
    summary = write_table(summarise(df), run_dir / SUMMARY_FILE)
    labels = dict(zip(summary["config_hash"], summary["label"], strict=True))
    found = findings.analyse(df, labels)
    found = dataclasses.replace(found, **{
        part: write_table(getattr(found, part), run_dir / name)
        for part, name in (("effects", EFFECTS_FILE), ("winner", BEST_FILE),
                           ("style", STYLE_FILE), ("style_differences", STYLE_DIFFERENCES_FILE))})
    scenarios, checks = scenario_rates(df), check_failures(df)
    drawn = write_charts(df, summary, run_dir / CHARTS_DIR) if charts else []
    parts = [f"# Sweep report: {run.name}", "",
             f"Grid `{meta.get('grid_name', '?')}`; package {df['package_version'].iloc[0]}, "
             f"commit `{df['git_commit'].iloc[0][:12]}`. Everything below is computed from "
             f"{run.source}. Success counts ok against failed cases; errored cases are "
             "left out and counted beside.", "", "## What this grid can show", "",
             *(f"- {line}" for line in [*limits.design_lines(df, found),
                                        *limits.error_lines(df, labels)]),
             "", "## Summary", "", *summary_lines(df, summary, found, scenarios, checks),
             *records_report.judge_lines(df, meta), *records_report.retried_lines(meta)]
    if notes := _notes(run_dir, df, meta):
        parts += ["", "## Notes", "", *(f"- {n}" for n in notes)]
    for section in (_configurations(summary), _effects(found.effects),
                    _strategies(strategy_comparison(df)), _best_vs_rest(found.winner),
                    _style(found.style, found.style_differences), _failures(scenarios, checks),
                    records_report.write_tables(df, run_dir)):
        if section:
            parts += ["", *section]
    parts += ["", "## Charts", ""] + ([] if charts else ["(Not drawn this time.)"])
    for chart in drawn:
        parts += [f"### {chart.title}", "", f"![{chart.title}]({CHARTS_DIR}/{chart.name})", "",
                  f"*{chart.caption}*", ""]
        if chart.error:
            parts += [f"(This chart could not be drawn: {chart.error}.)", ""]
    path = run_dir / REPORT_FILE
    path.write_text("\n".join(parts).rstrip() + "\n", encoding="utf-8")
    return path
