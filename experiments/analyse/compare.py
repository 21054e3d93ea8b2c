"""Two runs compared case by case: paired by configuration, scenario and repeat, per
configuration a difference with its scenario-clustered interval and an exact McNemar test,
Holm-corrected; written as comparison.md, comparison.csv and comparison.png."""

from __future__ import annotations

import math
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from experiments.analyse.report import pct, table
from experiments.analyse.stats import ALPHA, holm, mcnemar_exact, paired_difference
from experiments.analyse.tables import as_run, cell_name, load_results, mcnemar_pair, outcomes
from experiments.store import RunStore

REPORT, TABLE, CHART = "comparison.md", "comparison.csv", "comparison.png"


@dataclass(frozen=True)
class Comparison:
    folder: Path
    table: Any  # one row per configuration both runs ran
    only_a: list[str]
    only_b: list[str]
    overall: dict[str, Any]

    @property
    def report(self) -> Path:
        return self.folder / REPORT


def _verdict(row: Any) -> str:
    if not row["significant"]:
        return "no significant difference"
    return "B better" if row["diff"] > 0 else "A better"


def _compare(a: dict[Any, bool], b: dict[Any, bool]) -> dict[str, Any]:
    pairs = sorted(set(a) & set(b))
    test = mcnemar_pair(a, b)
    estimate = paired_difference([(float(a[p]), float(b[p])) for p in pairs],
                                 [p[0] for p in pairs])
    return {"pairs": len(pairs), "rate_a": sum(a[p] for p in pairs) / len(pairs),
            "rate_b": sum(b[p] for p in pairs) / len(pairs), "diff": estimate.value,
            "ci_low": estimate.low, "ci_high": estimate.high, "a_only": test["first_only"],
            "b_only": test["second_only"], "p_value": test["p_value"]}


def _names(*frames: Any) -> dict[str, str]:
    names: dict[str, str] = {}
    for df in frames:
        for _, first in df.drop_duplicates("config_hash").iterrows():
            names.setdefault(first["config_hash"], cell_name(first))
    return names


def _overall(found_a: dict, found_b: dict, shared: list[str]) -> dict[str, Any]:
    pairs = [(float(found_a[h][k]), float(found_b[h][k]), k[0]) for h in shared
             for k in sorted(set(found_a[h]) & set(found_b[h]))]
    if not pairs:
        return {"pairs": 0}
    estimate = paired_difference([(a, b) for a, b, _ in pairs], [s for _, _, s in pairs])
    a_only = sum(1 for a, b, _ in pairs if a > b)
    b_only = sum(1 for a, b, _ in pairs if b > a)
    return {"pairs": len(pairs), "diff": estimate.value, "ci_low": estimate.low,
            "ci_high": estimate.high, "a_only": a_only, "b_only": b_only,
            "p_value": mcnemar_exact(a_only, b_only)}


def compare_runs(run_a: RunStore | Path, run_b: RunStore | Path, out: Path | None = None, *,
                 chart: bool = True) -> Comparison:
    """Compare run B against run A (stores, or paths to open); errored cases (in either run)
    are left out of the pairs. Written into `out`, by default RUN_B's folder/compare-A."""
    import pandas as pd

    run_a, run_b = as_run(run_a), as_run(run_b)
    df_a, df_b = load_results(run_a), load_results(run_b)
    found_a, found_b = outcomes(df_a), outcomes(df_b)
    names = _names(df_a, df_b)
    shared = [h for h in names if h in found_a and h in found_b
              and set(found_a[h]) & set(found_b[h])]
    rows = [{"configuration": names[h], "config_hash": h, **_compare(found_a[h], found_b[h])}
            for h in shared]
    frame = pd.DataFrame(rows, columns=["configuration", "config_hash", "pairs", "rate_a",
                                        "rate_b", "diff", "ci_low", "ci_high", "a_only",
                                        "b_only", "p_value"])
    frame["p_holm"] = holm(frame["p_value"].tolist())
    frame["significant"] = frame["p_holm"] < ALPHA
    frame["verdict"] = [_verdict(r) for _, r in frame.iterrows()]
    frame = frame.sort_values(["diff", "configuration"]).reset_index(drop=True)
    folder = Path(out) if out else run_b.folder / f"compare-{run_a.name}"
    folder.mkdir(parents=True, exist_ok=True)
    result = Comparison(folder, frame, sorted(names[h] for h in found_a if h not in shared),
                        sorted(names[h] for h in found_b if h not in shared),
                        _overall(found_a, found_b, shared))
    frame.to_csv(folder / TABLE, index=False, float_format="%.6g")
    if chart:
        _chart(result, folder / CHART, run_a.name, run_b.name)
    _write(result, run_a, run_b, chart)
    return result


def _points(value: float) -> str:
    return "n/a" if math.isnan(value) else f"{value * 100:+.1f} pts"


def _overall_line(overall: dict[str, Any]) -> str:
    if not overall.get("pairs"):
        return "The runs share no configuration, scenario and repeat: nothing to pair."
    verdict = "a significant" if overall["p_value"] < ALPHA else "no significant"
    return (f"Over all {overall['pairs']} paired cases, B - A = {_points(overall['diff'])} "
            f"(95% CI {_points(overall['ci_low'])} to {_points(overall['ci_high'])}); "
            f"{overall['a_only']} passed only in A, {overall['b_only']} only in B, exact McNemar"
            f" p = {overall['p_value']:.3g}: {verdict} difference at the 5% level.")


def _write(result: Comparison, run_a: RunStore, run_b: RunStore, chart: bool) -> None:
    frame = result.table
    changed = frame[frame["significant"]]
    lines = [f"# Comparison: {run_b.name} (B) vs. {run_a.name} (A)", "",
             "Cases are paired by configuration, scenario and repeat; cases that errored in "
             "either run are left out. Differences are B - A in success, with 95% intervals "
             "that resample scenarios; p-values are exact McNemar, Holm-corrected over the "
             f"{len(frame)} configurations.", "", f"- {_overall_line(result.overall)}",
             f"- {len(changed)} of {len(frame)} configurations changed significantly"
             + (": " + "; ".join(f"{r.configuration} ({r.verdict}, {_points(r.diff)})"
                                 for r in changed.itertuples()) if len(changed) else "."),
             ]
    for label, names in (("Only in A", result.only_a), ("Only in B", result.only_b)):
        if names:
            lines.append(f"- {label} (not compared): {', '.join(names[:10])}"
                         + (" ..." if len(names) > 10 else ""))
    lines += ["", table(frame, {
        "configuration": "configuration", "pairs": "pairs", "A": lambda r: pct(r["rate_a"]),
        "B": lambda r: pct(r["rate_b"]), "B - A": lambda r: _points(r["diff"]),
        "95% CI": lambda r: f"{_points(r['ci_low'])} to {_points(r['ci_high'])}",
        "only A / only B": lambda r: f"{r['a_only']} / {r['b_only']}",
        "p (Holm)": lambda r: f"{r['p_holm']:.3g}", "verdict": "verdict"})]
    if chart:
        lines += ["", f"![B - A per configuration]({CHART})", "",
                  "*Each configuration's change in success (B - A) with its 95% interval; "
                  "filled markers are significant after Holm's correction.*"]
    result.report.write_text("\n".join(lines) + "\n", encoding="utf-8")


def _chart(result: Comparison, path: Path, name_a: str, name_b: str) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from experiments.analyse.charts import OKABE_ITO

    frame = result.table
    fig, ax = plt.subplots(figsize=(9.0, max(2.6, 1.3 + 0.34 * len(frame))))
    for y, r in enumerate(frame.itertuples()):
        colour = OKABE_ITO[0] if r.diff >= 0 else OKABE_ITO[5]
        ax.errorbar(r.diff, y, xerr=[[max(0.0, r.diff - r.ci_low)], [max(0.0, r.ci_high - r.diff)]],
                    fmt="o", color=colour, capsize=3,
                    markerfacecolor=colour if r.significant else "white")
    ax.axvline(0, color="#555", linewidth=1)
    ax.set_yticks(range(len(frame)), list(frame["configuration"]), fontsize=8)
    ax.set_xlim(-1.05, 1.05)
    ax.xaxis.set_major_formatter(plt.matplotlib.ticker.PercentFormatter(1.0))
    ax.set_xlabel(f"change in success, B ({name_b}) - A ({name_a})")
    fig.suptitle("Run B against run A, configuration by configuration", fontsize=11,
                 fontweight="bold")
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
