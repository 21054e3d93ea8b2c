"""The offline model's dialogue state, carried in the thread on the answers it writes."""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field, fields, replace
from typing import Any

from langchain_core.messages import AIMessage, BaseMessage, ToolMessage

from treadwise.rules.plan import Plan

# The key under AIMessage.additional_kwargs; checkpointers keep it with the thread, and the
# hosted providers' clients ignore it if the conversation switches model.
STATE_KEY = "treadwise_dialogue"
MATH_TOOLS = {"add", "subtract", "multiply", "divide", "power", "square", "square_root",
              "calculate", "integrate", "differentiate", "solve_equation", "limit"}
# An exact value the engine may print and the parser reads back: numbers, fractions, roots, pi.
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
        last = math[-1]
        updates["result"] = exact_result(last.name or "", last.text)
        updates["formula"] = symbolic_result(last.text) if updates["result"] is None else None
    return replace(state, **updates)


def symbolic_result(text: str) -> str | None:
    """The formula after the last "=" of a derivative or antiderivative ("+ C" dropped)."""
    if "=" not in text or "\u2248" in text:
        return None
    formula = re.sub(r"\s*\+\s*C$", "", text.rsplit("=", 1)[-1].strip())
    return formula if re.search(r"[a-z]", formula) and len(formula) <= 200 else None


def exact_result(tool: str, text: str) -> str | None:
    """The single exact value a math tool printed, or None (several values, a formula...)."""
    if tool == "solve_equation":
        answers = text.rsplit(": ", 1)[-1]
        if " or " in answers or ";" in answers or "=" not in answers:
            return None
    if "=" not in text or "digit integer" in text:
        return None
    value = text.rsplit("=", 1)[-1].split("\u2248", 1)[0].strip()
    if not value:
        value = text.rsplit("\u2248", 1)[-1].strip()
    return value if EXACT_RE.fullmatch(value) and re.search(r"\d|pi|E", value) else None


def plain_number(value: str) -> int | float | None:
    """A value usable as a number argument without losing exactness, else None."""
    value = value.strip()
    if not re.fullmatch(r"-?\d+(?:\.\d+)?", value) or len(value.strip("-.0")) > 15:
        # Beyond 15 digits a float argument would no longer be the exact number.
        return None
    number = float(value)
    return int(number) if number.is_integer() and "." not in value else number
