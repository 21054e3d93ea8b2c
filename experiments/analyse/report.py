"""A run's report from its rows alone: summary.csv, effects.csv, best_vs_rest.csv, style.csv,
charts/ and report.md, which says plainly what the data can and cannot tell apart."""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

from experiments.analyse import findings, records_report
from experiments.analyse.tables import (
    ReportError,
    as_run,
    best_vs_rest,
    check_failures,
    factor_effects,
    load_results,
    model_label,
    scenario_rates,
    strategy_comparison,
    summarise,
)
from experiments.store import RunStore
from experiments.store.folder import run_status
from experiments.store.run_store import REPORT_FILE, ran_on_cluster

__all__ = ["ReportError", "load_results", "model_label", "summarise", "write_report"]

SUMMARY_FILE = "summary.csv"
EFFECTS_FILE = "effects.csv"
BEST_FILE = "best_vs_rest.csv"
STYLE_FILE = "style.csv"
CHARTS_DIR = "charts"


def pct(value: float | None) -> str:
    return "n/a" if value is None or (isinstance(value, float) and math.isnan(value)) \
        else f"{value:.0%}"


def money(value: float) -> str:
    if value is None or math.isnan(value):
        return "unknown"
    return "$0 (free)" if value == 0 else f"${value:.4f}"


def interval(row: Any, low: str = "ci_low", high: str = "ci_high") -> str:
    """"64–100%", or why there is no interval."""
    if math.isnan(row[low]):
        return "n/a" if row.get("scenarios", 1) == 0 else "too few scenarios"
    return f"{pct(row[low]).removesuffix('%')}–{pct(row[high])}"


def number(value: float, spec: str = ".3f") -> str:
    return "n/a" if value is None or math.isnan(value) else format(value, spec)


def points(value: float) -> str:
    return "n/a" if math.isnan(value) else f"{value * 100:+.0f} pts"


def span(row: Any, low: str = "ci_low", high: str = "ci_high") -> str:
    """An interval of differences in points, or why there is none."""
    if math.isnan(row[low]):
        return row.get("note") or "no interval"
    return f"{points(row[low])} to {points(row[high])}"


def cells(frame: Any, columns: dict[str, Any]) -> list[list[str]]:
    """The table's rows as text: header -> column name or a function of the row."""
    return [[fn(row) if callable(fn) else str(row[fn]) for fn in columns.values()]
            for _, row in frame.iterrows()]


def table(frame: Any, columns: dict[str, Any]) -> str:
    """A Markdown table: header -> column name or a function of the row."""
    lines = ["| " + " | ".join(columns) + " |", "|" + "---|" * len(columns)]
    for row in cells(frame, columns):
        lines.append("| " + " | ".join(c.replace("|", "\\|").replace("\n", " ")
                                       for c in row) + " |")
    return "\n".join(lines)


def _level(value: Any) -> str:
    return f"{value:g}" if isinstance(value, float) else str(value)


def _effect_text(row: Any) -> str:
    return (f"{_level(row['level'])} vs {_level(row['reference'])} {points(row['effect'])} "
            f"(95% CI {span(row)}, {row['scenarios']} scenarios)")


def _effects_line(effects: Any) -> str:
    if effects.empty:
        return "- **Factor effects:** no factor varied."
    found = effects[effects["significant"]]
    tangled = effects[effects["note"].str.startswith("not separable")]["factor"].unique()
    text = ""
    if len(tangled):
        text = (f" {', '.join(tangled)} changed together in this grid, so their effects "
                "cannot be told apart.")
    if found.empty:
        return ("- **Factor effects:** no level of any factor differs from its factor's first "
                "level at the 5% level (Holm within each factor); see the table for intervals."
                + text)
    return ("- **Factor effects (adjusted for the other factors, Holm within each factor):** "
            + "; ".join(f"**{r['factor']}** {_effect_text(r)}" for _, r in found.iterrows())
            + ". Every other level's difference may be chance." + text)


def _best_line(summary: Any, winner: Any) -> str:
    rated = summary[~summary["success_rate"].isna()]
    if rated.empty:
        return "- **Best configuration:** none (every case errored)."
    best = rated.iloc[0]
    tied = rated[rated["success_rate"] == best["success_rate"]]["label"].tolist()
    facts = (f"{pct(best['success_rate'])} (95% CI {interval(best)}, {best['scenarios']} "
             f"scenarios, {best['n']} cases" + (f", {best['errors']} errored" if best["errors"]
                                                 else "") + ")")
    if len(tied) > 1:
        text = (f"- **Best configuration: a tie.** {len(tied)} configurations share the top "
                f"success rate, {facts.replace(' (95%', ' (the first listed: 95%', 1)}: "
                f"{', '.join(tied[:12])}{' ...' if len(tied) > 12 else ''}. None is picked "
                "over the others.")
    else:
        text = f"- **Best configuration:** {tied[0]}: {facts}."
    others = winner[~winner["other"].isin(tied)] if len(winner) else winner
    if others.empty:
        return text
    beaten = int(others["significant"].sum())
    if beaten == len(others):
        return text + " It beats every other configuration (adjusted for picking the best)."
    return text + (f" It beats {beaten} of the {len(others)} others; the data cannot rank it "
                   f"above the other {len(others) - beaten} (each comparison allows for the "
                   "best having been picked from the same data).")


def _counts_line(df: Any) -> str:
    counts = df["status"].value_counts()
    judged = df[df["judged"]]
    return (f"- **Cases:** {len(df)}: {counts.get('ok', 0)} ok, {counts.get('failed', 0)} failed,"
            f" {counts.get('error', 0)} errored (provider or harness failures, left out of every"
            f" rate). Overall success {pct(judged['success'].mean() if len(judged) else None)}"
            f" of {len(judged)} judged cases.")


def _timing_line(df: Any) -> str:
    per_call = df["latency_per_call_s"].dropna()
    parts = [f"median latency per model call {per_call.median():.3f} s" if len(per_call) else
             "no model call finished"]
    if (retries := df["retry_wait_s"].fillna(0).sum()) > 0:
        parts.append(f"{retries:.1f} s spent waiting on retries "
                     f"({int((df['http_attempts'] > df['model_calls']).sum())} cases retried)")
    if (missing := int(df["usage_missing"].sum())) > 0:
        parts.append(f"{missing} cases without provider token counts (estimated at ~4 "
                     "characters a token, not counted as zero)")
    if (hits := int(df["cache_hits"].fillna(0).sum())) > 0:
        parts.append(f"{hits} model calls answered from the response cache")
    return "- **Timing and usage:** " + "; ".join(parts) + "."


def _style_line(style: Any) -> str | None:
    if style.empty:
        return None
    differing = style[style["significant"]]
    if differing.empty:
        return ("- **Persona style:** no persona differs from the first in any style measure "
                "(on scenario means, Holm within each measure).")
    return ("- **Persona style (on scenario means, Holm within each measure):** "
            + "; ".join(f"{r.measure}: {r.persona} vs {r.vs} {r.effect:+.2f} "
                        f"({r.effect_low:+.2f} to {r.effect_high:+.2f})"
                        for r in differing.itertuples()) + ".")


def _summary_lines(df: Any, summary: Any, effects: Any, winner: Any, style: Any,
                   scenarios: Any, checks: Any) -> list[str]:
    lines = [_counts_line(df), _best_line(summary, winner), _effects_line(effects)]
    worst = scenarios[scenarios["success_rate"] < 1].head(3)
    if len(worst):
        lines.append("- **Failed most (scenarios):** " + ", ".join(
            f"{r.scenario} ({pct(r.success_rate)})" for r in worst.itertuples()) + ".")
    if len(checks):
        lines.append("- **Failed most (checks):** " + ", ".join(
            f"{r.scenario}/{r.check} ({pct(r.pass_rate)} pass)"
            for r in checks.head(3).itertuples()) + ".")
    errors = df.loc[~df["judged"], "error_type"].value_counts()
    lines.append("- **Errors:** " + (", ".join(f"{t} x{n}" for t, n in errors.items())
                                     if len(errors) else "none") + ".")
    lines.append(_timing_line(df))
    if (text := _style_line(style)) is not None:
        lines.append(text)
    return lines


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
            "configuration's scenario rates; its 95% interval is Wilson's with n = the "
            "scenarios, not the cases.", "",
            table(summary.head(12), configuration_columns(summary))]


def _effects(effects: Any) -> list[str]:
    if effects.empty:
        return []
    return ["## Factor effects", "", "Each level against its factor's first level, matched on "
            "scenario, repeat and the other factors (so adjusted for them) over the cases every "
            "level answered; one difference per scenario, t-interval with scenarios - 1 degrees "
            "of freedom, p-values Holm-corrected within the factor. 'Detectable' is the "
            "smallest difference this grid finds with 80% power.", "", table(effects, {
                "factor": "factor", "level": lambda r: _level(r["level"]),
                "vs": lambda r: _level(r["reference"]), "difference": lambda r: points(
                    r["effect"]), "95% CI": span,
                "p (Holm)": lambda r: _p(r["p_holm"] if r["scenarios"] else math.nan),
                "scenarios": "scenarios", "detectable": lambda r: points(r["mdd"]).lstrip("+"),
                "left out (errors)": "left_out"})]


def _p(value: float) -> str:
    return "n/a" if math.isnan(value) else f"{value:.3g}"


def _best_vs_rest(winner: Any) -> list[str]:
    if winner.empty:
        return []
    return ["## Best against the rest", "", f"The best configuration against each other one "
            f"(all in `{BEST_FILE}`), paired on scenario and repeat. The best is picked from "
            "the same data, so intervals and p-values allow for picking it among "
            f"{len(winner) + 1} (studentized range).", "", table(winner.head(20), {
                "best": "best", "other": "other", "difference": lambda r: points(r["effect"]),
                "95% CI": span, "p (adjusted)": lambda r: _p(r["p_adjusted"]),
                "scenarios": "scenarios"})]


def _style(style: Any) -> list[str]:
    if style.empty:
        return []
    return ["## Persona style", "", "Each measure (and the judge's score when the grid names a "
            "judge) by persona on scenario means: a mean with its 95% interval over scenarios, "
            "and each persona against the first, matched on scenario and the other factors "
            "(Holm within the measure).", "", table(style, {
                "measure": "measure", "persona": "persona", "cases": "cases",
                "scenarios": "scenarios", "mean": lambda r: f"{r['mean']:.2f}",
                "95% CI": lambda r: "too few scenarios" if math.isnan(r["ci_low"]) else
                f"{r['ci_low']:.2f}-{r['ci_high']:.2f}",
                "vs first": lambda r: "" if not r["vs"] else
                f"{r['effect']:+.2f} ({_p(r['p_holm'])})"})]


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
    summary, effects = summarise(df), factor_effects(df)
    winner, style = best_vs_rest(df, summary), findings.style_table(df)
    scenarios, checks = scenario_rates(df), check_failures(df)
    for frame, name in ((summary, SUMMARY_FILE), (effects, EFFECTS_FILE),
                        (winner, BEST_FILE), (style, STYLE_FILE)):
        frame.to_csv(run_dir / name, index=False, float_format="%.6g")
    drawn = write_charts(df, summary, run_dir / CHARTS_DIR) if charts else []
    labels = dict(zip(summary["config_hash"], summary["label"], strict=True))
    parts = [f"# Sweep report: {run.name}", "",
             f"Grid `{meta.get('grid_name', '?')}`; package {df['package_version'].iloc[0]}, "
             f"commit `{df['git_commit'].iloc[0][:12]}`. Everything below is computed from "
             f"{run.source}. Success counts ok against failed cases; errored cases are "
             "left out and counted beside.", "", "## What this grid can show", "",
             *(f"- {line}" for line in [*findings.design_lines(df, effects, winner),
                                        *findings.error_lines(df, labels)]),
             "", "## Summary", "",
             *_summary_lines(df, summary, effects, winner, style, scenarios, checks),
             *records_report.judge_lines(df, meta), *records_report.retried_lines(meta)]
    if notes := _notes(run_dir, df, meta):
        parts += ["", "## Notes", "", *(f"- {n}" for n in notes)]
    for section in (_configurations(summary), _effects(effects),
                    _strategies(strategy_comparison(df)), _best_vs_rest(winner),
                    _style(style), _failures(scenarios, checks),
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
