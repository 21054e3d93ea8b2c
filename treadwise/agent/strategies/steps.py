"""Steps the strategies share: the call budget, stage records, a model step that may call tools,
and the written answer."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Literal

from langchain_core.messages import AIMessage, AnyMessage
from langgraph.graph import END
from langgraph.runtime import Runtime
from langgraph.types import Command

from treadwise.agent.graph import (
    Kit,
    answer_message,
    is_empty,
    mark,
    nudges,
    stage_message,
    unreadable,
    window,
)
from treadwise.agent.state import AgentState, TurnContext
from treadwise.conversation import turn_start

MAX_STAGE_TEXT = 4000
Outcome = Literal["tools", "again", "done"]


def calls_left(state: AgentState, budget: int) -> int:
    """Model calls this turn may still make."""
    return budget - state.get("iterations", 0)


def record(trace: dict[str, Any], name: str, text: str = "", **extra: Any) -> dict[str, Any]:
    """The trace with one more finished stage; each shows as a step in the chat and the JSON."""
    stage = {"name": name, "text": text.strip()[:MAX_STAGE_TEXT], **extra}
    return {**trace, "stages": [*trace.get("stages", []), stage]}


def stages_named(trace: dict[str, Any], name: str) -> list[dict[str, Any]]:
    return [stage for stage in trace.get("stages", []) if stage["name"] == name]


def spent(trace: dict[str, Any], message: AIMessage) -> dict[str, Any]:
    """The trace with the tokens of a reply that memory does not keep (a plan, a check)."""
    usage: dict[str, Any] = dict(message.usage_metadata or {})
    total = dict(trace.get("usage") or {"input_tokens": 0, "output_tokens": 0})
    total["input_tokens"] += int(usage.get("input_tokens", 0))
    total["output_tokens"] += int(usage.get("output_tokens", 0))
    return {**trace, "usage": total}


def question(messages: Sequence[AnyMessage]) -> list[AnyMessage]:
    """The conversation up to and including the current user message (no work of this turn)."""
    return window(messages[: turn_start(messages) + 1])


def tool_step(kit: Kit, state: AgentState, context: TurnContext, prompt: list[AnyMessage],
              *, final: bool, stage: str, tag: dict[str, Any] | None = None
              ) -> tuple[Outcome, dict[str, Any], AIMessage]:
    """One model call that may call tools: what to do next, the state update, and the reply.

    Tool calls go to memory (the tools node runs them); a malformed call is answered with an
    error result and the step runs again; an empty reply leaves a nudge for the next call.
    """
    calls = state.get("iterations", 0) + 1
    waiting = state.get("nudges", 0)
    response = kit.call(context, [*prompt, *nudges(waiting)], final=final, stage=stage)
    if response.tool_calls or response.invalid_tool_calls:
        if tag:
            response.response_metadata = {**response.response_metadata, **tag}
        update = {"messages": [response, *unreadable(response)], "iterations": calls,
                  "nudges": 0}
        return ("tools" if response.tool_calls else "again"), update, response
    if is_empty(response) and not final:
        return "again", {"iterations": calls, "nudges": waiting + 1}, response
    return "done", {"iterations": calls, "nudges": 0}, response


def write(kit: Kit, state: AgentState, runtime: Runtime[TurnContext], *, budget: int,
          instructions: str, material: str, fallback: str,
          history: list[AnyMessage] | None = None) -> Command:
    """The answer: one model call in the persona's voice from the notes of the earlier stages.

    With no call left, or only empty replies, the turn still ends with a real answer: the
    fallback text the strategy worked out (a draft, the tool results, the vote).
    """
    trace = state.get("trace") or {}
    capped = bool(trace.get("capped"))
    calls = state.get("iterations", 0)
    if calls_left(state, budget) <= 0:
        message = answer_message(fallback, calls=calls, capped=True)
        return Command(update={"messages": [message], "nudges": 0,
                               "trace": record(trace, "write", "No model call left: wrote the "
                                               "answer from the earlier stages.")}, goto=END)
    context = runtime.context
    prompt = [kit.system(context.persona, instructions),
              *(window(state["messages"]) if history is None else history),
              stage_message(material, "write"), *nudges(state.get("nudges", 0))]
    response = kit.call(context, prompt, final=True, stage="write")
    calls += 1
    if is_empty(response):
        if calls < budget:
            return Command(update={"iterations": calls, "nudges": state.get("nudges", 0) + 1},
                           goto="write")
        response = answer_message(fallback, calls=calls, capped=True,
                                  usage=response.usage_metadata)
        capped = True
    mark(response, calls=calls, capped=capped)
    return Command(update={"messages": [response], "iterations": calls, "nudges": 0,
                           "trace": record(trace, "write", "Wrote the reply.")}, goto=END)


def material(**sections: str) -> str:
    """Labelled sections of a stage's material, e.g. "Draft answer:" then the draft."""
    return "\n\n".join(f"{title.replace('_', ' ').capitalize()}:\n{text.strip() or '(none)'}"
                       for title, text in sections.items())
