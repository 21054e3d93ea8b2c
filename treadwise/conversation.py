"""Reading a conversation's messages: where the current user turn starts and what followed it."""

from __future__ import annotations

from collections.abc import Sequence

from langchain_core.messages import AnyMessage, HumanMessage


def turn_start(messages: Sequence[AnyMessage]) -> int:
    """Index of the current turn's user message, or -1 when there is none."""
    return max((i for i, m in enumerate(messages) if isinstance(m, HumanMessage)), default=-1)


def current_turn(messages: Sequence[AnyMessage]) -> list[AnyMessage]:
    """What followed the latest user message: the model's calls, tool results, answers."""
    return list(messages[turn_start(messages) + 1:])
