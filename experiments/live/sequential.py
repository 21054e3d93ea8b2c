"""Anytime-valid intervals for live experiments: a normal-mixture confidence sequence (mSPRT).

The mixture sequential probability ratio test of Robbins (1970), as Johari et al. (2017,
"Peeking at A/B tests") use it: with the estimate's variance V, a normal mixture of effects
with variance tau^2 gives the likelihood ratio

    L = sqrt(V / (V + tau^2)) * exp(tau^2 * d^2 / (2 V (V + tau^2)))

and P(L ever reaches 1/alpha | no effect) <= alpha, however often one looks. Inverted, it is a
confidence sequence: d +- halfwidth(V) covers the true difference at every look at once. The
variance is estimated from the data (plug-in; valid as visitors grow, Waudby-Smith et al.
2023), which is why nothing is claimed before MIN_VISITORS visitors per arm.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

# The spread of effects the test is tuned for, on the 0-1 scale of a rate: ten points.
MIXTURE_SD = 0.1
MIN_VISITORS = 20
# A pseudo-observation of a coin's variance: a handful of identical visitors is not certainty.
PRIOR_VARIANCE = 0.25


def halfwidth(variance: float, alpha: float, tau2: float = MIXTURE_SD ** 2) -> float:
    """Half the width of the (1 - alpha) confidence sequence for an estimate of `variance`."""
    if variance <= 0:
        return 0.0
    spread = variance + tau2
    return math.sqrt(2 * variance * spread / tau2
                     * (math.log(1 / alpha) + 0.5 * math.log(spread / variance)))


def mean_variance(values: Sequence[float]) -> tuple[float, float]:
    """(mean, variance of the mean), the variance shrunk towards a coin's."""
    n = len(values)
    if n == 0:
        return math.nan, math.inf
    mean = sum(values) / n
    spread = sum((v - mean) ** 2 for v in values) + PRIOR_VARIANCE
    return mean, spread / n / n


@dataclass(frozen=True)
class Interval:
    estimate: float
    low: float
    high: float
    n: int

    def excludes_zero(self) -> bool:
        return self.low > 0 or self.high < 0


def rate_interval(values: Sequence[float], alpha: float) -> Interval:
    """An arm's rate (the mean of its visitors' values) with its confidence sequence."""
    mean, variance = mean_variance(values)
    if not values:
        return Interval(math.nan, 0.0, 1.0, 0)
    half = halfwidth(variance, alpha)
    return Interval(mean, max(0.0, mean - half), min(1.0, mean + half), len(values))


def difference_interval(control: Sequence[float], arm: Sequence[float],
                        alpha: float) -> Interval:
    """arm - control, with its confidence sequence; unbounded until both have MIN_VISITORS."""
    if min(len(control), len(arm)) < MIN_VISITORS:
        mean_a = sum(arm) / len(arm) if arm else math.nan
        mean_c = sum(control) / len(control) if control else math.nan
        return Interval(mean_a - mean_c, -1.0, 1.0, len(control) + len(arm))
    mean_c, var_c = mean_variance(control)
    mean_a, var_a = mean_variance(arm)
    difference = mean_a - mean_c
    half = halfwidth(var_c + var_a, alpha)
    return Interval(difference, max(-1.0, difference - half), min(1.0, difference + half),
                    len(control) + len(arm))
