"""The agent: one user turn through a strategy's capped graph, with memory and personas."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from treadwise.agent.agent import (
        Agent,
        Event,
        StageFinished,
        TextDelta,
        ToolFinished,
        ToolStarted,
        ToolStep,
        TurnFinished,
        TurnResult,
    )

__all__ = ["Agent", "Event", "StageFinished", "TextDelta", "ToolFinished", "ToolStarted",
           "ToolStep", "TurnFinished", "TurnResult"]


def __getattr__(name: str) -> Any:
    # Loaded on first use, so the strategy registry can be read without importing LangGraph.
    if name in __all__:
        from treadwise.agent import agent

        return getattr(agent, name)
    raise AttributeError(f"module 'treadwise.agent' has no attribute {name!r}")
