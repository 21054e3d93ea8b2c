"""What every strategy graph is built from: the guarded tool node, model calls, nudges."""

from __future__ import annotations

import time
import uuid
from collections.abc import Callable, Sequence
from typing import Any

from langchain_core.language_models import BaseChatModel
from langchain_core.messages import (
    AIMessage,
    AnyMessage,
    HumanMessage,
    SystemMessage,
    ToolMessage,
)
from langchain_core.messages.ai import UsageMetadata
from langchain_core.tools import BaseTool, ToolException
from langgraph.checkpoint.base import BaseCheckpointSaver
from langgraph.prebuilt import ToolNode
from langgraph.prebuilt.tool_node import ToolCallRequest, ToolInvocationError

from treadwise.agent import answer_check, argument_check, policy, routing, tool_errors
from treadwise.agent.calls import count_reply, recorded
from treadwise.agent.routing import EMPTY_REPLY_NUDGE, Route
from treadwise.agent.state import TurnContext
from treadwise.conversation import STAGE_KEY, current_turn
from treadwise.errors import redact
from treadwise.personas import Persona
from treadwise.settings import MAX_ITERATIONS, Settings
from treadwise.tools.artifacts import ToolArtifact, words_of

HISTORY_TURNS = 20
# Stages whose words are the customer's answer: after a grounding refusal they give the
# refusal's honest reply instead of words that cannot rest on a grounded result.
ANSWER_STAGES = frozenset({"write", "act"})


def format_tool_error(error: Exception) -> str:
    """Every tool failure becomes text the model can act on, never a crash of the turn."""
    if isinstance(error, ToolInvocationError):
        return f"Error: {error.message}"
    if isinstance(error, ToolException):
        return f"Error: {redact(str(error))}"
    return f"Error: {type(error).__name__}: {redact(str(error))[:300]}"


def _turn_context(request: ToolCallRequest) -> TurnContext | None:
    context = getattr(getattr(request, "runtime", None), "context", None)
    return context if isinstance(context, TurnContext) else None


def _guarded(request: ToolCallRequest, execute: Callable[[ToolCallRequest], Any]) -> Any:
    """Runs one tool call unless a policy refuses it (consent, then grounding: values the
    conversation does not hold), keeps its result only if it answers what was asked, and
    records how long it took."""
    call = request.tool_call
    messages = (request.state or {}).get("messages", [])
    refusal = policy.refusal(call, messages)
    if refusal:
        return ToolMessage(refusal, tool_call_id=call["id"] or "", name=call["name"],
                           status="error")
    context = _turn_context(request)
    grounded = context is None or context.grounding
    persona = context.persona if context is not None else None
    if grounded and (invented := argument_check.unfounded_refusal(call, messages, persona)):
        return argument_check.refusal_result(call, invented, "unfounded")
    started = time.perf_counter()
    result = execute(request)
    if grounded and isinstance(result, ToolMessage) and result.status != "error" and \
            (wrong := answer_check.mismatch(result, messages, persona)):
        return argument_check.refusal_result(call, wrong, "mismatch")
    if isinstance(result, ToolMessage):
        if isinstance(result.content, str):
            result.content = redact(result.content)  # tool results go to memory as they are
        if isinstance(result.artifact, ToolArtifact):  # and so does what they found
            result.artifact = result.artifact.model_validate(
                redact_args(result.artifact.model_dump()))
        result.response_metadata = {**result.response_metadata,
                                    "duration_s": round(time.perf_counter() - started, 4)}
    return result


def redact_args(value: Any) -> Any:
    """Tool-call arguments with every secret redacted, however deeply nested."""
    if isinstance(value, str):
        return redact(value)
    if isinstance(value, dict):
        return {key: redact_args(item) for key, item in value.items()}
    if isinstance(value, list):
        return [redact_args(item) for item in value]
    return value


def tool_node(tools: Sequence[BaseTool]) -> ToolNode:
    """The tools node: errors become error results, the lead policy runs before every call."""
    return ToolNode(list(tools), handle_tool_errors=format_tool_error, wrap_tool_call=_guarded)


def window(messages: Sequence[AnyMessage], turns: int = HISTORY_TURNS) -> list[AnyMessage]:
    """The last few user turns; cutting at a user message never orphans a tool result."""
    starts = [i for i, m in enumerate(messages) if isinstance(m, HumanMessage)]
    cut = starts[-turns] if len(starts) > turns else 0
    return list(messages[cut:])


def has_text(message: AIMessage) -> bool:
    return bool(message.text.strip())


def is_empty(message: AIMessage) -> bool:
    """No text and no tool call, readable or not (e.g. Gemini's MALFORMED_FUNCTION_CALL)."""
    return not (message.tool_calls or message.invalid_tool_calls or has_text(message))


def nudges(count: int) -> list[HumanMessage]:
    """One nudge per empty reply in a row: the next call is asked to answer in plain text."""
    return [HumanMessage(EMPTY_REPLY_NUDGE) for _ in range(count)]


def stage_message(text: str, stage: str) -> HumanMessage:
    """The material a stage works on, as the prompt's last message."""
    return HumanMessage(text, additional_kwargs={STAGE_KEY: stage})


def fallback_answer(messages: Sequence[AnyMessage]) -> str:
    """An honest answer when the model produced none: what the tools found, or an apology."""
    results = [words_of(m).strip() for m in current_turn(messages)
               if isinstance(m, ToolMessage) and m.status != "error" and words_of(m).strip()]
    if results:
        return ("I couldn't write a complete answer in the steps I'm allowed, but here is what "
                "I found: " + " ".join(results[-3:]))
    return ("I'm sorry, I couldn't produce an answer to that. Could you rephrase the question "
            "or try again?")


def answer_message(text: str, *, calls: int, capped: bool,
                   usage: UsageMetadata | None = None) -> AIMessage:
    """A final answer the graph wrote itself (no model produced one)."""
    message = AIMessage(content=text, id=f"fallback-{uuid.uuid4().hex[:12]}",
                        usage_metadata=usage)
    return mark(message, calls=calls, capped=capped)


def mark(message: AIMessage, *, calls: int, capped: bool) -> AIMessage:
    """Note on an answer how many model calls the turn took and whether the budget stopped it."""
    message.response_metadata = {**message.response_metadata, "llm_calls": calls,
                                 "stopped_by_cap": capped}
    return message


def accepts_stage(model: BaseChatModel) -> bool:
    """Only models that say so get the `stage` keyword; a hosted API would reject it."""
    return bool(getattr(model, "accepts_stage", False))


def accepts_persona(model: BaseChatModel) -> bool:
    """Models that word answers in a persona's voice themselves get it as a keyword."""
    return bool(getattr(model, "accepts_persona", False))


class _Binder:
    """Caches each model's tool bindings by the tools bound: with tools, and with tools
    disabled for the last call."""

    def __init__(self) -> None:
        self._cache: dict[tuple[int, tuple[str, ...]], tuple[BaseChatModel, Any, Any]] = {}

    def bound(self, model: BaseChatModel, final: bool, tools: Sequence[BaseTool]) -> Any:
        key = (id(model), tuple(tool.name for tool in tools))
        entry = self._cache.get(key)
        if entry is None or entry[0] is not model:
            if len(self._cache) > 256:
                self._cache.clear()
            entry = (model, *self._bind(model, tools))
            self._cache[key] = entry
        return entry[2] if final else entry[1]

    @staticmethod
    def _bind(model: BaseChatModel, tools: Sequence[BaseTool]) -> tuple[Any, Any]:
        if not tools:
            return model, model
        with_tools = model.bind_tools(tools)
        try:
            without = model.bind_tools(tools, tool_choice="none")
        except (NotImplementedError, ValueError, TypeError):
            without = model
        return with_tools, without


def clean(response: AIMessage, final: bool) -> AIMessage:
    """Drop tool calls from a call made without tools; give malformed calls ids so errors can
    answer them. Model text is untrusted: secrets it repeats, in its text or in tool arguments,
    are redacted before memory, a tool or anyone sees them."""
    if isinstance(response.content, str) and (safe := redact(response.content)) != \
            response.content:
        response = response.model_copy(update={"content": safe})
    for call in response.tool_calls:
        call["args"] = redact_args(call["args"])
    if final and (response.tool_calls or response.invalid_tool_calls):
        return AIMessage(content=response.content, id=response.id,
                         usage_metadata=response.usage_metadata,
                         response_metadata=response.response_metadata)
    for invalid in response.invalid_tool_calls:
        if not invalid.get("id"):
            invalid["id"] = f"call_{uuid.uuid4().hex[:12]}"
    return response


def unreadable(response: AIMessage) -> list[ToolMessage]:
    """Error results for malformed tool calls, so the model reads what went wrong."""
    return [ToolMessage(
        content=(f"Error: the call to {bad.get('name') or 'a tool'} could not be read: "
                 f"{bad.get('error') or 'its arguments are not valid JSON'}. Call the tool "
                 "again with a JSON object of arguments, or answer without it."),
        tool_call_id=bad["id"], name=bad.get("name") or "unknown", status="error")
        for bad in response.invalid_tool_calls]


def last_ai(messages: Sequence[AnyMessage]) -> AIMessage | None:
    return next((m for m in reversed(messages) if isinstance(m, AIMessage)), None)


def _honest(response: AIMessage, prompt: Sequence[AnyMessage], context: TurnContext
            ) -> str | None:
    """What to say instead of a reply that cannot stand: words after a grounding refusal, a
    tool's raw error, a result no tool computed (None: the reply stands)."""
    if response.tool_calls or response.invalid_tool_calls:
        return None
    return argument_check.instead_of(response, prompt) or \
        tool_errors.in_voice(response, prompt, context.persona) or \
        answer_check.unbacked(response.text, prompt, context.persona) or \
        answer_check.unfinished(response.text, prompt, context.persona)


class Kit:
    """What a strategy's graph is built from: its tools and their node, the persona prompt, its
    budget of model calls, memory and settings, and the model calls its nodes make. The persona
    and model arrive per turn (TurnContext)."""

    def __init__(self, tools: Sequence[BaseTool], budget: int = MAX_ITERATIONS,
                 checkpointer: BaseCheckpointSaver | None = None,
                 system_prompt: Callable[[Persona], str] | None = None,
                 settings: Settings | None = None):
        from treadwise.agent.prompts import build_system_prompt

        self.tools = list(tools)
        self.budget = budget
        self.checkpointer = checkpointer
        self.settings = settings
        self.prompt_for = system_prompt or build_system_prompt
        self.binder = _Binder()
        self._chosen: dict[frozenset[str], list[BaseTool]] = {}

    def tool_node(self) -> ToolNode:
        """Every tool, bound or not: a call to one outside the routed groups still runs."""
        return tool_node(self.tools)

    def system(self, persona: Persona, instructions: str = "") -> SystemMessage:
        base = self.prompt_for(persona)
        return SystemMessage(f"{base}\n\n{instructions}" if instructions else base)

    def routed(self, route: Route, prompt: Sequence[AnyMessage]
               ) -> tuple[frozenset[str] | None, list[BaseTool]]:
        """The groups and tools this call binds: the turn's route, widened by every group
        whose tool the model has called since the customer's message."""
        if route.groups is None:
            return None, self.tools
        groups = route.groups | routing.group_of(routing.called_tools(prompt))
        if groups not in self._chosen:
            self._chosen[groups] = routing.select(self.tools, groups)
        return groups, self._chosen[groups]

    def _tailed(self, prompt: list[AnyMessage], route: Route, tools: Sequence[BaseTool],
                final: bool) -> list[AnyMessage]:
        """The system message with what varies by call at its end: the business profile when
        routing is off; when it is on, the tools left out (unless no tool may be called)."""
        from treadwise.agent.prompts import full_business_profile

        extra = [full_business_profile()] if route.full_prompt else []
        if route.groups is not None and not final \
                and (note := routing.unbound_note(self.tools, tools)):
            extra.append(note)
        if not extra or not prompt or not isinstance(prompt[0], SystemMessage):
            return prompt
        return [SystemMessage("\n\n".join([prompt[0].text, *extra])), *prompt[1:]]

    def call(self, context: TurnContext, prompt: list[AnyMessage], *, final: bool,
             stage: str | None = None) -> AIMessage:
        """One model call: with the routed tools unless `final`, tagged with its stage for
        models that accept one, noted in the turn's per-call records. The run's config
        (callbacks for token streaming) reaches it by context."""
        groups, tools = self.routed(context.route, prompt)
        prompt = self._tailed(prompt, context.route, tools, final)
        model = self.binder.bound(context.model, final, tools)
        if stage and accepts_stage(context.model):
            model = model.bind(stage=stage)
        if accepts_persona(context.model):
            model = model.bind(persona=context.persona)
        honest = context.grounding and (stage is None or stage in ANSWER_STAGES)
        if honest and (settled := argument_check.honest_end(prompt)) is not None:
            return answer_message(settled, calls=0, capped=False)
        with recorded(stage or "reason", groups, len(tools)) as record:
            response = model.invoke(prompt)
            count_reply(record, prompt, response)
        if honest and (instead := _honest(response, prompt, context)) is not None:
            response = response.model_copy(update={"content": instead})
        return clean(response, final)
