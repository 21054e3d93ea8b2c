"""Plan a study before running it: how many scenarios a grid needs to find a difference.

`python -m experiments power --detect 0.10` answers for the grid's factor comparisons, at the
level each gets in the grid's report (its one family, experiments/analyse/family.py), with
80% power, for the two shapes a difference can take (experiments/analyse/power.py): a shift
with the scenario spread an earlier run showed (`--from RUN`; without one, a conservative
0.5), and a share of scenarios failing outright (what a difference at a ceiling is). The plan
needs the larger.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from experiments.analyse import cube, findings, inference, power
from experiments.analyse.family import BEST, EFFECTS, STYLE, Family, pairs


@dataclass(frozen=True)
class Plan:
    detect: float
    level: float  # each factor comparison's level in the report
    family: Family
    sd: float
    source: str  # where the spread comes from
    needed: dict[str, int]  # shape -> scenarios (0: more than power.MOST_SCENARIOS)
    scenarios_now: int

    @property
    def scenarios(self) -> int:
        return 0 if 0 in self.needed.values() else max(self.needed.values())

    def lines(self) -> list[str]:
        counts = "; ".join(f"{self.family.counts[k]} {k}" for k in self.family.kinds)
        # With no spread (every scenario agreed) a shift of a few points cannot happen: a
        # difference there is scenarios failing outright, the second shape.
        shift = (f"as a shift: none seen ({self.source}: every scenario agreed, so a "
                 "difference there is a share failing outright)" if self.sd == 0 else
                 f"as a shift with scenario spread sd {self.sd:.2f} ({self.source}): "
                 f"{_count(self.needed['shift'])}")
        shapes = [shift,
                  "as a share of scenarios failing outright (what a difference at a ceiling "
                  f"is): {_count(self.needed['failing share'])}"]
        total = _count(self.scenarios)
        return [f"power: to find a difference of {self.detect * 100:.3g} points with 80% power "
                f"at each factor comparison's level in the report ({self.level:.3g}: one 5% "
                f"error rate shared by {counts} comparisons)",
                *(f"  {shape}" for shape in shapes),
                f"power: scenarios needed {total}" + (
                    f" (the grid has {self.scenarios_now} now)" if self.scenarios_now else "")]


def _count(value: int) -> str:
    return f"over {power.MOST_SCENARIOS}" if value == 0 else str(value)


def grid_family(grid: Any) -> Family:
    """The family a grid's report will have (fixed by the design), before any run."""
    levels = grid.levels()
    measures = len(findings.STYLE_MEASURES) + (1 if grid.judge else 0)
    scenarios = len(grid.scenarios())
    return Family({EFFECTS: sum(pairs(len(v)) for v in levels.values() if len(v) > 1),
                   BEST: max(0, len(grid.cells()) - 1),
                   STYLE: measures * pairs(len(grid.personas))},
                  len(grid.cells()), scenarios)


def run_spread(df: Any) -> tuple[float, str]:
    """The widest scenario spread of any pair of a factor's levels in a run (sd of one
    difference per scenario), and which factor showed it."""
    ready = findings.prepare(df)
    outcomes = cube.fill(ready.layout, ready.success)
    widest, which = 0.0, ""
    for factor in ready.factors:
        paired = cube.contrasts(outcomes, factor)
        if not paired.pairs:
            continue
        found = inference.spread(paired.estimate)
        sd = float(np.sqrt(np.nanmax(found.var))) if np.isfinite(found.var).any() else 0.0
        if sd > widest or not which:
            widest, which = sd, factor
    return widest, which


def plan(detect: float, run: Path | None = None, grid_path: Path | None = None) -> Plan:
    """Scenarios needed to find `detect` (a fraction) with 80% power in a grid's report."""
    from experiments.define.grid import DEFAULT_GRID, load_grid

    if not 0 < detect < 1:
        raise ValueError(f"--detect takes a fraction between 0 and 1 (0.10 for ten points), "
                         f"not {detect:g}")
    if run is not None:
        from experiments.analyse.tables import load_results

        df = load_results(run)
        family = findings.family_of(df)
        if not family.kinds:
            family = Family(family.counts or {EFFECTS: 1}, scenarios=family.scenarios)
        sd, factor = run_spread(df)
        source = (f"from {Path(run).name}: the widest of its factors, {factor}" if factor else
                  f"{Path(run).name} varied no factor: the default")
        sd = sd if factor else power.DEFAULT_SD
        scenarios_now = int(df["scenario"].nunique())
    else:
        grid = load_grid(Path(grid_path or DEFAULT_GRID))
        family, sd = grid_family(grid), power.DEFAULT_SD
        source = "no run given: a conservative default, as if an eighth of scenarios flipped " \
                 "each way"
        scenarios_now = family.scenarios
    level = family.level(EFFECTS) if EFFECTS in family.kinds else family.alpha
    if math.isnan(level):
        level = family.alpha
    return Plan(detect, level, family, sd, source, power.scenarios_needed(detect, sd, level),
                scenarios_now)
