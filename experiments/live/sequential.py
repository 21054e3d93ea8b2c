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


@dataclass(frozen=True)
class Moments:
    """What an arm's intervals need of its visitors' values: count, sum, sum of squares."""

    n: int = 0
    total: float = 0.0
    squares: float = 0.0

    @classmethod
    def of(cls, values: Sequence[float]) -> Moments:
        return cls(len(values), float(sum(values)), float(sum(v * v for v in values)))

    def add(self, value: float) -> Moments:
        return Moments(self.n + 1, self.total + value, self.squares + value * value)

    def mean_variance(self) -> tuple[float, float]:
        """(mean, variance of the mean), the variance shrunk towards a coin's."""
        if self.n == 0:
            return math.nan, math.inf
        mean = self.total / self.n
        spread = max(0.0, self.squares - self.n * mean * mean) + PRIOR_VARIANCE
        return mean, spread / self.n / self.n


def mean_variance(values: Sequence[float]) -> tuple[float, float]:
    return Moments.of(values).mean_variance()


@dataclass(frozen=True)
class Interval:
    estimate: float
    low: float
    high: float
    n: int

    def excludes_zero(self) -> bool:
        return self.low > 0 or self.high < 0


def rate_interval(values: Sequence[float] | Moments, alpha: float) -> Interval:
    """An arm's rate (the mean of its visitors' values) with its confidence sequence."""
    moments = values if isinstance(values, Moments) else Moments.of(values)
    if moments.n == 0:
        return Interval(math.nan, 0.0, 1.0, 0)
    mean, variance = moments.mean_variance()
    half = halfwidth(variance, alpha)
    return Interval(mean, max(0.0, mean - half), min(1.0, mean + half), moments.n)


def difference_interval(control: Sequence[float] | Moments, arm: Sequence[float] | Moments,
                        alpha: float) -> Interval:
    """arm - control, with its confidence sequence; unbounded until both have MIN_VISITORS."""
    control = control if isinstance(control, Moments) else Moments.of(control)
    arm = arm if isinstance(arm, Moments) else Moments.of(arm)
    (mean_c, var_c), (mean_a, var_a) = control.mean_variance(), arm.mean_variance()
    difference, n = mean_a - mean_c, control.n + arm.n
    if min(control.n, arm.n) < MIN_VISITORS:
        return Interval(difference, -1.0, 1.0, n)
    half = halfwidth(var_c + var_a, alpha)
    return Interval(difference, max(-1.0, difference - half), min(1.0, difference + half), n)
