"""Statistics for sweeps, from scipy and statsmodels: Wilson and cluster-bootstrap intervals,
exact McNemar, Holm's correction, rank tests; seeded so a report reads the same every time."""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

SEED = 20_261_123
BOOTSTRAP = 2000
ALPHA = 0.05


def wilson(successes: int, n: int) -> tuple[float, float]:
    """Wilson score interval (95%) for a binomial proportion; (0, 1) when n is 0."""
    from statsmodels.stats.proportion import proportion_confint

    if n <= 0:
        return 0.0, 1.0
    if not 0 <= successes <= n:
        raise ValueError(f"successes must be between 0 and n, got {successes} of {n}")
    low, high = proportion_confint(successes, n, alpha=ALPHA, method="wilson")
    return max(0.0, float(low)), min(1.0, float(high))


def mcnemar_exact(b: int, c: int) -> float:
    """Two-sided exact McNemar p-value from the discordant pair counts b and c."""
    from statsmodels.stats.contingency_tables import mcnemar

    if b < 0 or c < 0:
        raise ValueError("discordant counts cannot be negative")
    if b + c == 0:
        return 1.0
    return float(mcnemar([[0, b], [c, 0]], exact=True).pvalue)


def holm(p_values: Sequence[float]) -> list[float]:
    """Holm-adjusted p-values (family-wise error control for many comparisons)."""
    from statsmodels.stats.multitest import multipletests

    if not p_values:
        return []
    return [float(p) for p in multipletests(list(p_values), alpha=ALPHA, method="holm")[1]]


def percentile(values: Sequence[float], q: float) -> float:
    """The q-th percentile (0-100), numpy's linear interpolation; NaN if empty."""
    import numpy as np

    data = [v for v in values if not math.isnan(v)]
    return float(np.percentile(data, q)) if data else math.nan


def mean_interval(values: Sequence[float]) -> tuple[float, float, float]:
    """Mean and Student-t 95% interval of the mean (NaN bounds under 2 values)."""
    from scipy import stats

    data = [v for v in values if not math.isnan(v)]
    if not data:
        return math.nan, math.nan, math.nan
    mean = sum(data) / len(data)
    if len(data) < 2 or len(set(data)) == 1:
        return mean, (mean if len(data) > 1 else math.nan), (mean if len(data) > 1 else math.nan)
    low, high = stats.t.interval(1 - ALPHA, len(data) - 1, loc=mean, scale=stats.sem(data))
    return mean, float(low), float(high)


@dataclass(frozen=True)
class Estimate:
    """A rate (or mean difference) with its 95% interval and how the interval was made."""

    value: float
    low: float
    high: float
    method: str


def _clusters(values: Sequence[float], clusters: Sequence[Any]) -> list[tuple[float, int]]:
    """(sum, count) per cluster, in a stable order."""
    sums: dict[Any, list[float]] = {}
    for value, cluster in zip(values, clusters, strict=True):
        sums.setdefault(cluster, []).append(float(value))
    return [(sum(v), len(v)) for _, v in sorted(sums.items(), key=lambda kv: str(kv[0]))]


def cluster_bootstrap(values: Sequence[float], clusters: Sequence[Any], *,
                      seed: int = SEED, rounds: int = BOOTSTRAP,
                      proportion: bool = True) -> Estimate:
    """Mean of `values` with a 95% percentile interval from resampling whole clusters.

    Cases of one scenario are not independent trials (a scenario the model cannot do fails
    every repeat), so scenarios are resampled, not cases. When every cluster agrees the
    bootstrap has nothing to resample; then the Wilson interval over the number of clusters
    (the effective sample size) stands in, so 100% of 17 scenarios is not reported as certain.
    `proportion` False (differences, counts) leaves such an interval at the value itself.
    """
    import numpy as np

    groups = _clusters(values, clusters)
    if not groups:
        return Estimate(math.nan, math.nan, math.nan, "no data")
    sums = np.array([g[0] for g in groups])
    counts = np.array([g[1] for g in groups])
    value = float(sums.sum() / counts.sum())
    means = sums / counts
    if len(groups) == 1 or np.allclose(means, means[0]):
        if proportion and set(map(float, values)) <= {0.0, 1.0}:
            low, high = wilson(round(value * len(groups)), len(groups))
            return Estimate(value, low, high, f"Wilson over {len(groups)} clusters (all agree)")
        return Estimate(value, value, value, "every cluster agrees")
    rng = np.random.default_rng(seed)
    picks = rng.integers(0, len(groups), size=(rounds, len(groups)))
    resampled = sums[picks].sum(axis=1) / counts[picks].sum(axis=1)
    low, high = np.percentile(resampled, [2.5, 97.5])
    return Estimate(value, float(low), float(high), f"cluster bootstrap ({len(groups)} clusters)")


def paired_difference(pairs: Sequence[tuple[float, float]], clusters: Sequence[Any], *,
                      seed: int = SEED) -> Estimate:
    """Mean of second - first over paired outcomes, clustered (by scenario) for its interval."""
    return cluster_bootstrap([b - a for a, b in pairs], clusters, seed=seed, proportion=False)


def kruskal(groups: Sequence[Sequence[float]]) -> float:
    """Kruskal-Wallis p-value that the groups come from one distribution (NaN if it cannot
    be computed: fewer than two groups, or every value the same)."""
    from scipy import stats

    groups = [list(g) for g in groups if len(g)]
    if len(groups) < 2 or len({v for g in groups for v in g}) < 2:
        return math.nan
    try:
        return float(stats.kruskal(*groups).pvalue)
    except ValueError:
        return math.nan
