"""A run's report from its rows alone: summary.csv, effects.csv, pairwise.csv, style.csv,
charts/ and report.md, which says plainly what the data can and cannot tell apart."""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

from experiments.analyse.stats import BOOTSTRAP, SEED
from experiments.analyse.tables import (
    ReportError,
    as_run,
    check_failures,
    factor_effects,
    load_results,
    model_label,
    pairwise,
    persona_style,
    scenario_rates,
    strategy_comparison,
    summarise,
    top_group,
)
from experiments.store import RunStore
from experiments.store.folder import run_status
from experiments.store.run_store import REPORT_FILE, ran_on_cluster

__all__ = ["ReportError", "load_results", "model_label", "summarise", "write_report"]

SUMMARY_FILE = "summary.csv"
EFFECTS_FILE = "effects.csv"
PAIRWISE_FILE = "pairwise.csv"
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
    return f"{pct(row[low])}-{pct(row[high])}"


def table(frame: Any, columns: dict[str, Any]) -> str:
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
    rated = effects[(effects["levels"] > 1) & ~effects["success_rate"].isna()]
    for factor, group in rated.groupby("factor"):
        best = group.loc[group["success_rate"].idxmax()]
        worst = group.loc[group["success_rate"].idxmin()]
        spreads.append((best["success_rate"] - worst["success_rate"], factor, best, worst))
    spreads.sort(key=lambda s: s[0], reverse=True)
    return [f"**{factor}**: no difference between its levels" if spread == 0 else
            f"**{factor}**: {spread * 100:.1f} points between {_level(best['level'])} "
            f"({pct(best['success_rate'])}) and {_level(worst['level'])} "
            f"({pct(worst['success_rate'])})"
            for spread, factor, best, worst in spreads]


def _best_line(top: dict[str, Any]) -> str:
    if not top.get("tied"):
        return "- **Best configuration:** none (every case errored)."
    best, tied, indistinct = top["best"], top["tied"], top["indistinct"]
    errored = f", {best['errors']} errored" if best["errors"] else ""
    if len(tied) > 1:
        text = (f"- **Best configuration: a tie.** {len(tied)} configurations share the top "
                f"success rate, {pct(best['success_rate'])} (the first listed: 95% CI "
                f"{interval(best)}, n={best['n']}{errored}): {', '.join(tied[:12])}"
                f"{' ...' if len(tied) > 12 else ''}. None is picked over the others.")
    else:
        text = (f"- **Best configuration:** {tied[0]}: {pct(best['success_rate'])} (95% CI "
                f"{interval(best)}, n={best['n']}{errored}).")
    if indistinct:
        text += (f" A further {len(indistinct)} configuration(s) are not significantly worse "
                 "after Holm's correction, so the data cannot rank them below it.")
    return text


def _pairwise_line(pairs: Any) -> str:
    if pairs.empty:
        return "- **Pairwise comparisons:** only one configuration."
    significant = pairs[pairs["significant"]]
    return (f"- **Pairwise comparisons (exact McNemar on paired cases, Holm-corrected):** "
            f"{len(significant)} of {len(pairs)} pairs differ at the 5% level"
            + (": " + "; ".join(_pair_text(r) for _, r in significant.head(3).iterrows())
               + "." if len(significant) else "; every other difference may be chance."))


def _pair_text(row: Any) -> str:
    winner, loser = (row["first"], row["second"]) if row["first_only"] >= row["second_only"] \
        else (row["second"], row["first"])
    return (f"{winner} beats {loser} ({max(row['first_only'], row['second_only'])} vs "
            f"{min(row['first_only'], row['second_only'])} discordant, p_holm = "
            f"{row['p_holm']:.3g})")


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
    differing = style[style["kruskal_p"] < 0.05].drop_duplicates("measure")
    if differing.empty:
        return ("- **Persona style:** no style measure differs significantly between personas "
                "(Kruskal-Wallis, 5%).")
    return ("- **Persona style:** personas differ (Kruskal-Wallis, 5%) in "
            + ", ".join(f"{r.measure} (p = {r.kruskal_p:.2g})" for r in differing.itertuples())
            + "; see the persona style table.")


def _summary_lines(df: Any, summary: Any, effects: Any, pairs: Any, style: Any,
                   scenarios: Any, checks: Any) -> list[str]:
    lines = [_counts_line(df), _best_line(top_group(summary, pairs)), _pairwise_line(pairs)]
    if effects_text := _largest_effects(effects):
        lines.append("- **Largest effects (pooled success):** " + "; ".join(effects_text) + ".")
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


def _configurations(summary: Any) -> list[str]:
    return ["## Configurations", "", f"All of them are in `{SUMMARY_FILE}`; the first 12 in "
            "order of success (equal rates in name order):", "", table(summary.head(12), {
                "configuration": "label", "n": "n", "errors": "errors",
                "success": lambda r: pct(r["success_rate"]), "95% CI": interval,
                "latency/call p50 (s)": lambda r: f"{r['latency_per_call_p50_s']:.3f}",
                "first token p50 (s)": lambda r: f"{r['ttft_p50_s']:.3f}",
                "HTTP requests/case": lambda r: f"{r['mean_http_attempts']:.1f}",
                "tokens in/out": lambda r: f"{r['mean_input_tokens']:.0f} / "
                                           f"{r['mean_output_tokens']:.0f}",
                "cost/case": lambda r: money(r["mean_cost_usd"])})]


def _effects(effects: Any) -> list[str]:
    return ["## Factor effects", "", "Success pooled over the other factors; the gap is to the "
            "factor's best level.", "", table(effects, {
                "factor": "factor", "level": lambda r: _level(r["level"]), "n": "n",
                "errors": "errors", "success": lambda r: pct(r["success_rate"]),
                "95% CI": interval,
                "vs. best": lambda r: f"{r['diff_vs_best'] * 100:+.1f} pts"})]


def _pairwise(pairs: Any) -> list[str]:
    significant = pairs[pairs["significant"]]
    lines = ["## Pairwise comparisons", "", f"All {len(pairs)} pairs are in `{PAIRWISE_FILE}` "
             "(exact McNemar over the cases both ran, Holm-corrected for all of them)."]
    if len(significant):
        lines += ["", table(significant.head(20), {
            "first": "first", "second": "second", "paired cases": "pairs",
            "only first passed": "first_only", "only second passed": "second_only",
            "p": lambda r: f"{r['p_value']:.3g}", "p (Holm)": lambda r: f"{r['p_holm']:.3g}"})]
    return lines


def _style(style: Any) -> list[str]:
    if style.empty:
        return []
    return ["## Persona style", "", "Per case, over every answer: deterministic measures (and "
            "the judge's score when the grid names a judge), by persona, with Kruskal-Wallis "
            "p-values across personas.", "", table(style, {
                "measure": "measure", "persona": "persona", "n": "n",
                "mean": lambda r: f"{r['mean']:.2f}",
                "95% CI": lambda r: f"{r['ci_low']:.2f}-{r['ci_high']:.2f}",
                "p (across personas)": lambda r: f"{r['kruskal_p']:.2g}"})]


def _strategies(strategies: Any) -> list[str]:
    if len(strategies) < 2:
        return []
    return ["## Strategies", "", "Each way of thinking pooled over the other factors: success, "
            "and the model calls it spends per user turn (each strategy has its own budget), "
            "both with scenario-clustered 95% intervals.", "", table(strategies, {
                "strategy": "strategy", "n": "n", "errors": "errors",
                "success": lambda r: pct(r["success_rate"]), "95% CI": interval,
                "model calls per turn": lambda r: f"{r['calls_per_turn']:.2f}",
                "95% CI (calls)": lambda r: f"{r['calls_low']:.2f}-{r['calls_high']:.2f}",
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
    pairs, style = pairwise(df, summary), persona_style(df)
    scenarios, checks = scenario_rates(df), check_failures(df)
    for frame, name in ((summary, SUMMARY_FILE), (effects, EFFECTS_FILE),
                        (pairs, PAIRWISE_FILE), (style, STYLE_FILE)):
        frame.to_csv(run_dir / name, index=False, float_format="%.6g")
    drawn = write_charts(df, summary, run_dir / CHARTS_DIR) if charts else []
    parts = [f"# Sweep report: {run.name}", "",
             f"Grid `{meta.get('grid_name', '?')}`; package {df['package_version'].iloc[0]}, "
             f"commit `{df['git_commit'].iloc[0][:12]}`. Everything below is computed from "
             f"{run.source}. Success counts ok against failed cases; errored cases are "
             "left out and counted beside. Intervals are 95% cluster-bootstrap intervals that "
             f"resample scenarios, not cases ({BOOTSTRAP} resamples, seed {SEED}).", "",
             "## Summary", "",
             *_summary_lines(df, summary, effects, pairs, style, scenarios, checks)]
    if notes := _notes(run_dir, df, meta):
        parts += ["", "## Notes", "", *(f"- {n}" for n in notes)]
    for section in (_configurations(summary), _effects(effects),
                    _strategies(strategy_comparison(df)), _pairwise(pairs), _style(style),
                    _failures(scenarios, checks)):
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
