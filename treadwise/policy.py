"""Tool-call rules the graph enforces whatever a model asks for."""

from __future__ import annotations

from collections.abc import Sequence

from langchain_core.messages import AnyMessage, HumanMessage, ToolCall, ToolMessage

LEAD_TOOL = "record_customer_interest"


def _text(message: AnyMessage) -> str:
    content = message.content
    if isinstance(content, str):
        return content
    return " ".join(p.get("text", "") if isinstance(p, dict) else str(p) for p in content)


def _current_turn(messages: Sequence[AnyMessage]) -> Sequence[AnyMessage]:
    start = max((i for i, m in enumerate(messages) if isinstance(m, HumanMessage)), default=-1)
    return messages[start + 1:]


def screen(calls: Sequence[ToolCall],
           messages: Sequence[AnyMessage]) -> tuple[list[ToolCall], list[ToolMessage]]:
    """Split tool calls into those allowed to run and refusals the model will read.

    A contact is only recorded when the user typed that address themselves, and at most once
    per user turn: instructions hidden in tool results or repeated requests cannot add leads.
    """
    said = " ".join(_text(m) for m in messages if isinstance(m, HumanMessage)).lower()
    recorded = sum(1 for m in _current_turn(messages)
                   if isinstance(m, ToolMessage) and m.name == LEAD_TOOL and m.status != "error")
    allowed: list[ToolCall] = []
    refusals: list[ToolMessage] = []
    for call in calls:
        reason = None
        if call["name"] == LEAD_TOOL:
            email = str((call.get("args") or {}).get("email", "")).strip().lower()
            if not email or email not in said:
                reason = (f"Refused: the address {email or '(none)'} was not typed by the user in "
                          "this conversation. Only record contact details the user gave you.")
            elif recorded >= 1:
                reason = "Refused: a contact was already recorded in this turn; record it once."
            else:
                recorded += 1
        if reason:
            refusals.append(ToolMessage(content=reason, tool_call_id=call["id"] or "",
                                        name=call["name"], status="error"))
        else:
            allowed.append(call)
    return allowed, refusals
