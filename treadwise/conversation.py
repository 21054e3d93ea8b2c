"""Reading a conversation's messages: where the current user turn starts and what followed it."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TypeVar

from langchain_core.messages import BaseMessage, HumanMessage

Message = TypeVar("Message", bound=BaseMessage)

# Marks the message that hands a strategy's stage its material (a plan, a draft, notes), so a
# model reading the prompt can tell it from the customer's own words.
STAGE_KEY = "treadwise_stage"


def turn_start(messages: Sequence[BaseMessage]) -> int:
    """Index of the current turn's user message, or -1 when there is none."""
    return max((i for i, m in enumerate(messages) if isinstance(m, HumanMessage)), default=-1)


def current_turn(messages: Sequence[Message]) -> list[Message]:
    """What followed the latest user message: the model's calls, tool results, answers."""
    return list(messages[turn_start(messages) + 1:])


def stage_of(message: BaseMessage) -> str | None:
    """The stage a message hands material to, or None for the conversation's own messages."""
    return message.additional_kwargs.get(STAGE_KEY)
