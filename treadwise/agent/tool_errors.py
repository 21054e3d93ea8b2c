"""A tool's failure told to the customer in the persona's voice, never in the tool's own words.

A tool's error text is written for the model ("Error: 'sin' is not an allowed variable; use
one of x, y"); a model that passes it on, behind a cheerful opener or not, is replaced by the
persona's `tool_failed` line naming what could not be done (the operation and its values).
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
# Marks of raw error text that no answer to a customer should carry.
RAW = re.compile(r"\bError:|\bTraceback\b|\bException\b|\bis not an allowed\b")
QUOTED_WORDS = 6  # this many words of an error in a row are a quote, not a paraphrase
_WORD = re.compile(r"[\w.^*/+-]+")


def _failed(turn: Sequence[AnyMessage]) -> list[ToolMessage]:
    """The turn's tool failures (not the guards' refusals, which carry their own ask)."""
    return [m for m in turn if isinstance(m, ToolMessage) and m.status == "error"
            and not is_refusal(m) and customer_ask(m.text) is None]


def _quotes(answer: str, error: str) -> bool:
    words = _WORD.findall(error.removeprefix("Error:").lower())
    said = " ".join(_WORD.findall(answer.lower()))
    run = QUOTED_WORDS
    return any(" ".join(words[i:i + run]) in said for i in range(len(words) - run + 1))


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
    text = response.text
    if not (RAW.search(text) or any(_quotes(text, m.text) for m in failed)):
        return None
    return say("tool_failed", persona, problem=problem(failed[-1], turn))
