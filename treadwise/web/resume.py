"""Reopening a conversation on any replica: the page's turns rebuilt from the agent's memory."""

from __future__ import annotations

import re
from collections.abc import Sequence

from langchain_core.messages import AIMessage, AnyMessage, HumanMessage, ToolMessage

from treadwise.errors import redact
from treadwise.web.session import Turn

# What new_session() makes: 128 random bits. Only such ids can be reopened from the page, so a
# guessable thread name given to the command line (--thread T1) is never reachable from a browser.
THREAD_ID_RE = re.compile(r"[0-9a-f]{32}")
RESTORED_LABEL = "restored from memory"


def valid_thread_id(value: str | None) -> str | None:
    value = (value or "").strip().lower()
    return value if THREAD_ID_RE.fullmatch(value) else None


def restored_turns(messages: Sequence[AnyMessage]) -> list[Turn]:
    """One finished Turn per user message in memory: its tool steps and the last answer."""
    turns: list[Turn] = []
    for message in messages:
        if isinstance(message, HumanMessage):
            turns.append(Turn(user=message.text, persona="", persona_name="Earlier reply",
                              spec="", model=RESTORED_LABEL, temperature=0.0, status="done"))
        elif turns and isinstance(message, AIMessage):
            _add_calls(turns[-1], message)
        elif turns and isinstance(message, ToolMessage):
            _add_result(turns[-1], message)
    return turns


def _add_calls(turn: Turn, message: AIMessage) -> None:
    from treadwise.agent import ToolStep

    for call in message.tool_calls:
        turn.steps.append(ToolStep(id=call.get("id") or "", name=call.get("name") or "?",
                                   args=dict(call.get("args") or {})))
    if text := message.text.strip():
        turn.answer = redact(text)


def _add_result(turn: Turn, message: ToolMessage) -> None:
    from treadwise.agent.agent import record_tool_result

    record_tool_result(turn.steps, message)
