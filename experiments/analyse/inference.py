"""Scenario-level inference for sweeps: rates, factor effects, best-vs-rest and paired runs."""

from __future__ import annotations

import dataclasses
import functools
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
    pairs: int = 0
    unmatched: int = 0

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


def least_variance(mean: Any, draws: Any) -> Any:
    """The variance of the mean of `draws` paired differences that all equal `mean`, with one
    more pair added, half +1 and half -1: what the number of draws alone leaves unknown. The
    floor under the spread between scenarios, so that every scenario showing the same
    difference does not give a zero-width interval; any real spread is far above it."""
    total = draws + 1
    return ((draws * mean ** 2 + 1) / total - (draws * mean / total) ** 2) / total


def draws(differences: Any, cells: Sequence[str]) -> tuple[float, int]:
    """Mean and number of independent draws among paired differences (indexed by `cells` and
    repeat): a cell whose repeats all gave the same difference counts once, as at T = 0 its
    repeats are one answer; a cell whose repeats differ counts each of them."""
    import pandas as pd

    same = differences.groupby(level=list(cells), dropna=False).transform("nunique").le(1)
    once = differences[same].groupby(level=list(cells), dropna=False).first()
    found = pd.concat([differences[~same], once])
    return (float(found.mean()) if len(found) else 0.0), len(found)


def scenario_t(differences: Any, floor: Any) -> tuple[Any, Any, Any, Any]:
    """Mean difference over scenarios (last axis; NaN = a scenario not compared), its 95%
    t-interval with G-1 degrees of freedom and two-sided p-value. The variance of the mean is
    the spread between scenarios over G, never below `floor`, so agreeing scenarios do not
    give zero width."""
    from scipy import stats

    np = _np()
    differences = np.asarray(differences, dtype=float)
    scenarios = np.sum(~np.isnan(differences), axis=-1)
    with np.errstate(divide="ignore", invalid="ignore"):
        value = np.nansum(differences, axis=-1) / scenarios
        spread = np.nansum((differences - value[..., None]) ** 2, axis=-1) / (scenarios - 1)
        se = np.sqrt(np.maximum(np.where(scenarios > 1, spread / scenarios, 0.0), floor))
        critical = stats.t.ppf(1 - ALPHA / 2, scenarios - 1)
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


def minimum_detectable(scenarios: int, sd: float, critical: float | None = None) -> float:
    """Smallest true difference a two-sided 5% t-test over `scenarios` scenario-level
    differences of standard deviation `sd` finds with 80% power (noncentral t, G-1 df);
    `critical` replaces the t critical value (picked_best_point / sqrt 2 for best vs rest)."""
    from scipy import optimize, stats

    if scenarios < 2 or not sd > 0:
        return math.inf if scenarios < 2 else 0.0
    df = scenarios - 1
    critical = stats.t.ppf(1 - ALPHA / 2, df) if critical is None else critical

    def shortfall(shift: float) -> float:  # the far tail (a wrong-sign finding) is negligible
        return float(stats.nct.sf(critical, df, shift) - POWER)

    return float(optimize.brentq(shortfall, 0.0, 40.0) * sd / math.sqrt(scenarios))


def _scaled(values: Any, bounds: tuple[float, float] | None) -> Any:
    if bounds is None:
        return values
    return (values - bounds[0]) / (bounds[1] - bounds[0])


def _unscaled(value: float, bounds: tuple[float, float] | None, *, shift: bool = True) -> float:
    if bounds is None:
        return float(value)
    return float(value * (bounds[1] - bounds[0]) + (bounds[0] if shift else 0.0))


def scenario_means(df: Any, outcome: str) -> Any:
    """One mean per scenario (repeats and configurations averaged), NaN outcomes dropped."""
    return df.dropna(subset=[outcome]).groupby("scenario")[outcome].mean()


def level_mean(df: Any, outcome: str = "success",
               bounds: tuple[float, float] | None = PROPORTION) -> Estimate:
    """A configuration's (or level's) mean with its 95% interval over scenario means: Wilson
    for a bounded measure (a rate, a 1-5 score), Student t for an unbounded one (words)."""
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
    _, low, high, _ = scenario_t(means.to_numpy(float) - value, 0.0)
    note = "" if high > low else "every scenario gives the same value"
    return Estimate(value, value + float(low), value + float(high), MEAN_METHOD, count,
                    note=note)


def matched_cases(df: Any, factor: str, level: Any, reference: Any, keys: Sequence[str],
                  outcome: str) -> tuple[Any, Any]:
    """`level` and `reference` outcomes side by side, one row per case key (scenario, the other
    factors, repeat) run at either level; NaN where that side has no answer. The second frame
    says which side ran the case at all, so an error (ran, no answer) is told from a case that
    side never had."""
    present = [k for k in keys if k in df]
    grouped = (df[df[factor].isin([level, reference])]
               .groupby([*present, factor], dropna=False)[outcome])
    sides = [frame.unstack(factor).reindex(columns=[level, reference])
             .set_axis(["level", "reference"], axis=1)
             for frame in (grouped.mean(), grouped.size())]
    return sides[0], sides[1].notna()


def contrast(df: Any, factor: str, level: Any, reference: Any, others: Sequence[str] = (),
             outcome: str = "success", bounds: tuple[float, float] | None = PROPORTION,
             within: Sequence[str] = ("repeat",)) -> Estimate:
    """level minus reference of `factor` on the cases both answered, matched on scenario, the
    other factors (so it is adjusted for them) and `within` (repeat); tested on one mean
    difference per scenario. `unmatched` counts answered cases left out because the other
    side errored on them."""
    from scipy import stats

    cases, ran = matched_cases(df, factor, level, reference, ["scenario", *others, *within],
                               outcome)
    both = cases.dropna()
    errored = cases.notna().sum(axis=1).eq(1) & ran.all(axis=1)
    counts = {"pairs": len(both), "unmatched": int(errored.sum())}
    paired = _scaled(both["level"], bounds) - _scaled(both["reference"], bounds)
    differences = paired.groupby(level=["scenario", *others], dropna=False).mean()
    per_scenario = differences.groupby(level="scenario").mean().to_numpy(float)
    count = len(per_scenario)
    if count == 0:
        return Estimate(math.nan, math.nan, math.nan, "no data", 0,
                        note="no scenario answered at both levels", **counts)
    value = _unscaled(float(per_scenario.mean()), bounds, shift=False)
    if count < MIN_SCENARIOS:
        return Estimate(value, math.nan, math.nan, TOO_FEW, count,
                        note=f"{TOO_FEW} ({count} < {MIN_SCENARIOS})", **counts)
    floor = least_variance(*draws(paired, ["scenario", *others])) if bounds else 0.0
    _, low, high, p_value = scenario_t(per_scenario, floor)
    se = (float(high) - float(low)) / (2 * stats.t.ppf(1 - ALPHA / 2, count - 1))
    low, high = (max(float(low), -1.0), min(float(high), 1.0)) if bounds else (low, high)
    note = "" if high > low else "every scenario shows the same difference"
    return Estimate(value, _unscaled(low, bounds, shift=False),
                    _unscaled(high, bounds, shift=False), EFFECT_METHOD, count,
                    float(p_value), note, _unscaled(se, bounds, shift=False), **counts)


def levels(df: Any, factor: str) -> list[Any]:
    """A factor's levels in a stable order (numbers by value, names alphabetically)."""
    return sorted(df[factor].dropna().unique().tolist(), key=lambda v: (str(type(v)), v))


def factor_effect(df: Any, factor: str, others: Sequence[str], outcome: str = "success",
                  bounds: tuple[float, float] | None = PROPORTION,
                  order: Sequence[Any] | None = None) -> list[dict[str, Any]]:
    """One factor's levels (`order`, default: those in df) against the first, adjusted for
    the `others` by matching, p-values Holm-corrected within the factor."""
    ordered = list(order) if order is not None else levels(df, factor)
    found = [(level, contrast(df, factor, level, ordered[0], others, outcome, bounds))
             for level in ordered[1:]]
    adjusted = holm([e.p_value if not math.isnan(e.p_value) else 1.0 for _, e in found])
    return [_row(estimate, factor=factor, level=level, reference=ordered[0], p_holm=float(p))
            for (level, estimate), p in zip(found, adjusted, strict=True)]


def effects(df: Any, factors: Sequence[str], outcome: str = "success",
            bounds: tuple[float, float] | None = PROPORTION) -> Any:
    """factor_effect for every factor, each adjusted for all the others."""
    import pandas as pd

    rows = [row for factor in factors
            for row in factor_effect(df, factor, [f for f in factors if f != factor], outcome,
                                     bounds)]
    return pd.DataFrame(rows, columns=EFFECT_COLUMNS)


EFFECT_COLUMNS = ["factor", "level", "reference", "effect", "ci_low", "ci_high", "p_value",
                  "p_holm", "significant", "scenarios", "pairs", "left_out", "se", "method",
                  "note"]


def _row(estimate: Estimate, *, p_holm: float, **keys: Any) -> dict[str, Any]:
    return {**keys, "effect": estimate.value, "ci_low": estimate.low, "ci_high": estimate.high,
            "p_value": estimate.p_value, "p_holm": p_holm,
            "significant": bool(p_holm < ALPHA) and estimate.has_interval,
            "scenarios": estimate.scenarios, "pairs": estimate.pairs,
            "left_out": estimate.unmatched, "se": estimate.se, "method": estimate.method,
            "note": estimate.note}


@functools.lru_cache(maxsize=64)
def picked_best_point(configurations: int, scenarios: int) -> float:
    """The 95% point of the studentized range of `configurations` means over `scenarios`."""
    from scipy import stats

    return float(stats.studentized_range.ppf(1 - ALPHA, configurations, scenarios - 1))


def picked_best(found: Estimate, configurations: int,
                bounds: tuple[float, float] | None) -> Estimate:
    """A best-vs-other contrast allowing for the best having been picked from
    `configurations` by the same data (Tukey: the studentized range of that many means), in
    its p-value and its interval, so equal configurations are told apart in at most 5% of
    studies however many there are."""
    from scipy import stats

    if not (found.has_interval and found.se > 0):
        return found
    half = picked_best_point(configurations, found.scenarios) / math.sqrt(2) * found.se
    p_value = float(stats.studentized_range.sf(math.sqrt(2) * abs(found.value / found.se),
                                               configurations, found.scenarios - 1))
    span = (bounds[1] - bounds[0]) if bounds else math.inf
    return dataclasses.replace(found, low=max(found.value - half, -span),
                               high=min(found.value + half, span), p_value=p_value,
                               method=BEST_METHOD)


def best_vs_rest(df: Any, config: str, outcome: str = "success",
                 bounds: tuple[float, float] | None = PROPORTION) -> Any:
    """The configuration with the highest mean over scenario means against each other one,
    paired on scenario and repeat, adjusted for the choice of the best (picked_best)."""
    import pandas as pd

    columns = ["best", "other", *EFFECT_COLUMNS[3:]]
    means = (df.dropna(subset=[outcome]).groupby([config, "scenario"])[outcome].mean()
             .groupby(level=config).mean())
    if len(means) < 2:
        return pd.DataFrame(columns=columns)
    ranked = sorted(means.items(), key=lambda kv: (-kv[1], str(kv[0])))
    best = ranked[0][0]
    rows = []
    for other, _ in ranked[1:]:
        plain = contrast(df, config, best, other, (), outcome, bounds)
        found = picked_best(plain, len(ranked), bounds)
        rows.append({**_row(found, best=best, other=other, p_holm=found.p_value),
                     "p_value": plain.p_value})
    return pd.DataFrame(rows, columns=columns).rename(columns={"p_holm": "p_adjusted"})


def paired_runs(first: Any, second: Any, others: Sequence[str], outcome: str = "success",
                bounds: tuple[float, float] | None = PROPORTION) -> Estimate:
    """second minus first for two runs that differ in one factor: cases paired on scenario,
    repeat and `others` (the factors both runs share), tested on one difference per scenario."""
    import pandas as pd

    both = pd.concat([first.assign(_run="first"), second.assign(_run="second")])
    return contrast(both, "_run", "second", "first", others, outcome, bounds)


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
