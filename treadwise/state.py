"""The agent's graph state and the per-turn context the graph runs with."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Annotated, TypedDict

from langchain_core.language_models import BaseChatModel
from langchain_core.messages import AnyMessage, HumanMessage
from langgraph.graph.message import add_messages

from treadwise.personas import Persona


def turn_start(messages: Sequence[AnyMessage]) -> int:
    """Index of the current turn's user message, or -1 when there is none."""
    return max((i for i, m in enumerate(messages) if isinstance(m, HumanMessage)), default=-1)


def current_turn(messages: Sequence[AnyMessage]) -> list[AnyMessage]:
    """What followed the latest user message: the model's calls, tool results, answers."""
    return list(messages[turn_start(messages) + 1:])


class AgentState(TypedDict):
    messages: Annotated[list[AnyMessage], add_messages]
    # Model calls made in the current user turn; the caller resets it to 0 with each message.
    iterations: int


@dataclass(frozen=True)
class TurnContext:
    """Who answers this turn: switching persona or model applies from the next reply."""

    persona: Persona
    model: BaseChatModel
    model_spec: str
