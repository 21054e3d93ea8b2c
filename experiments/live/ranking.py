"""Side-by-side picks to a Bradley-Terry ranking, with intervals from a visitor-level bootstrap.

Bradley-Terry: P(arm i is picked over arm j) = 1 / (1 + exp(s_j - s_i)), a logistic regression
on the pairs without an intercept. The strengths s are fitted by maximum likelihood (Newton's
method, many bootstrap samples at once), the first arm's fixed at 0, so each strength is the
log-odds of beating it. Ties and "both bad" do not enter the fit: under Davidson's model of ties,
P(i picked | one was picked) is exactly Bradley-Terry, so dropping them keeps the estimate right.
One visitor's picks are not independent (the same taste twice), so the intervals resample
visitors, not picks. They are fixed-sample intervals: read them at the stopping point.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

# A whisper of a prior (a normal of sd 10 on log-odds): an arm never beaten gets a large finite
# strength instead of an infinite one; with data it moves no estimate visibly.
RIDGE = 0.01
NEWTON_STEPS = 60
MAX_STEP = 3.0
BOOTSTRAP = 1000


@dataclass(frozen=True)
class Strength:
    arm: str
    estimate: float  # log-odds of being picked over the first arm
    low: float
    high: float
    picks: int  # decisive picks this arm was in

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


def rank(picks: Sequence[dict[str, Any]], arms: Sequence[str], alpha: float = 0.05,
         samples: int = BOOTSTRAP, seed: int = 0) -> list[Strength]:
    """The arms, strongest first, with (1 - alpha) percentile intervals; empty with no
    decisive pick."""
    per_visitor, _ = visitor_wins(picks, arms)
    if per_visitor.shape[0] == 0 or per_visitor.sum() == 0:
        return []
    estimate = fit(per_visitor.sum(axis=0))
    spread = bootstrap(per_visitor, samples, np.random.default_rng(seed))
    low, high = np.quantile(spread, [alpha / 2, 1 - alpha / 2], axis=0)
    games = per_visitor.sum(axis=0)
    played = games.sum(axis=0) + games.sum(axis=1)
    found = [Strength(arm, float(estimate[n]), float(low[n]), float(high[n]), int(played[n]))
             for n, arm in enumerate(arms)]
    return sorted(found, key=lambda s: -s.estimate)
