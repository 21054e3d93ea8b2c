"""The offline model's dialogue state, carried in the thread on the answers it writes.

What a math tool found is read from its artifact (tools/math_results.py), never from its text.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field, fields, replace
from typing import Any

from langchain_core.messages import AIMessage, BaseMessage, ToolMessage

from treadwise.rules.plan import Plan
from treadwise.tools.math_results import calculation_of

# The key under AIMessage.additional_kwargs; checkpointers keep it with the thread, and the
# hosted providers' clients ignore it if the conversation switches model.
STATE_KEY = "treadwise_dialogue"
MATH_TOOLS = {"add", "subtract", "multiply", "divide", "power", "square", "square_root",
              "calculate", "integrate", "differentiate", "solve_equation", "limit"}
# An exact value the rules reuse as an operand: numbers, fractions, roots, pi, e, i.
EXACT_RE = re.compile(r"-?(?:[\d./*^()+\- ]|sqrt|cbrt|pi|E\b|I\b)+")


@dataclass
class DialogueState:
    """What the conversation is about, as far as the rules need to remember."""

    pending: str | None = None       # the slot the last reply asked for
    intent: str | None = None        # the last thing answered: tires, service, business, math...
    vehicle: str | None = None
    usage: str | None = None
    city: str | None = None          # a served city, or another place the customer named
    service: str | None = None
    topic: str | None = None         # the last business-profile section
    result: str | None = None        # the last math result, exact ("1/3", "2*sqrt(2)")
    expression: str | None = None    # the last function worked on: "and the 2nd derivative?"
    formula: str | None = None       # the last formula a tool returned: "integrate that"
    variable: str | None = None
    lead_topic: str | None = None    # what the customer wants to be contacted about
    lead_email: str | None = None    # the address stored for it
    name: str | None = None
    options: list[str] = field(default_factory=list)  # choices offered with the question

    def to_dict(self) -> dict[str, Any]:
        return {k: v for k, v in asdict(self).items() if v not in (None, [])}

    @classmethod
    def from_dict(cls, data: object) -> DialogueState:
        if not isinstance(data, dict):
            return cls()
        known = {f.name for f in fields(cls)}
        return cls(**{k: v for k, v in data.items() if k in known})


def latest(messages: Sequence[BaseMessage]) -> DialogueState:
    """The state written on the newest answer that carries one (a fresh state otherwise)."""
    for message in reversed(messages):
        if isinstance(message, AIMessage) and STATE_KEY in message.additional_kwargs:
            return DialogueState.from_dict(message.additional_kwargs[STATE_KEY])
    return DialogueState()


def after(state: DialogueState, plan: Plan, results: Sequence[ToolMessage]) -> DialogueState:
    """The state once this turn's answer is written: the plan's notes plus what tools found."""
    updates = {"pending": None, "options": [], **plan.remember}
    ok = [m for m in results if m.status != "error"]
    if any(m.status == "error" for m in results):
        # Nothing that failed is remembered as done (a refused lead, a rejected expression).
        updates = {k: v for k, v in updates.items() if k not in ("lead_email", "expression")}
    math = [m for m in ok if m.name in MATH_TOOLS]
    if math:
        # "that" now means this turn's result; a formula is kept for "differentiate that".
        found = calculation_of(math[-1])
        updates["result"] = result_of(math[-1])
        updates["formula"] = found.formula if found and updates["result"] is None else None
    return replace(state, **updates)


def result_of(message: object) -> str | None:
    """The single exact number a math tool found, to reuse as the next operand; None for
    anything else (several values, a formula, an estimate, a number too long to show)."""
    found = calculation_of(message)
    value = found.exact if found is not None else None
    if value is None or not EXACT_RE.fullmatch(value) or not re.search(r"\d|pi|E", value):
        return None
    return value


def plain_number(value: str) -> int | float | None:
    """A value usable as a number argument without losing exactness, else None."""
    value = value.strip()
    if not re.fullmatch(r"-?\d+(?:\.\d+)?", value) or len(value.strip("-.0")) > 15:
        # Beyond 15 digits a float argument would no longer be the exact number.
        return None
    number = float(value)
    return int(number) if number.is_integer() and "." not in value else number
