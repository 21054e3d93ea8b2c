"""The agent's graph state and the per-turn context the graph runs with."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Annotated, Any, TypedDict

from langchain_core.language_models import BaseChatModel
from langchain_core.messages import AnyMessage, HumanMessage
from langgraph.graph.message import add_messages

from treadwise.agent.routing import Route
from treadwise.errors import redact
from treadwise.personas import Persona


class AgentState(TypedDict):
    messages: Annotated[list[AnyMessage], add_messages]
    # Model calls made in the current user turn; the caller resets it to 0 with each message.
    iterations: int
    # Empty replies in a row; each sends the graph back to the same model step with a nudge.
    nudges: int
    # What a strategy records of this turn (stages, attempts, the vote); reset with each message.
    trace: dict[str, Any]


def turn_input(message: str, follows: str | None = None) -> dict[str, Any]:
    """The graph input that starts a user turn: the message, and every per-turn count at zero.

    A secret the user types is redacted here, so it never reaches memory (nor the model);
    `follows` is the customer's previous message (a password sent right after a login).
    """
    return {"messages": [HumanMessage(redact(message, follows=follows))], "iterations": 0,
            "nudges": 0, "trace": {}}


@dataclass(frozen=True)
class TurnContext:
    """Who answers this turn: switching persona or model applies from the next reply."""

    persona: Persona
    model: BaseChatModel
    model_spec: str
    # The tool groups the turn starts with and the prompt it uses (the default binds all).
    route: Route = Route()
