"""What the offline model decided for one user turn: tool calls by step, or a reply of a kind."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

# Stands in an expression for the result of the previous step in the same turn.
PREVIOUS = "§"


@dataclass(frozen=True)
class Call:
    tool: str
    args: dict[str, Any]


@dataclass
class Plan:
    """One turn's decision.

    `steps` run one after another (the calls of a step together); `reply` names the voice
    part written when no tool is needed; `kind` says how tool results are worded (math,
    info, recommendation, availability, lead, feedback); `remember` updates the dialogue
    state when the turn ends (a `pending` slot only lives until the next user message).
    """

    intent: str
    steps: list[list[Call]] = field(default_factory=list)
    reply: str | None = None
    kind: str = "info"
    values: dict[str, str] = field(default_factory=dict)
    method: str = ""
    note: str | None = None
    remember: dict[str, Any] = field(default_factory=dict)


def ask(label: str, reply: str, pending: str | None = None, **remember: Any) -> Plan:
    """A clarifying question (or any reply without tools) that may leave a slot pending."""
    values = {k: str(v) for k, v in remember.pop("values", {}).items()}
    return Plan(label, reply=reply, values=values, remember={"pending": pending, **remember})


def single(intent: str, call: Call, kind: str = "info", **remember: Any) -> Plan:
    """A plan of one tool call."""
    return Plan(intent, [[call]], kind=kind, remember={"intent": intent, **remember})
