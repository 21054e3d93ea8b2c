"""Reasoning strategies: how one user turn thinks, each a compiled graph with its own call budget.

A small registry: `@strategy(...)` on a graph builder registers it by name. The built-ins are
entry points of the group ``treadwise.strategies`` in pyproject.toml, declared exactly as an
outside strategy declares its own.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from treadwise.plugins import Registry

if TYPE_CHECKING:
    from treadwise.agent.graph import Kit

ENTRY_POINT_GROUP = "treadwise.strategies"
DEFAULT_STRATEGY = "react"


@dataclass(frozen=True)
class Strategy:
    """A registered strategy: its graph builder and the promises it makes about a turn."""

    name: str
    build: Callable[[Kit], Any]
    budget: int  # model calls per user turn, at most
    description: str
    # Nodes whose model tokens are the answer (streamed to the user); other calls stay private.
    answer_nodes: frozenset[str] = field(default_factory=frozenset)
    # The Settings field that overrides the budget, for strategies whose budget is a setting.
    budget_setting: str | None = None

    def budget_for(self, settings: Any) -> int:
        value = getattr(settings, self.budget_setting, None) if self.budget_setting else None
        return int(value) if value else self.budget


def recursion_limit(budget: int) -> int:
    """A backstop only: every model call is one step, plus its tools and the bookkeeping."""
    return 3 * budget + 10


REGISTRY: Registry[Strategy] = Registry(ENTRY_POINT_GROUP)


def strategy(name: str, *, budget: int, description: str, answer_nodes: Sequence[str] = ("write",),
             budget_setting: str | None = None) -> Callable[[Callable], Callable]:
    """Register a graph builder as a strategy."""
    def register(build: Callable[[Kit], Any]) -> Callable[[Kit], Any]:
        REGISTRY.add(name, Strategy(name, build, budget, description, frozenset(answer_nodes),
                                    budget_setting))
        return build

    return register


def strategy_names() -> list[str]:
    """The default first, then the others as the registry lists them."""
    names = REGISTRY.names()
    return [DEFAULT_STRATEGY, *(n for n in names if n != DEFAULT_STRATEGY)] \
        if DEFAULT_STRATEGY in names else names


def get_strategy(name: str) -> Strategy:
    """The strategy registered under `name`; importing its module registers it."""
    name = (name or DEFAULT_STRATEGY).strip()
    found = REGISTRY.get(name)
    if found is None:
        raise ValueError(f"unknown strategy {name!r}; choose one of "
                         f"{', '.join(strategy_names())}")
    if not isinstance(found, Strategy):
        raise ValueError(f"{REGISTRY.targets()[name]} did not register a strategy named "
                         f"{name!r}")
    return found
