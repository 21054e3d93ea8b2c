"""Reading a conversation's messages: where the current user turn starts and what followed it."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TypeVar

from langchain_core.messages import BaseMessage, HumanMessage, SystemMessage

Message = TypeVar("Message", bound=BaseMessage)

# Marks the message that hands a strategy's stage its material (a plan, a draft, notes), so a
# model reading the prompt can tell it from the customer's own words.
STAGE_KEY = "treadwise_stage"
# What the graph says when a model's reply was empty or unreadable: ours, not the customer's.
EMPTY_REPLY_NUDGE = (
    "Your previous reply was empty or could not be read. Answer my last message directly in "
    "plain text, using the tool results above if there are any."
)
# How a call's system message names the tools it was not given (routing binds a few groups);
# the tools node still runs them, so a model may call any of them by name.
MORE_TOOLS = "More tools exist for this conversation; call one by name if you need it: "


def turn_start(messages: Sequence[BaseMessage]) -> int:
    """Index of the current turn's user message, or -1 when there is none."""
    return max((i for i, m in enumerate(messages) if isinstance(m, HumanMessage)), default=-1)


def current_turn(messages: Sequence[Message]) -> list[Message]:
    """What followed the latest user message: the model's calls, tool results, answers."""
    return list(messages[turn_start(messages) + 1:])


def stage_of(message: BaseMessage) -> str | None:
    """The stage a message hands material to, or None for the conversation's own messages."""
    return message.additional_kwargs.get(STAGE_KEY)


def callable_by_name(messages: Sequence[BaseMessage]) -> set[str]:
    """The tools a call's system message says exist beyond those bound to it."""
    names: set[str] = set()
    for message in messages:
        if isinstance(message, SystemMessage):
            for line in message.text.splitlines():
                if line.startswith(MORE_TOOLS):
                    names.update(n.strip() for n in line[len(MORE_TOOLS):].rstrip(".").split(","))
    return names - {""}
