"""Small exact statistics for sweeps: Wilson intervals, exact McNemar, percentiles."""

from __future__ import annotations

import math
from collections.abc import Sequence

Z95 = 1.959963984540054


def wilson(successes: int, n: int, z: float = Z95) -> tuple[float, float]:
    """Wilson score interval for a binomial proportion (95% by default); (0, 1) when n is 0."""
    if n <= 0:
        return 0.0, 1.0
    if not 0 <= successes <= n:
        raise ValueError(f"successes must be between 0 and n, got {successes} of {n}")
    p = successes / n
    z2 = z * z
    denominator = 1 + z2 / n
    centre = (p + z2 / (2 * n)) / denominator
    half = z * math.sqrt(p * (1 - p) / n + z2 / (4 * n * n)) / denominator
    return max(0.0, centre - half), min(1.0, centre + half)


def mcnemar_exact(b: int, c: int) -> float:
    """Two-sided exact McNemar p-value from the discordant pair counts b and c.

    Under the null each discordant pair is a fair coin: p = 2 * P(X <= min(b, c)) for
    X ~ Binomial(b + c, 1/2), capped at 1.
    """
    if b < 0 or c < 0:
        raise ValueError("discordant counts cannot be negative")
    n = b + c
    if n == 0:
        return 1.0
    tail = sum(math.comb(n, k) for k in range(min(b, c) + 1))
    return min(1.0, 2 * tail / 2 ** n)


def percentile(values: Sequence[float], q: float) -> float:
    """The q-th percentile (0-100) with linear interpolation, as numpy's default; NaN if empty."""
    data = sorted(v for v in values if not math.isnan(v))
    if not data:
        return math.nan
    rank = (len(data) - 1) * q / 100
    low, high = math.floor(rank), math.ceil(rank)
    return data[low] + (data[high] - data[low]) * (rank - low)


def mean_interval(values: Sequence[float], z: float = Z95) -> tuple[float, float, float]:
    """Mean and a normal-approximation 95% interval of the mean (NaN bounds under 2 values)."""
    data = [v for v in values if not math.isnan(v)]
    if not data:
        return math.nan, math.nan, math.nan
    mean = sum(data) / len(data)
    if len(data) < 2:
        return mean, math.nan, math.nan
    sd = math.sqrt(sum((v - mean) ** 2 for v in data) / (len(data) - 1))
    half = z * sd / math.sqrt(len(data))
    return mean, mean - half, mean + half
