"""The agent: one user turn through the capped reason/tools graph, with memory and personas."""

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
