"""Scenario-level intervals: a rate, a mean and a difference from one number per scenario.

The scenario is the unit: repeats of a scenario are one answer said again at T = 0 and are
never independent trials, so every interval below takes one value per scenario (its mean over
repeats and cells) and counts scenarios, whatever the number of cases.

- A rate (or any measure with known bounds, such as a 1-5 score put on 0-1) gets the exact
  Clopper-Pearson interval over the scenario means (statsmodels' proportion_confint, "beta",
  with the sum of the means as the count). For 0/1 scenario means (T = 0) it is exact, so it
  covers at least 95% at any number of scenarios, where Wilson's dips to 88% at 4; for means of
  several repeats it is conservative. 23 scenarios that all pass give 85.2%-100%.
- A difference between two levels is the t-interval over the per-scenario differences (G - 1
  degrees of freedom) with a floor under its variance where scenarios tie. When many scenarios
  show the very same difference (all pass at both levels: 0), their spread says nothing about
  the scenarios not drawn: up to q0 = 1 - (alpha/2)^(1/G) of all scenarios could behave
  differently and still be missed by G draws (exact, binomial), and such scenarios could sit
  as far as the bound. The floor is the variance that makes the interval reach that far:
  when every scenario agrees the half-width is exactly q0 times the distance to the bound
  (the exact binomial bound: 23 scenarios, +-14.8 points at 95%); when only some tie, q0 is
  scaled by the share that ties and the distance mixes the bound's with the farthest
  scenario's, so with spread and few ties the floor vanishes and the plain t-interval
  remains. benchmarks/stats_calibration.py shows the coverage both ways, through the report's
  own code: at the ceiling (a level failing 5-15% of scenarios outright, which the plain
  t-interval covered 62-87% of the time) and with scenarios spread by difficulty.
- An errored case may have hidden a pass or a fail. A difference's interval is the hull of the
  interval with the level's errors counted as fails and the reference's as passes, and the one
  the other way round, so it holds whatever made a case error; the estimate is taken on the
  cases both sides answered.
- An unbounded mean (words, counts) gets the t-interval; scenarios that all agree give none (an
  unbounded measure's spread cannot be bounded from them) and a count's interval stops at 0.

Every interval is computed at a stated level: a claim's level is its share of the report's one
error rate (experiments/analyse/family.py), and its p-value is the smallest level at which its
interval leaves out 0, so a table's intervals and its adjusted p-values always agree.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np

ALPHA = 0.05
POWER = 0.80
# Below four scenarios a difference's interval has under three degrees of freedom and even a
# 100-point difference cannot be shown; no interval or test is given there.
MIN_SCENARIOS = 4
TOO_FEW = "too few scenarios"
RATE_METHOD = "exact (Clopper-Pearson) over scenario means, n = scenarios"
EFFECT_METHOD = "t over one difference per scenario (G-1 df), floored where scenarios tie"
MEAN_METHOD = "t over scenario means (G-1 df)"
PROPORTION = (0.0, 1.0)
TIE = 1e-9  # differences closer than this are one value


@dataclass(frozen=True)
class Estimate:
    """A rate, mean or difference with its interval at `level`, how it was made, and why
    there is none (`note`) when `low` and `high` are NaN."""

    value: float
    low: float
    high: float
    method: str
    scenarios: int
    p_value: float = math.nan
    note: str = ""
    level: float = 1 - ALPHA
    pairs: int = 0
    unmatched: int = 0

    @property
    def has_interval(self) -> bool:
        return not math.isnan(self.low)


def exact_rate(means: Any, alpha: Any = ALPHA) -> tuple[Any, Any, Any]:
    """Rate, low and high from scenario means on 0-1 (last axis; NaN = no answer), exact
    (Clopper-Pearson) with n = the scenarios answered and their means' sum as the count."""
    from statsmodels.stats.proportion import proportion_confint

    means = np.asarray(means, dtype=float)
    n = np.sum(~np.isnan(means), axis=-1)
    total = np.nansum(means, axis=-1)
    with np.errstate(invalid="ignore", divide="ignore"):
        value = np.where(n > 0, total / np.maximum(n, 1), np.nan)
        low, high = proportion_confint(np.clip(total, 0, n), np.maximum(n, 1), alpha=alpha,
                                       method="beta")
    low = np.where(n > 0, np.minimum(np.nan_to_num(low, nan=0.0), value), np.nan)
    high = np.where(n > 0, np.maximum(np.nan_to_num(high, nan=1.0), value), np.nan)
    return value, low, high


@dataclass(frozen=True)
class Spread:
    """What a difference's interval needs of its per-scenario values, one entry per contrast:
    scenarios, mean, variance (G - 1), the share of scenarios that tie at one value, and the
    squared distances from that value to the farther bound and to the farthest scenario."""

    n: np.ndarray
    mean: np.ndarray
    var: np.ndarray
    ties: np.ndarray
    far2: np.ndarray
    dev2: np.ndarray
    bounded: bool


def spread(values: Any, bounded: bool = True) -> Spread:
    """Spread of per-scenario differences [contrast, scenario] (NaN = not compared), on -1..1
    when `bounded`."""
    d = np.atleast_2d(np.asarray(values, dtype=float))
    present = ~np.isnan(d)
    n = present.sum(axis=-1)
    filled = np.where(present, d, 0.0)
    mean = np.divide(filled.sum(axis=-1), n, out=np.full(len(d), np.nan), where=n > 0)
    squares = np.where(present, (d - mean[:, None]) ** 2, 0.0).sum(axis=-1)
    var = np.divide(squares, n - 1, out=np.full(len(d), np.nan), where=n > 1)
    # The most common value of each row: runs of equal values once sorted (NaN last).
    rows, width = d.shape
    ordered = np.sort(np.round(d / TIE) * TIE, axis=-1)
    same = np.zeros(ordered.shape, bool)
    same[:, 1:] = ordered[:, 1:] == ordered[:, :-1]
    offset = (np.arange(rows) * width)[:, None]
    run = np.cumsum(~same, axis=-1) - 1 + offset
    counts = np.bincount(run[~np.isnan(ordered)], minlength=rows * width).reshape(rows, width)
    top = counts.argmax(axis=-1)
    largest = counts[np.arange(rows), top]
    mode = ordered[np.arange(rows), np.argmax(run - offset == top[:, None], axis=-1)]
    tied = largest > 1
    ties = np.where(tied, largest / np.maximum(n, 1), 0.0)
    dev2 = np.where(tied, np.where(present, (d - mode[:, None]) ** 2, 0.0).max(axis=-1), 0.0)
    far2 = (1 + np.abs(np.where(tied, mode, 0.0))) ** 2
    return Spread(n, mean, var, ties, far2, dev2, bounded)


def _critical(found: Spread, alpha: Any) -> np.ndarray:
    """The two-sided t critical value with G - 1 degrees of freedom (NaN below 2 scenarios)."""
    from scipy import special

    df = np.where(found.n > 1, found.n - 1, np.nan)
    return special.stdtrit(df, 1 - np.asarray(alpha, dtype=float) / 2)


def variance(found: Spread, alpha: Any, critical: Any = None) -> np.ndarray:
    """A scenario difference's variance at level alpha: the spread seen, never below what tied
    scenarios leave unknown (the module's docstring)."""
    if not found.bounded:
        return found.var
    critical = _critical(found, alpha) if critical is None else critical
    unseen = 1 - (np.asarray(alpha) / 2) ** (1 / np.maximum(found.n, 1))
    q = unseen * found.ties
    reach = found.ties * found.far2 + (1 - found.ties) * found.dev2
    return np.fmax(found.var, found.n * q * q * reach / critical ** 2)


def half_width(found: Spread, alpha: Any) -> np.ndarray:
    critical = _critical(found, alpha)
    half = critical * np.sqrt(variance(found, alpha, critical) / found.n)
    usable = (found.n >= MIN_SCENARIOS) & (half > 0)
    return np.where(usable, half, np.nan)


def limits(found: Spread, alpha: Any) -> tuple[np.ndarray, np.ndarray]:
    """The interval at level alpha (callers silence numpy's warnings about NaN: below two
    scenarios there is none, on purpose)."""
    half = half_width(found, alpha)
    low, high = found.mean - half, found.mean + half
    if found.bounded:
        low, high = np.clip(low, -1.0, 1.0), np.clip(high, -1.0, 1.0)
    return low, high


def excluded(worst: Spread, best: Spread | None, alpha: Any) -> np.ndarray:
    """Whether 0 lies outside the hull of the two intervals (errors as fails on the level's
    side, then on the reference's; `best` None: no errors, one interval) at level alpha."""
    low, high = limits(worst, alpha)
    if best is not None:
        high = limits(best, alpha)[1]
    return (low > 0) | (high < 0)


def p_values(worst: Spread, best: Spread | None) -> np.ndarray:
    """The smallest level at which the interval leaves out 0 (1 when it never does; NaN when
    there is no interval), found by bisection on log(alpha), all contrasts at once."""
    tested = ~np.isnan(limits(worst, ALPHA)[0])
    if best is not None:
        tested &= ~np.isnan(limits(best, ALPHA)[0])
    low, high = np.full(len(worst.n), -25.0), np.full(len(worst.n), math.log(0.999))
    never = ~excluded(worst, best, np.exp(high))
    for _ in range(22):  # to a few parts in a million of the level
        middle = (low + high) / 2
        inside = excluded(worst, best, np.exp(middle))
        low, high = np.where(inside, low, middle), np.where(inside, middle, high)
    return np.where(tested, np.where(never, 1.0, np.exp(high)), np.nan)


def differences(estimate: Any, worst: Any, best: Any, alphas: Any,
                bounded: bool = True) -> dict[str, np.ndarray]:
    """Contrasts at once: `estimate` (per-scenario differences on the cases both sides
    answered), `worst` and `best` (errors filled against and for the level), [contrast,
    scenario]; each contrast at its level `alphas`. Returns value, low, high, p, scenarios."""
    value = spread(estimate, bounded)
    clean = np.array_equal(worst, best, equal_nan=True)  # no errors: one interval
    lower = spread(worst, bounded)
    upper = lower if clean else spread(best, bounded)
    alphas = np.broadcast_to(np.asarray(alphas, dtype=float), value.n.shape)
    with np.errstate(invalid="ignore", divide="ignore", over="ignore"):
        low, high = limits(lower, alphas)[0], limits(upper, alphas)[1]
        return {"value": value.mean, "low": low, "high": high,
                "p": p_values(lower, None if clean else upper), "scenarios": upper.n,
                "var": variance(value, alphas), "ties": value.ties}


def mean_interval(means: Any, alpha: float = ALPHA, count: bool = False) -> tuple[float, ...]:
    """An unbounded measure's mean over scenario means with its t-interval; NaN bounds when
    fewer than MIN_SCENARIOS or when every scenario agrees; a count never goes below 0."""
    found = spread(np.asarray(means, dtype=float)[None], bounded=False)
    with np.errstate(invalid="ignore", divide="ignore"):
        low, high = limits(found, alpha)
    low = np.maximum(low, 0.0) if count else low
    return float(found.mean[0]), float(low[0]), float(high[0])


def scenario_means(df: Any, outcome: str) -> Any:
    """One mean per scenario (repeats and configurations averaged), NaN outcomes dropped."""
    return df.dropna(subset=[outcome]).groupby("scenario")[outcome].mean()


def level_mean(df: Any, outcome: str = "success",
               bounds: tuple[float, float] | None = PROPORTION, alpha: float = ALPHA,
               count: bool = False) -> Estimate:
    """A configuration's (or level's) mean with its interval over scenario means: exact for a
    bounded measure (a rate, a 1-5 score), t for an unbounded one (words; `count`: never
    below 0)."""
    means = scenario_means(df, outcome).to_numpy(float)
    scenarios = len(means)
    if scenarios == 0:
        return Estimate(math.nan, math.nan, math.nan, "no data", 0, note="no cases")
    if scenarios < MIN_SCENARIOS:
        return Estimate(float(means.mean()), math.nan, math.nan, TOO_FEW, scenarios,
                        note=f"{TOO_FEW} ({scenarios} < {MIN_SCENARIOS})")
    if bounds is not None:
        span = bounds[1] - bounds[0]
        rate, low, high = (float(x) * span + bounds[0]
                           for x in exact_rate((means - bounds[0]) / span, alpha))
        return Estimate(rate, low, high, RATE_METHOD, scenarios, level=1 - alpha)
    value, low, high = mean_interval(means, alpha, count)
    note = "every scenario gives the same value: no interval" if math.isnan(low) else ""
    return Estimate(value, low, high, MEAN_METHOD, scenarios, note=note, level=1 - alpha)


def repeat_agreement(df: Any, config: str, answers: list[str], by: str) -> Any:
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
