"""The grounding guard: a tool call runs only with values the conversation holds, a result is
kept only when it answers what was asked, and after one retry the turn ends honestly.

Before a tool runs, every declared argument (treadwise.evidence.arguments) must appear in the
conversation or follow from it by a declared rule; a call that invents one is refused with the
values the conversation does hold, so the model's retry can use them (a hosted model's
"constrained retry"; a local model's grammar holds them already). After it runs, the result
must answer the question (agent/answer_check.py). Each refusal is an error result marked with
GROUNDING_KEY whose customer part is in the persona's voice. The model gets one more call
after a refusal: a call it makes is checked again; words it writes instead, or a second
refusal, end the turn with the refusal's honest reply, never a guess.
"""

from __future__ import annotations

import random
from collections.abc import Sequence
from typing import Any

from langchain_core.messages import AIMessage, AnyMessage, ToolCall, ToolMessage

from treadwise.conversation import current_turn
from treadwise.evidence.arguments import DESCRIBED, REFUSAL_KEY, Unfounded, choices, unfounded
from treadwise.evidence.conversation import Evidence
from treadwise.privacy.consent import Refusal, customer_ask

# Marks an error result the grounding guard wrote ("unfounded" or "mismatch").
GROUNDING_KEY = REFUSAL_KEY
# What the customer is asked for when a value of a kind is missing.
NEEDS = {"number": "the numbers to use", "exponent": "the power to use",
         "bound": "the bounds to use",
         "order": "which derivative you want", "expression": "the expression exactly",
         "variable": "the variable", "program": "the calculation exactly",
         "topic": "what you'd like to know", "vehicle": "what vehicle you drive",
         "usage": "how you mostly drive", "place": "which city you're asking about",
         "service": "which service you need", "email": "your e-mail address",
         "earlier_email": "the address you gave before", "name": "your name",
         "request": "what you'd like our team to contact you about, in your own words",
         "words": "your question"}
MAX_HINT = 12


def say(part: str, persona: Any, **values: str) -> str:
    """A reply part in the persona's voice (the default persona's without one)."""
    from treadwise.personas import DEFAULT_PERSONA, get_persona
    from treadwise.rules.voice import Voice

    return Voice(persona or get_persona(DEFAULT_PERSONA), random.Random(0), 0.0).pick(
        part, **values)


def _listed(parts: Sequence[str]) -> str:
    return parts[0] if len(parts) == 1 else ", ".join(parts[:-1]) + " and " + parts[-1]


def _hint(kind: str, evidence: Evidence) -> str:
    allowed = choices(kind, evidence)
    if allowed is None:
        return "use only the customer's own words and symbols"
    shown = [str(v) for v in allowed if v not in (None, "")][:MAX_HINT]
    if not shown:
        return f"the conversation holds no {DESCRIBED.get(kind, 'value').removeprefix('the ')}"\
               ": ask the customer for it"
    return "the conversation holds: " + ", ".join(shown)


def unfounded_refusal(call: ToolCall, messages: Sequence[AnyMessage],
                      persona: Any = None) -> Refusal | None:
    """Why this call may not run because it invents a value, or None when all are grounded."""
    missing = unfounded(call["name"], call.get("args") or {}, Evidence.of(messages))
    if not missing:
        return None
    evidence = Evidence.of(messages)
    return Refusal(_reason(call["name"], missing, evidence),
                   say("unfounded", persona, missing=_listed([m.describe() for m in missing]),
                       need=NEEDS.get(missing[0].kind, "what you mean")))


def _reason(tool: str, missing: list[Unfounded], evidence: Evidence) -> str:
    said = "; ".join(f"{m.argument}={m.value!r}: {_hint(m.kind, evidence)}" for m in missing)
    verb = "appears" if len(missing) == 1 else "appear"
    return (f"{tool} was not run: {_listed([m.describe() for m in missing])} {verb} nowhere "
            "in the customer's messages or earlier tool results, and no declared rule "
            "(percent as a fraction, number words, pi and e, roots as powers, unit "
            "conversions, the business profile's synonyms) derives it. Call again with "
            f"grounded values only ({said}), or ask the customer for what is missing.")


def refusal_result(call: ToolCall, refusal: Refusal, why: str) -> ToolMessage:
    """The error result of a call the grounding guard refused, marked as such."""
    return ToolMessage(str(refusal), tool_call_id=call["id"] or "", name=call["name"],
                       status="error", additional_kwargs={GROUNDING_KEY: why})


def is_refusal(message: AnyMessage) -> bool:
    return isinstance(message, ToolMessage) and bool(
        message.additional_kwargs.get(GROUNDING_KEY))


def _since_refusal(prompt: Sequence[AnyMessage]) -> tuple[ToolMessage | None, list[ToolMessage]]:
    """The turn's latest grounding refusal and the tool results after it."""
    results = [m for m in current_turn(prompt) if isinstance(m, ToolMessage)]
    refused = [i for i, m in enumerate(results) if is_refusal(m)]
    if not refused:
        return None, []
    return results[refused[-1]], results[refused[-1] + 1:]


def honest_end(prompt: Sequence[AnyMessage]) -> str | None:
    """The honest reply that ends the turn without another model call: the one retry after a
    refusal has been used (refused again, or failed) and nothing has run since. None while the
    model may still try."""
    refusal, after = _since_refusal(prompt)
    earlier = [m for m in current_turn(prompt) if isinstance(m, ToolMessage) and is_refusal(m)]
    if refusal is None or any(m.status != "error" for m in after) or \
            (len(earlier) < 2 and not after):
        return None
    return customer_ask(refusal.text)


def instead_of(response: AIMessage, prompt: Sequence[AnyMessage]) -> str | None:
    """The honest reply to give instead of a model's words written after a refusal with no
    result run since (they cannot rest on a grounded result); None when they may stand."""
    if response.tool_calls or response.invalid_tool_calls:
        return None
    refusal, after = _since_refusal(prompt)
    if refusal is None or any(m.status != "error" for m in after):
        return None
    return customer_ask(refusal.text)
