"""What a grid can detect: the smallest difference found 80% of the time at a comparison's
level, and how many scenarios a difference needs (`python -m experiments power`).

Two shapes of difference are used, both through the report's own interval
(experiments/analyse/inference.py):

- a shift: every scenario moves a little, scenarios varying as much as they did here. Power is
  the noncentral t's; the spread is the median-unbiased estimate from G scenarios (sample
  variance times (G - 1) over the chi-square median), since the plain sample spread is more
  often too small than too large and would overstate the power at few scenarios;
- a share that fails outright: where every scenario agreed (the ceiling), a level that fails a
  share q of the scenarios the other passes. Power is exact: the chance, over the binomial
  number of such scenarios drawn, that the report's interval leaves out 0.
"""

from __future__ import annotations

import functools
import math

import numpy as np

from experiments.analyse import inference
from experiments.analyse.inference import MIN_SCENARIOS, POWER

# A scenario-level difference's spread when there is no run to read it from: an eighth of the
# scenarios flipping each way between two levels (sd 0.5 on the 0-1 scale). Larger than most
# runs show, so a plan made with it is on the safe side.
DEFAULT_SD = 0.5
MOST_SCENARIOS = 20_000


@functools.lru_cache(maxsize=1024)
def noncentrality(scenarios: int, alpha: float) -> float:
    """The shift (in standard errors) a two-sided t-test at `alpha` over `scenarios`
    scenario differences finds with 80% power."""
    from scipy import optimize, stats

    df = scenarios - 1
    if df > 2000:  # the t is the normal here, and scipy's noncentral t loses precision
        return float(stats.norm.ppf(1 - alpha / 2) + stats.norm.ppf(POWER))
    critical = stats.t.ppf(1 - alpha / 2, df)

    def shortfall(shift: float) -> float:  # scipy gives NaN far out, where power is 1
        found = stats.nct.sf(critical, df, shift) + stats.nct.cdf(-critical, df, shift)
        return float(np.nan_to_num(found, nan=1.0) - POWER)

    return float(optimize.brentq(shortfall, 0.0, critical + 12.0))


@functools.lru_cache(maxsize=1024)
def _median_unbiased(scenarios: int) -> float:
    """What a sample variance over `scenarios` is multiplied by to be median-unbiased."""
    from scipy import stats

    return (scenarios - 1) / float(stats.chi2.median(scenarios - 1))


def shift_detectable(scenarios: int, variance: float, alpha: float) -> float:
    """Smallest shift found with 80% power when scenario differences vary by `variance` (as
    estimated from these scenarios; median-unbiased)."""
    if scenarios < MIN_SCENARIOS or not variance > 0 or math.isnan(alpha):
        return math.nan
    sd = math.sqrt(variance * _median_unbiased(scenarios))
    return noncentrality(scenarios, alpha) * sd / math.sqrt(scenarios)


@functools.lru_cache(maxsize=1024)
def failing_share_rejections(scenarios: int, alpha: float) -> tuple[bool, ...]:
    """For k = 0..G scenarios failing outright at one level (the rest agreeing), whether the
    report's interval at `alpha` leaves out 0."""
    k = np.arange(scenarios + 1, dtype=float)
    n = np.full(scenarios + 1, float(scenarios))
    tied = np.maximum(k, n - k)
    with np.errstate(invalid="ignore", divide="ignore"):
        found = inference.Spread(
            n, -k / n, k * (n - k) / (n * (n - 1)), np.where(tied > 1, tied / n, 0.0),
            np.where(n - k >= k, 1.0, 4.0), np.where((k > 0) & (k < n), 1.0, 0.0), True)
        low, high = inference.limits(found, np.full(scenarios + 1, alpha))
    return tuple(bool(x) for x in (high < 0) | (low > 0))


def failing_share_power(scenarios: int, share: float, alpha: float) -> float:
    """Chance the report finds a level that fails `share` of the scenarios the other passes."""
    from scipy import stats

    rejects = np.array(failing_share_rejections(scenarios, alpha))
    weights = stats.binom.pmf(np.arange(scenarios + 1), scenarios, share)
    return float(np.sum(weights * rejects))


@functools.lru_cache(maxsize=1024)
def failing_share_detectable(scenarios: int, alpha: float) -> float:
    """Smallest share of failing scenarios found with 80% power (NaN: never, at this many)."""
    if scenarios < MIN_SCENARIOS or math.isnan(alpha):
        return math.nan
    if failing_share_power(scenarios, 1.0, alpha) < POWER:
        return math.nan
    low, high = 0.0, 1.0
    for _ in range(40):
        middle = (low + high) / 2
        low, high = ((middle, high) if failing_share_power(scenarios, middle, alpha) < POWER
                     else (low, middle))
    return high


def detectable(scenarios: int, variance: float, ties: float, alpha: float) -> float:
    """The detectable difference the report states for one comparison: a failing share where
    every scenario agreed, else a shift with the spread seen (its variance at `alpha`, the
    tie floor included). NaN where not even a 100-point difference would be found."""
    if ties >= 1.0:
        return failing_share_detectable(scenarios, alpha)
    found = shift_detectable(scenarios, variance, alpha)
    return found if found <= 1.0 else math.nan


def scenarios_needed(detect: float, sd: float, alpha: float) -> dict[str, int]:
    """Scenarios needed to find a difference of `detect` (a fraction) with 80% power at
    `alpha`: as a shift with scenario spread `sd`, and as a share failing outright; the
    plan needs the larger. 0 when more than MOST_SCENARIOS would be needed."""
    def first(found: object) -> int:
        low, high = MIN_SCENARIOS, MOST_SCENARIOS
        if not found(high):  # type: ignore[operator]
            return 0
        while low < high:
            middle = (low + high) // 2
            low, high = (low, middle) if found(middle) else (middle + 1, high)  # type: ignore
        return low

    shift = first(lambda n: noncentrality(n, alpha) * sd / math.sqrt(n) <= detect)
    share = first(lambda n: failing_share_power(n, detect, alpha) >= POWER)
    return {"shift": shift, "failing share": share}
