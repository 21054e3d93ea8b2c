"""A tool's failure told to the customer in the persona's voice, never in the tool's own words.

A tool's error text is written for the model ("Error: 'sin' is not an allowed variable; use
one of x, y"); a model that passes such text on, behind a cheerful opener or not, is replaced
by the persona's `tool_failed` line naming what could not be done (the operation and values).
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any

from langchain_core.messages import AIMessage, AnyMessage, ToolMessage

from treadwise.agent.argument_check import is_refusal, say
from treadwise.conversation import current_turn
from treadwise.privacy.consent import customer_ask

# What each tool was doing, for "Sorry, I couldn't work that one out: {problem}".
DOING = {"add": "adding", "subtract": "subtracting", "multiply": "multiplying",
         "divide": "dividing", "power": "raising to a power", "square": "squaring",
         "square_root": "taking the square root of", "calculate": "calculating",
         "integrate": "integrating", "differentiate": "differentiating",
         "solve_equation": "solving", "analyze_function": "analysing",
         "limit": "taking the limit of", "plot_area": "plotting",
         "run_program": "running the calculation", "get_business_info": "looking up",
         "get_tire_recommendation": "looking up tires for",
         "check_service_availability": "checking service in",
         "record_customer_interest": "saving your request for",
         "record_feedback": "passing on"}
# Marks of error text written for the model (its prefix, exception names, validation and
# instructions about tools or arguments), which no answer to a customer should carry. A plain
# reason in the persona's own words ("I couldn't save that: the disk is full") may stand.
RAW = re.compile(r"\bError:|\bTraceback\b|\b[A-Z]\w*(?:Exception|Error)\b|(?i:\bkwargs\b"
                 r"|field required|\bis not an allowed\b|\buse one of\b|\binvoking tool\b"
                 r"|\bvalidation error)")


def _failed(turn: Sequence[AnyMessage]) -> list[ToolMessage]:
    """The turn's tool failures (not the guards' refusals, which carry their own ask)."""
    return [m for m in turn if isinstance(m, ToolMessage) and m.status == "error"
            and not is_refusal(m) and customer_ask(m.text) is None]


def _call_of(result: ToolMessage, turn: Sequence[AnyMessage]) -> dict[str, Any]:
    for message in turn:
        if isinstance(message, AIMessage):
            for call in message.tool_calls:
                if call.get("id") == result.tool_call_id:
                    return dict(call)
    return {"name": result.name or "", "args": {}}


def problem(result: ToolMessage, turn: Sequence[AnyMessage]) -> str:
    """What could not be done, in plain words: "dividing 5 and 0 did not work"."""
    call = _call_of(result, turn)
    doing = DOING.get(call.get("name") or "")
    if doing is None:  # a tool that does not exist here: its made-up values mean nothing
        return "the step I tried is not one I can take"
    values = [str(v) for v in (call.get("args") or {}).values() if v not in (None, "")]
    shown = " and ".join(values[:3])
    return f"{doing} {shown} did not work" if shown else f"{doing} did not work"


def in_voice(response: AIMessage, prompt: Sequence[AnyMessage], persona: Any) -> str | None:
    """The persona's words to give instead of an answer that passes a tool's error text on;
    None when the answer may stand."""
    if response.tool_calls or response.invalid_tool_calls or not response.text.strip():
        return None
    turn = current_turn(prompt)
    failed = _failed(turn)
    if not failed:
        return None
    if not RAW.search(response.text):
        return None
    return say("tool_failed", persona, problem=problem(failed[-1], turn))
