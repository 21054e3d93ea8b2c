"""The agent's graph state and the per-turn context the graph runs with."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Annotated, TypedDict

from langchain_core.language_models import BaseChatModel
from langchain_core.messages import AnyMessage
from langgraph.graph.message import add_messages

from treadwise.personas import Persona


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
