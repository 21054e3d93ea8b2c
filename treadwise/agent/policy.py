"""Tool-call rules the graph enforces whatever a model asks for."""

from __future__ import annotations

from collections.abc import Sequence

from langchain_core.messages import AIMessage, AnyMessage, HumanMessage, ToolCall, ToolMessage

from treadwise.conversation import current_turn

LEAD_TOOL = "record_customer_interest"
ONCE = "Refused: a contact was already recorded in this turn; record it once."


def _lead_email(call: ToolCall) -> str:
    return str((call.get("args") or {}).get("email", "")).strip().lower()


def refusal(call: ToolCall, messages: Sequence[AnyMessage]) -> str | None:
    """Why this tool call must not run, or None when it may.

    A contact is only recorded when the user typed that address themselves, and at most once
    per user turn: instructions hidden in tool results or repeated requests cannot add leads.
    The decision depends only on the conversation, so parallel calls agree on it.
    """
    if call["name"] != LEAD_TOOL:
        return None
    said = " ".join(m.text for m in messages if isinstance(m, HumanMessage)).lower()
    email = _lead_email(call)
    if not email or email not in said:
        return (f"Refused: the address {email or '(none)'} was not typed by the user in this "
                "conversation. Only record contact details the user gave you.")
    turn = current_turn(messages)
    if any(isinstance(m, ToolMessage) and m.name == LEAD_TOOL and m.status != "error"
           for m in turn):
        return ONCE
    asking = next((m for m in reversed(turn) if isinstance(m, AIMessage)
                   and any(c["id"] == call["id"] for c in m.tool_calls)), None)
    allowed = [c for c in (asking.tool_calls if asking else [call])
               if c["name"] == LEAD_TOOL and (e := _lead_email(c)) and e in said]
    if allowed and allowed[0]["id"] != call["id"]:
        return ONCE
    return None
