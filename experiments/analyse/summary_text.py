"""The report's summary in sentences: what was claimed, at the report's one error rate, and
what the data cannot rule out; when no test ran, no sentence reads as if one had."""

from __future__ import annotations

import math
from typing import Any

from experiments.analyse.family import BEST, EFFECTS, STYLE
from experiments.analyse.findings import Findings
from experiments.analyse.markdown import level, pct, points, rate_range, span

NOT_TESTED = "not tested: too few scenarios for any interval or test"


def _pair(row: Any) -> str:
    return (f"{level(row['level'])} vs {level(row['reference'])} {points(row['effect'])} "
            f"({confidence_text(row)} CI {span(row)}, {row['scenarios']} scenarios)")


def confidence_text(row: Any) -> str:
    return f"{100 * row['confidence']:.4g}%"


def _open(rows: Any) -> str:
    """What a factor's untold differences may still be: its widest interval's reach."""
    shown = rows.dropna(subset=["ci_low"])
    if shown.empty:
        return "no interval"
    far = shown[["ci_low", "ci_high"]].abs().max(axis=1)
    # The example is the pair that reaches that far: with a difference seen (2 of 23
    # scenarios failing) it is that pair, not an all-agreeing one beside it.
    farthest = shown.loc[far.idxmax()]
    return (f"differences up to {float(far.max()) * 100:.0f} points cannot be ruled out (e.g. "
            f"{_pair(farthest)})")


def _best_level(factor: str, rows: Any) -> str:
    """The level that beats every other level of its factor, when the data show one."""
    for name in dict.fromkeys([*rows["level"], *rows["reference"]]):
        above = rows[((rows["level"] == name) & (rows["effect"] > 0))
                     | ((rows["reference"] == name) & (rows["effect"] < 0))]
        others = len({*rows["level"], *rows["reference"]}) - 1
        if others and len(above) == others and above["significant"].all():
            return f" Best {factor}: {level(name)}, above every other level."
    return ""


def effects_line(found: Findings) -> str:
    effects = found.effects
    if effects.empty:
        return "- **Factor effects:** no factor varied."
    if EFFECTS not in found.family.kinds:
        return f"- **Factor effects:** {NOT_TESTED}."
    tangled = effects[effects["note"].str.startswith("not separable")]["factor"].unique()
    parts = []
    for factor, rows in effects.groupby("factor", sort=False):
        claimed = rows[rows["significant"]]
        if claimed.empty:
            parts.append(f"**{factor}**: no two levels shown to differ; {_open(rows)}")
        else:
            parts.append(f"**{factor}** " + "; ".join(_pair(r) for _, r in claimed.iterrows())
                         + "." + _best_level(factor, rows))
    text = ("- **Factor effects (every pair of levels, adjusted for the other factors, at the "
            "report's one error rate):** " + " ".join(p if p.endswith(".") else p + "."
                                                      for p in parts))
    if len(tangled):
        text += (f" {', '.join(tangled)} changed together in this grid, so their effects "
                 "cannot be told apart.")
    return text


def best_line(summary: Any, found: Findings) -> str:
    rated = summary[~summary["success_rate"].isna()]
    if rated.empty:
        return "- **Best configuration:** none (every case errored)."
    best = rated.iloc[0]
    tied = rated[rated["success_rate"] == best["success_rate"]]["label"].tolist()
    rates = found.rates.set_index("label")
    chosen = rates.loc[best["label"]] if best["label"] in rates.index else None
    count = len(rates)
    if chosen is None or math.isnan(chosen["all_low"]):
        bound = "no interval: too few scenarios"
    else:
        bound = (f"{rate_range(chosen['all_low'], chosen['all_high'])} with 95% confidence "
                 f"held at once by all {count} configurations' intervals, which allows for "
                 "having picked it")
    facts = (f"{pct(best['success_rate'])} ({bound}; {best['scenarios']} scenarios, "
             f"{best['n']} cases" + (f", {best['errors']} errored" if best["errors"] else "")
             + ")")
    if len(tied) > 1:
        text = (f"- **Best configuration: a tie.** {len(tied)} configurations share the top "
                f"success rate, {facts}: {', '.join(tied[:12])}"
                f"{' ...' if len(tied) > 12 else ''}. None is picked over the others.")
    else:
        text = f"- **Best configuration:** {tied[0]}: {facts}."
    winner = found.winner
    others = winner[~winner["other"].isin(tied)] if len(winner) else winner
    if others.empty:
        return text
    if BEST not in found.family.kinds:
        return text + f" Not compared with the others ({NOT_TESTED})."
    beaten = int(others["significant"].sum())
    # With a tie the comparisons are the first of the tied ones' (the best-vs-rest table's).
    subject = "It" if len(tied) == 1 else "The first of them"
    if beaten == len(others):
        return text + (f" {subject} beats every other configuration (allowing for picking "
                       "the best).")
    return text + (f" {subject} beats {beaten} of the {len(others)} others; the data cannot "
                   f"rank it above the other {len(others) - beaten} (each comparison allows "
                   "for the best having been picked from the same data).")


def style_line(found: Findings) -> str | None:
    if found.style.empty:
        return None
    if STYLE not in found.family.kinds:
        return f"- **Persona style:** {NOT_TESTED}."
    differing = found.style_differences[found.style_differences["significant"]]
    if differing.empty:
        return ("- **Persona style:** no two personas shown to differ in any style measure "
                "(on scenario means, each pair at its share of the report's error rate).")
    return ("- **Persona style (on scenario means, at the report's one error rate):** "
            + "; ".join(f"{r.measure}: {r.level} vs {r.reference} {r.effect:+.2f} "
                        f"({r.ci_low:+.2f} to {r.ci_high:+.2f})"
                        for r in differing.itertuples()) + ".")


def counts_line(df: Any) -> str:
    counts = df["status"].value_counts()
    judged = df[df["judged"]]
    return (f"- **Cases:** {len(df)}: {counts.get('ok', 0)} ok, {counts.get('failed', 0)} failed,"
            f" {counts.get('error', 0)} errored (provider or harness failures, left out of every"
            f" rate). Overall success {pct(judged['success'].mean() if len(judged) else None)}"
            f" of {len(judged)} judged cases.")


def timing_line(df: Any) -> str:
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


def summary_lines(df: Any, summary: Any, found: Findings, scenarios: Any,
                  checks: Any) -> list[str]:
    lines = [counts_line(df), best_line(summary, found), effects_line(found)]
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
    lines.append(timing_line(df))
    if (text := style_line(found)) is not None:
        lines.append(text)
    return lines
