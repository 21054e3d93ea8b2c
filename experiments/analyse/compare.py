"""Two runs compared by the factor they differ in: cases paired on scenario, repeat and every
other factor, B - A tested on scenario-level differences; comparison.md, .csv and .png."""

from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from experiments.analyse.inference import ALPHA, EFFECT_METHOD
from experiments.analyse.markdown import confidence, pct, points, span, table
from experiments.analyse.pairing import NothingToPair, Pairing, pair_runs, scenario_hashes
from experiments.analyse.tables import as_run, load_results, write_table
from experiments.store import RunStore
from experiments.store.run_store import SCENARIOS_COPY
from treadwise.replace_file import replacing

REPORT, TABLE, CHART = "comparison.md", "comparison.csv", "comparison.png"

__all__ = ["Comparison", "NothingToPair", "compare_runs"]


@dataclass(frozen=True)
class Comparison:
    folder: Path
    pairing: Pairing

    @property
    def report(self) -> Path:
        return self.folder / REPORT


def _definitions(run: RunStore) -> dict[str, str] | None:
    """Scenario id -> hash of its definition, from the copy the run keeps (None: no copy)."""
    from treadwise.datafiles import read_yaml_mapping

    path = run.folder / SCENARIOS_COPY
    if not path.exists():
        return None
    return scenario_hashes(read_yaml_mapping(path, ValueError, "scenario file")
                           .get("scenarios") or [])


def compare_runs(run_a: RunStore | Path, run_b: RunStore | Path, out: Path = Path("results"),
                 *, chart: bool = True) -> Comparison:
    """Compare run B against run A (stores, or paths to open), written into
    `out`/compare-A-vs-B (a folder inside `out`, as `run --out` makes one). NothingToPair when
    no case of one run pairs with a case of the other."""
    run_a, run_b = as_run(run_a), as_run(run_b)
    hashes = [_definitions(run_a), _definitions(run_b)]
    pairing = pair_runs(load_results(run_a), load_results(run_b), *hashes)
    if None in hashes:
        pairing.notes.append("A run keeps no copy of its scenario file, so changed scenario "
                             "definitions could not be checked.")
    folder = Path(out) / f"compare-{run_a.name}-vs-{run_b.name}"
    folder.mkdir(parents=True, exist_ok=True)
    pairing = dataclasses.replace(pairing, table=write_table(pairing.table, folder / TABLE))
    result = Comparison(folder, pairing)
    if chart:
        _chart(pairing, folder / CHART, run_a.name, run_b.name)
    _write(result, run_a.name, run_b.name, chart)
    return result


def _factor_line(pairing: Pairing) -> str:
    if not pairing.differing:
        return ("The runs vary the same factors over the same levels: cases are paired on "
                "scenario, repeat and every factor.")
    changed = "; ".join(f"{name}: A {_levels(a)}, B {_levels(b)}"
                        for name, (a, b) in pairing.differing.items())
    return (f"The runs differ in {changed}. Cases are paired on scenario, repeat and "
            f"{', '.join(pairing.keys) or 'nothing else'}.")


def _levels(values: list[Any]) -> str:
    return ", ".join(f"{v:g}" if isinstance(v, float) else str(v) for v in values) or "none"


def _overall_line(pairing: Pairing) -> str:
    found = pairing.overall
    if not found.has_interval:
        return (f"Over {found.pairs} paired cases, B - A = {points(found.value)}: "
                f"{found.note}; no test.")
    shown = found.p_value < 1 - found.level
    verdict = ("a difference shown at this report's 5% error rate" if shown else
               "no difference shown: one anywhere in the interval cannot be ruled out")
    return (f"Over {found.pairs} paired cases in {found.scenarios} scenarios, success A "
            f"{pct(pairing.rate_a)}, B {pct(pairing.rate_b)}: B - A = {points(found.value)} "
            f"({100 * found.level:.4g}% CI {points(found.low)} to {points(found.high)}): "
            f"{verdict}.")


def _write(result: Comparison, name_a: str, name_b: str, chart: bool) -> None:
    pairing = result.pairing
    frame = pairing.table
    changed = frame[frame["significant"]]
    lines = [f"# Comparison: {name_b} (B) vs. {name_a} (A)", "", _factor_line(pairing),
             "B - A is the difference in success over the cases both runs answered, one "
             f"difference per scenario ({EFFECT_METHOD}); an errored case may have been a pass "
             "or a fail, and the intervals allow either. One error rate for this report: "
             f"with no true change the chance it claims any is at most {ALPHA:.0%}, half for "
             f"the overall difference and half split over the {len(frame)} configurations, "
             "each interval at its comparison's level (p on the report's scale).", "",
             f"- {_overall_line(pairing)}", *(f"- {note}" for note in pairing.notes),
             *(f"- {label} (not compared): {', '.join(names[:10])}"
               + (" ..." if len(names) > 10 else "")
               for label, names in (("Only in A", pairing.only_a), ("Only in B", pairing.only_b))
               if names),
             f"- {len(changed)} of {len(frame)} configurations changed significantly (at the "
             "report's one 5% error rate)"
             + (": " + "; ".join(f"{r.configuration} ({points(r.diff)})"
                                 for r in changed.itertuples()) if len(changed) else "."),
             "", table(frame, {
                 "configuration": "configuration", "pairs": "pairs", "scenarios": "scenarios",
                 "B - A": lambda r: points(r["diff"]), "interval": span, "confidence": confidence,
                 "p (report)": lambda r: "n/a" if math.isnan(r["p_adjusted"]) else
                 f"{r['p_adjusted']:.3g}"})]
    if chart:
        lines += ["", f"![B - A per configuration]({CHART})", "",
                  "*Each configuration's change in success (B - A) with its interval over "
                  "scenarios at its level in the report's family; filled markers are changes "
                  "shown at the report's 5% error rate.*"]
    result.report.write_text("\n".join(lines) + "\n", encoding="utf-8")


def _chart(pairing: Pairing, path: Path, name_a: str, name_b: str) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from experiments.analyse.charts import OKABE_ITO

    frame = pairing.table
    fig, ax = plt.subplots(figsize=(9.0, max(2.6, 1.3 + 0.34 * len(frame))))
    for y, r in enumerate(frame.itertuples()):
        colour = OKABE_ITO[0] if r.diff >= 0 else OKABE_ITO[5]
        low, high = (0.0, 0.0) if math.isnan(r.ci_low) else (r.diff - r.ci_low,
                                                              r.ci_high - r.diff)
        ax.errorbar(r.diff, y, xerr=[[max(0.0, low)], [max(0.0, high)]], fmt="o",
                    color=colour, capsize=3,
                    markerfacecolor=colour if r.significant else "white")
    ax.axvline(0, color="#555", linewidth=1)
    ax.set_yticks(range(len(frame)), list(frame["configuration"]), fontsize=8)
    ax.set_xlim(-1.05, 1.05)
    ax.xaxis.set_major_formatter(plt.matplotlib.ticker.PercentFormatter(1.0))
    ax.set_xlabel(f"change in success, B ({name_b}) - A ({name_a}); interval: t over "
                  "scenario-level differences, at the report's one error rate", fontsize=9)
    fig.suptitle("Run B against run A, configuration by configuration", fontsize=11,
                 fontweight="bold")
    fig.tight_layout()
    with replacing(path, binary=True) as out:
        fig.savefig(out, dpi=110, format="png")
    plt.close(fig)
