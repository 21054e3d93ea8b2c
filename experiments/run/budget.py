"""What a sweep spends against its grid's budget: paid model calls (the judge's too) and
estimated cost."""

from __future__ import annotations

from dataclasses import dataclass

from experiments.store.record import CaseRow


@dataclass
class Budget:
    """Spending so far against the grid's limits; new cases start only while within them."""

    max_calls: int | None = None
    max_cost_usd: float | None = None
    calls: int = 0
    cost_usd: float = 0.0
    judge_calls: int = 0
    judge_cost_usd: float = 0.0

    def add(self, row: CaseRow) -> None:
        self.calls += row.paid_calls
        self.judge_calls += row.judge_calls
        self.cost_usd += row.total_cost_usd or 0.0
        self.judge_cost_usd += row.judge_cost_usd or 0.0

    def exceeded(self) -> str | None:
        if self.max_calls is not None and self.calls >= self.max_calls:
            return f"max_calls {self.max_calls} reached ({self.calls} model calls made)"
        if self.max_cost_usd is not None and self.cost_usd >= self.max_cost_usd:
            return (f"max_cost_usd {self.max_cost_usd:g} reached (estimated "
                    f"${self.cost_usd:.4f} spent)")
        return None
