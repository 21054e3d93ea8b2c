"""One error rate per report: every claim a report's summary can make is in one family.

A report's summary makes three kinds of claim: that one level of a factor differs from another
(every pair of levels of every varied factor), that the best configuration beats another, and
that one persona's style differs from another's (every pair, every style measure). With no
true difference anywhere, the chance that the summary makes any claim at all is kept at or
below 5%: each kind present gets an equal share of 5%, split over its comparisons (Bonferroni),
except the best configuration, which allows for having been picked from the same data with the
studentized range over all configurations (Tukey, at its share). This is single-step: each
comparison has one level, its interval is computed at that level, and it is a claim exactly
when that interval leaves out 0, so the intervals shown always agree with the decisions. The
family is fixed by the design (levels, configurations, measures), never by the outcomes.
"""

from __future__ import annotations

import functools
import math
from dataclasses import dataclass, field

from experiments.analyse.inference import ALPHA

EFFECTS, BEST, STYLE = "factor effects", "best configuration", "persona style"


@dataclass(frozen=True)
class Family:
    """The report's comparisons by kind, and the level each is tested at."""

    counts: dict[str, int] = field(default_factory=dict)  # kind -> comparisons
    configurations: int = 0  # what the best configuration is picked from
    scenarios: int = 0  # the run's scenarios: the degrees of freedom of the studentized range
    alpha: float = ALPHA

    @property
    def kinds(self) -> list[str]:
        return [kind for kind, count in self.counts.items() if count]

    @property
    def size(self) -> int:
        return sum(self.counts.values())

    def share(self, kind: str) -> float:
        """The part of the report's error rate this kind of claim may spend."""
        return self.alpha / len(self.kinds) if kind in self.kinds else 0.0

    def level(self, kind: str) -> float:
        """The per-comparison level (two-sided) of a comparison of this kind; NaN when the
        report makes no such comparison."""
        if kind not in self.kinds:
            return math.nan
        if kind == BEST:
            return picked_best_level(self.configurations, self.scenarios, self.share(kind))
        return self.share(kind) / self.counts[kind]

    def adjusted(self, kind: str, p_value: float) -> float:
        """A p-value on the report's scale: below the report's 5% exactly when the comparison
        is a claim (its p-value below its level)."""
        level = self.level(kind)
        if math.isnan(p_value) or math.isnan(level):
            return math.nan
        return min(1.0, p_value * self.alpha / level)

    def sentence(self) -> str:
        """The report's one error rate, in words."""
        if not self.kinds:
            return "No comparison was tested, so the summary makes no claim of a difference."
        parts = [f"{self.counts[kind]} {kind} comparison(s)" for kind in self.kinds]
        return (f"One error rate for the whole report: with no true difference anywhere, the "
                f"chance that this summary claims any difference is at most "
                f"{self.alpha:.0%}. Its {self.size} comparisons ({'; '.join(parts)}) share it: "
                f"each kind gets {self.alpha / len(self.kinds):.2%}, split evenly over its "
                "comparisons (the best configuration's allowing for picking it among "
                f"{self.configurations}), and every interval in the summary and the tables is "
                "at its comparison's level.")


@functools.lru_cache(maxsize=256)
def picked_best_level(configurations: int, scenarios: int, alpha: float) -> float:
    """The per-comparison level matching Tukey's studentized range for `configurations`
    means over `scenarios` scenarios at family level `alpha`: any two of them, the best
    included, are told apart wrongly in at most `alpha` of studies."""
    from scipy import stats

    if configurations < 2 or scenarios < 2:
        return math.nan
    if configurations == 2:
        return alpha
    point = stats.studentized_range.ppf(1 - alpha, configurations, scenarios - 1)
    return float(2 * stats.t.sf(point / math.sqrt(2), scenarios - 1))


def pairs(count: int) -> int:
    """How many pairs `count` things make."""
    return count * (count - 1) // 2
