"""Side-by-side picks to a Bradley-Terry ranking, with intervals from a visitor-level bootstrap
that hold for every pair of arms at once, shown only once every pair has enough visitors.

Bradley-Terry: P(arm i is picked over arm j) = 1 / (1 + exp(s_j - s_i)), a logistic regression
on the pairs without an intercept. The strengths s are fitted by maximum likelihood (Newton's
method, many bootstrap samples at once), the first arm's fixed at 0, so each strength is the
log-odds of beating it. Ties and "both bad" do not enter the fit: under Davidson's model of ties,
P(i picked | one was picked) is exactly Bradley-Terry, so dropping them keeps the estimate right.
One visitor's picks are not independent (the same taste twice), so the intervals resample
visitors, not picks. They are fixed-sample intervals: read them at the stopping point.

Every pair of arms is one claim ("a is picked over b more often than not"), and the claims of a
report share its alpha (Bonferroni over the k(k-1)/2 pairs), so with equal arms the report
names some arm stronger in at most alpha of experiments, however many arms. A pair's interval
is its strengths' difference plus or minus a t quantile (at alpha over the pairs, with the
visitors who compared that pair directly less one as degrees of freedom) times the bootstrap's
spread, inflated by n/(n-1): the plain percentile bootstrap is too narrow with a few dozen
visitors (3 equal arms, 30-100 visitors: 5-8% false claims even with Bonferroni, against
0.5-4% this way; benchmarks/stats_calibration.py). Nothing is shown before every pair has had
MIN_PAIR_VISITORS visitors with a decisive pick: below that a pair's spread rests on a handful
of people, and with one visitor a bootstrap of one gives a zero-width interval.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

# A whisper of a prior (a normal of sd 10 on log-odds): an arm never beaten gets a large finite
# strength instead of an infinite one; with data it moves no estimate visibly.
RIDGE = 0.01
NEWTON_STEPS = 60
MAX_STEP = 3.0
BOOTSTRAP = 2000
MIN_PAIR_VISITORS = 10
NOT_ENOUGH = "not enough picks yet"


@dataclass(frozen=True)
class Strength:
    arm: str
    estimate: float  # log-odds of being picked over the first arm
    low: float
    high: float
    picks: int  # decisive picks this arm was in
    above: tuple[str, ...] = ()  # arms it is shown to be picked over (at the report's alpha)

    @property
    def beats_control(self) -> tuple[float, float, float]:
        """P(picked over the first arm) with its interval."""
        return _logistic(self.estimate), _logistic(self.low), _logistic(self.high)


def _logistic(x: float) -> float:
    return float(1 / (1 + np.exp(-x)))


def fit(wins: np.ndarray, ridge: float = RIDGE) -> np.ndarray:
    """Strengths for win counts wins[..., i, j] (times i was picked over j), the first arm's
    0; the leading axes are independent data sets (bootstrap samples) fitted together."""
    wins = np.asarray(wins, dtype=float)
    k = wins.shape[-1]
    games = wins + np.swapaxes(wins, -1, -2)
    free = np.zeros(wins.shape[:-2] + (k - 1,))
    for _ in range(NEWTON_STEPS):
        s = np.concatenate([np.zeros(free.shape[:-1] + (1,)), free], axis=-1)
        p = 1 / (1 + np.exp(s[..., None, :] - s[..., :, None]))  # p[i, j] = P(i over j)
        gradient = (wins - games * p).sum(axis=-1)[..., 1:] - ridge * free
        weight = games * p * (1 - p)
        hessian = weight - np.eye(k) * weight.sum(axis=-1)[..., None]
        hessian = hessian[..., 1:, 1:] - ridge * np.eye(k - 1)
        step = np.linalg.solve(hessian, gradient[..., None])[..., 0]
        free = free - np.clip(step, -MAX_STEP, MAX_STEP)
        if np.abs(step).max(initial=0.0) < 1e-9:
            break
    return np.concatenate([np.zeros(free.shape[:-1] + (1,)), free], axis=-1)


def visitor_wins(picks: Sequence[dict[str, Any]], arms: Sequence[str]
                 ) -> tuple[np.ndarray, list[str]]:
    """(wins per visitor [visitor, i, j], the visitors), decisive picks between known arms."""
    index = {arm: n for n, arm in enumerate(arms)}
    visitors: dict[str, np.ndarray] = {}
    for pick in picks:
        a, b, winner = pick["arm_a"], pick["arm_b"], pick["winner"]
        if a not in index or b not in index or winner not in (a, b):
            continue
        loser = b if winner == a else a
        counts = visitors.setdefault(pick["visitor"], np.zeros((len(arms), len(arms))))
        counts[index[winner], index[loser]] += 1
    names = list(visitors)
    stacked = (np.stack([visitors[v] for v in names]) if names
               else np.zeros((0, len(arms), len(arms))))
    return stacked, names


def bootstrap(per_visitor: np.ndarray, samples: int, rng: np.random.Generator) -> np.ndarray:
    """Strengths of `samples` data sets of visitors drawn with replacement [sample, arm]."""
    count = per_visitor.shape[0]
    draws = rng.multinomial(count, np.full(count, 1 / count), size=samples)
    return fit(np.einsum("rv,vij->rij", draws, per_visitor))


@dataclass(frozen=True)
class Ranking:
    """The arms strongest first (empty until every pair has MIN_PAIR_VISITORS), each pair's
    level, and what is still missing."""

    strengths: list[Strength] = field(default_factory=list)
    level: float = math.nan  # each pair's (two-sided) level: alpha over the pairs
    fewest: tuple[str, str, int] | None = None  # the pair with the fewest visitors, and them

    @property
    def status(self) -> str:
        """'' once the ranking is shown, else the sentence a page shows instead."""
        if self.strengths:
            return ""
        if self.fewest is None:
            return f"{NOT_ENOUGH}: no decisive pick"
        a, b, count = self.fewest
        return (f"{NOT_ENOUGH}: every pair of arms needs decisive picks from "
                f"{MIN_PAIR_VISITORS} visitors before any strength or interval is shown "
                f"(fewest so far: {a} vs {b}, {count})")


def pair_visitors(per_visitor: np.ndarray) -> np.ndarray:
    """[i, j]: how many visitors made a decisive pick between arms i and j."""
    games = per_visitor + np.swapaxes(per_visitor, -1, -2)
    return (games > 0).sum(axis=0)


def rank(picks: Sequence[dict[str, Any]], arms: Sequence[str], alpha: float = 0.05,
         samples: int = BOOTSTRAP, seed: int = 0) -> Ranking:
    """The arms, strongest first, with intervals that hold for every pair at once (see the
    module's docstring); no strength before every pair has MIN_PAIR_VISITORS visitors."""
    from scipy import stats

    per_visitor, _ = visitor_wins(picks, arms)
    k = len(arms)
    pairs = [(i, j) for i in range(k) for j in range(i + 1, k)]
    level = alpha / max(1, len(pairs))
    if per_visitor.shape[0] == 0 or per_visitor.sum() == 0:
        return Ranking(level=level)
    met = pair_visitors(per_visitor)
    fewest = min(pairs, key=lambda p: (met[p], p))
    if met[fewest] < MIN_PAIR_VISITORS:
        return Ranking(level=level, fewest=(arms[fewest[0]], arms[fewest[1]],
                                            int(met[fewest])))
    estimate = fit(per_visitor.sum(axis=0))
    spread = bootstrap(per_visitor, samples, np.random.default_rng(seed))

    def half(i: int, j: int) -> float:
        n = int(met[i, j])
        sd = float(np.std(spread[:, i] - spread[:, j])) * math.sqrt(n / (n - 1))
        return float(stats.t.ppf(1 - level / 2, n - 1)) * sd

    widths = {(i, j): half(i, j) for i, j in pairs}
    above: dict[int, list[str]] = {n: [] for n in range(k)}
    for (i, j), width in widths.items():
        gap = estimate[i] - estimate[j]
        if abs(gap) > width:
            winner, loser = (i, j) if gap > 0 else (j, i)
            above[winner].append(arms[loser])
    games = per_visitor.sum(axis=0)
    played = games.sum(axis=0) + games.sum(axis=1)
    found = [Strength(arm, float(estimate[n]),
                      float(estimate[n] - (widths[(0, n)] if n else 0.0)),
                      float(estimate[n] + (widths[(0, n)] if n else 0.0)), int(played[n]),
                      tuple(above[n])) for n, arm in enumerate(arms)]
    return Ranking(sorted(found, key=lambda s: -s.estimate), level)
