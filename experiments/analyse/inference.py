"""Scenario-level inference for sweeps: rates, factor effects, best-vs-rest and paired runs."""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

ALPHA = 0.05
POWER = 0.80
# Below four scenarios a rate interval spans most of 0-100% and a t-interval has under three
# degrees of freedom; benchmarks/stats_calibration.py shows the coverage this threshold keeps.
MIN_SCENARIOS = 4
TOO_FEW = "too few scenarios"
RATE_METHOD = "Wilson over scenario means (n = scenarios)"
EFFECT_METHOD = "t over scenario-level differences (G-1 df)"
BEST_METHOD = "best vs rest, adjusted for picking the best of k (studentized range)"
MEAN_METHOD = "t over scenario means (G-1 df)"
PROPORTION = (0.0, 1.0)


@dataclass(frozen=True)
class Estimate:
    """A rate, mean or difference with its 95% interval, p-value and how they were made.

    `low` and `high` are NaN when the data cannot give an interval; `note` says why.
    """

    value: float
    low: float
    high: float
    method: str
    scenarios: int
    p_value: float = math.nan
    note: str = ""
    se: float = math.nan

    @property
    def has_interval(self) -> bool:
        return not math.isnan(self.low)


def _np() -> Any:
    import numpy as np

    return np


def wilson(p: Any, n: Any) -> tuple[Any, Any]:
    """95% Wilson score bounds for a proportion p out of n (arrays broadcast); p may be a
    mean of fractions (a scenario's share of passing repeats)."""
    from scipy import stats

    np = _np()
    p, n = np.asarray(p, dtype=float), np.asarray(n, dtype=float)
    z = stats.norm.ppf(1 - ALPHA / 2)
    denominator = 1 + z * z / n
    centre = (p + z * z / (2 * n)) / denominator
    half = z * np.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / denominator
    return np.clip(centre - half, 0.0, p), np.clip(centre + half, p, 1.0)


def scenario_wilson(means: Any) -> tuple[Any, Any, Any]:
    """Rate and interval from scenario means (last axis = scenarios): each scenario counts as
    one trial whatever its repeats, so identical repeats add nothing and the interval is
    monotone in successes, never zero-width, and always holds the estimate."""
    np = _np()
    means = np.asarray(means, dtype=float)
    value = means.mean(axis=-1)
    low, high = wilson(value, means.shape[-1])
    return value, low, high


def least_variance(differences: Any) -> Any:
    """The variance of the mean of N paired differences (last axis) had one more pair come out
    +1 or -1 (half a pair each way): what the finite number of draws leaves unknown even when
    every scenario shows the same difference, so that interval is never zero-width. Only a
    floor: it is well below the spread between scenarios in any other case."""
    np = _np()
    differences = np.asarray(differences, dtype=float)
    count = differences.shape[-1]
    mean = differences.mean(axis=-1)
    total = count + 1
    return ((count * mean ** 2 + 1) / total - (count * mean / total) ** 2) / total


def scenario_t(differences: Any, floor: Any) -> tuple[Any, Any, Any, Any]:
    """Mean difference over scenarios (last axis), its 95% t-interval with G-1 degrees of
    freedom and two-sided p-value. The variance of the mean is the spread between scenarios
    over G, never below `floor`, so agreeing scenarios do not give zero width."""
    from scipy import stats

    np = _np()
    differences = np.asarray(differences, dtype=float)
    scenarios = differences.shape[-1]
    value = differences.mean(axis=-1)
    spread = differences.var(axis=-1, ddof=1) if scenarios > 1 else np.zeros_like(value)
    se = np.sqrt(np.maximum(spread / scenarios, floor))
    critical = stats.t.ppf(1 - ALPHA / 2, scenarios - 1)
    with np.errstate(divide="ignore", invalid="ignore"):
        p_value = np.where(se > 0, 2 * stats.t.sf(np.abs(value) / se, scenarios - 1),
                           np.where(value == 0, 1.0, 0.0))
    return value, value - critical * se, value + critical * se, p_value


def holm(p_values: Any) -> Any:
    """Holm-adjusted p-values along the last axis (family-wise error control)."""
    np = _np()
    p = np.asarray(p_values, dtype=float)
    if p.shape[-1] == 0:
        return p
    order = np.argsort(p, axis=-1)
    ranked = np.take_along_axis(p, order, axis=-1)
    factors = p.shape[-1] - np.arange(p.shape[-1])
    stepped = np.minimum(np.maximum.accumulate(ranked * factors, axis=-1), 1.0)
    adjusted = np.empty_like(p)
    np.put_along_axis(adjusted, order, stepped, axis=-1)
    return adjusted


def minimum_detectable(scenarios: int, sd: float) -> float:
    """Smallest true difference a two-sided 5% t-test over `scenarios` scenario-level
    differences of standard deviation `sd` finds with 80% power (noncentral t, G-1 df)."""
    from scipy import optimize, stats

    if scenarios < 2 or not sd > 0:
        return math.inf if scenarios < 2 else 0.0
    df = scenarios - 1
    critical = stats.t.ppf(1 - ALPHA / 2, df)

    def shortfall(shift: float) -> float:  # the far tail (a wrong-sign finding) is negligible
        return float(stats.nct.sf(critical, df, shift) - POWER)

    return float(optimize.brentq(shortfall, 0.0, 40.0) * sd / math.sqrt(scenarios))


def _scaled(values: Any, bounds: tuple[float, float] | None) -> Any:
    if bounds is None:
        return values
    return (values - bounds[0]) / (bounds[1] - bounds[0])


def _unscaled(value: float, bounds: tuple[float, float] | None, *, shift: bool = True) -> float:
    if bounds is None:
        return value
    return value * (bounds[1] - bounds[0]) + (bounds[0] if shift else 0.0)


def scenario_means(df: Any, outcome: str) -> Any:
    """One mean per scenario (repeats and configurations averaged), NaN outcomes dropped."""
    return df.dropna(subset=[outcome]).groupby("scenario")[outcome].mean()


def level_mean(df: Any, outcome: str = "success",
               bounds: tuple[float, float] | None = PROPORTION) -> Estimate:
    """A configuration's (or level's) mean with its 95% interval over scenario means: Wilson
    for a bounded measure (a rate, a 1-5 score), Student t for an unbounded one (words)."""
    np = _np()
    means = scenario_means(df, outcome)
    count = len(means)
    if count == 0:
        return Estimate(math.nan, math.nan, math.nan, "no data", 0, note="no cases")
    value = float(means.mean())
    if count < MIN_SCENARIOS:
        return Estimate(value, math.nan, math.nan, TOO_FEW, count,
                        note=f"{TOO_FEW} ({count} < {MIN_SCENARIOS})")
    if bounds is not None:
        _, low, high = scenario_wilson(_scaled(means.to_numpy(float), bounds))
        return Estimate(value, _unscaled(float(low), bounds), _unscaled(float(high), bounds),
                        RATE_METHOD, count)
    _, low, high, _ = scenario_t(means.to_numpy(float) - value, np.zeros(count))
    note = "" if high > low else "every scenario gives the same value"
    return Estimate(value, value + float(low), value + float(high), MEAN_METHOD, count,
                    note=note)


def matched_cells(df: Any, factor: str, level: Any, reference: Any, others: Sequence[str],
                  outcome: str) -> Any:
    """Cell means (repeats averaged) of `level` and `reference` side by side, one row per
    scenario and combination of the other factors that ran at both levels."""
    cells = (df.dropna(subset=[outcome])
             .groupby(["scenario", *others, factor], dropna=False)[outcome].mean()
             .unstack(factor))
    if level not in cells or reference not in cells:
        return cells.iloc[:0, :0].assign(level=[], reference=[])
    return cells[[level, reference]].dropna().set_axis(["level", "reference"], axis=1)


def contrast(df: Any, factor: str, level: Any, reference: Any, others: Sequence[str] = (),
             outcome: str = "success",
             bounds: tuple[float, float] | None = PROPORTION) -> Estimate:
    """level minus reference of `factor`, matched on scenario and the other factors (so it is
    adjusted for them), tested on one mean difference per scenario."""
    from scipy import stats

    cells = matched_cells(df, factor, level, reference, others, outcome)
    differences = (_scaled(cells["level"], bounds) - _scaled(cells["reference"], bounds))
    per_scenario = differences.groupby(level="scenario").mean().to_numpy(float)
    count = len(per_scenario)
    if count == 0:
        return Estimate(math.nan, math.nan, math.nan, "no data", 0,
                        note="no scenario was run at both levels")
    value = _unscaled(float(per_scenario.mean()), bounds, shift=False)
    if count < MIN_SCENARIOS:
        return Estimate(value, math.nan, math.nan, TOO_FEW, count,
                        note=f"{TOO_FEW} ({count} < {MIN_SCENARIOS})")
    floor = least_variance(differences.to_numpy(float)) if bounds is not None else 0.0
    _, low, high, p_value = scenario_t(per_scenario, floor)
    se = (float(high) - float(low)) / (2 * stats.t.ppf(1 - ALPHA / 2, count - 1))
    low, high = (max(float(low), -1.0), min(float(high), 1.0)) if bounds else (low, high)
    note = "" if high > low else "every scenario shows the same difference"
    return Estimate(value, _unscaled(low, bounds, shift=False),
                    _unscaled(high, bounds, shift=False), EFFECT_METHOD, count,
                    float(p_value), note, _unscaled(se, bounds, shift=False))


def _levels(df: Any, factor: str) -> list[Any]:
    return sorted(df[factor].dropna().unique().tolist(), key=lambda v: (str(type(v)), v))


def effects(df: Any, factors: Sequence[str], outcome: str = "success",
            bounds: tuple[float, float] | None = PROPORTION) -> Any:
    """Each factor's levels against its first level, adjusted for the other factors by
    matching, with p-values Holm-corrected within the factor. Factors with one level are
    left out (nothing varied)."""
    import pandas as pd

    rows = []
    for factor in factors:
        levels = _levels(df, factor)
        if len(levels) < 2:
            continue
        others = [f for f in factors if f != factor]
        found = [(level, contrast(df, factor, level, levels[0], others, outcome, bounds))
                 for level in levels[1:]]
        adjusted = holm([e.p_value if not math.isnan(e.p_value) else 1.0 for _, e in found])
        for (level, estimate), p_holm in zip(found, adjusted, strict=True):
            rows.append(_row(estimate, factor=factor, level=level, reference=levels[0],
                             p_holm=float(p_holm)))
    return pd.DataFrame(rows, columns=EFFECT_COLUMNS)


EFFECT_COLUMNS = ["factor", "level", "reference", "effect", "ci_low", "ci_high", "p_value",
                  "p_holm", "significant", "scenarios", "method", "note"]


def _row(estimate: Estimate, *, p_holm: float, **keys: Any) -> dict[str, Any]:
    return {**keys, "effect": estimate.value, "ci_low": estimate.low, "ci_high": estimate.high,
            "p_value": estimate.p_value, "p_holm": p_holm,
            "significant": bool(p_holm < ALPHA) and estimate.has_interval,
            "scenarios": estimate.scenarios, "method": estimate.method, "note": estimate.note}


def picked_best(t_value: Any, configurations: int, scenarios: int) -> Any:
    """p-value of a best-vs-other t statistic allowing for the best having been picked from
    `configurations` by the same data: the studentized range of that many means (Tukey), so
    equal configurations are not told apart more often than 5% however many there are."""
    from scipy import stats

    np = _np()
    return stats.studentized_range.sf(np.sqrt(2) * np.abs(t_value), configurations,
                                      scenarios - 1)


def best_vs_rest(df: Any, config: str, outcome: str = "success",
                 bounds: tuple[float, float] | None = PROPORTION) -> Any:
    """The configuration with the highest mean over scenario means against each other one,
    paired on scenario; p-values adjusted for the choice of the best (picked_best)."""
    import pandas as pd

    columns = ["best", "other", "effect", "ci_low", "ci_high", "p_value", "p_adjusted",
               "significant", "scenarios", "method", "note"]
    means = (df.dropna(subset=[outcome]).groupby([config, "scenario"])[outcome].mean()
             .groupby(level=config).mean())
    if len(means) < 2:
        return pd.DataFrame(columns=columns)
    ranked = sorted(means.items(), key=lambda kv: (-kv[1], str(kv[0])))
    best = ranked[0][0]
    rows = []
    for other, _ in ranked[1:]:
        found = contrast(df, config, best, other, (), outcome, bounds)
        adjusted = (float(picked_best(found.value / found.se, len(ranked), found.scenarios))
                    if found.has_interval and found.se > 0 else 1.0)
        rows.append({**_row(found, best=best, other=other, p_holm=adjusted),
                     "method": BEST_METHOD})
    return pd.DataFrame(rows).rename(columns={"p_holm": "p_adjusted"})[columns]


def paired_runs(first: Any, second: Any, on: Sequence[str], outcome: str = "success",
                bounds: tuple[float, float] | None = PROPORTION) -> tuple[Estimate, int]:
    """second minus first for two runs that differ in one factor: rows paired on `on`
    (scenario, repeat, the other factors), tested on one difference per scenario. Returns the
    estimate and how many row pairs were matched."""
    import pandas as pd

    keys = [k for k in on if k != "scenario"]
    joined = pd.merge(first[["scenario", *keys, outcome]].dropna(subset=[outcome]),
                      second[["scenario", *keys, outcome]].dropna(subset=[outcome]),
                      on=["scenario", *keys], suffixes=("_first", "_second"))
    long = pd.concat([
        joined[["scenario", *keys]].assign(run="first", value=joined[f"{outcome}_first"]),
        joined[["scenario", *keys]].assign(run="second", value=joined[f"{outcome}_second"]),
    ])
    others = [k for k in keys if k != "repeat"]
    return contrast(long, "run", "second", "first", others, "value", bounds), len(joined)


def repeat_agreement(df: Any, config: str, answers: Sequence[str], by: str) -> Any:
    """Per level of `by` (temperature): the (scenario, configuration) cells that ran two or
    more repeats, and how many of them gave the same answer (`answers` columns) every time."""
    keyed = df.assign(_answer=df[list(answers)].astype(str).agg("\x1f".join, axis=1))
    groups = keyed.groupby([by, "scenario", config], dropna=False)["_answer"]
    table = groups.agg(repeats="size", distinct="nunique").reset_index()
    table = table[table["repeats"] > 1].assign(identical=lambda t: t["distinct"] == 1)
    return (table.groupby(by, dropna=False)
            .agg(cells=("identical", "size"), identical=("identical", "sum"),
                 scenarios=("scenario", "nunique"))
            .reset_index())


def repeat_notices(agreement: Any, by: str = "temperature", name: str = "T") -> list[str]:
    """One line per level whose repeats were all identical: they add no information, so the
    effective number of observations of a configuration is its number of scenarios."""
    return [f"{name} = {row[by]:g}: repeats identical in all {int(row['cells'])} cells; "
            f"effective n = scenarios ({int(row['scenarios'])})"
            for _, row in agreement.iterrows() if row["cells"] and row["identical"] == row["cells"]]
