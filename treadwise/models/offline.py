"""The offline model: a deterministic rule-based chat model (not an LLM) that calls real tools."""

from __future__ import annotations

import hashlib
import json
import random
import re
import uuid
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import Any, ClassVar

from langchain_core.callbacks import CallbackManagerForLLMRun
from langchain_core.language_models import BaseChatModel
from langchain_core.messages import AIMessage, AIMessageChunk, BaseMessage, ToolMessage
from langchain_core.outputs import ChatGeneration, ChatGenerationChunk, ChatResult
from langchain_core.utils.function_calling import convert_to_openai_tool

from treadwise.conversation import callable_by_name, current_turn
from treadwise.models.spec import ModelSettings, ModelSpec
from treadwise.personas import DEFAULT_PERSONA, Persona, get_persona
from treadwise.rules import dialogue
from treadwise.rules.mathwords import needs_previous, with_previous
from treadwise.rules.next_step import read_turn
from treadwise.rules.plan import Call, Plan
from treadwise.rules.voice import Voice


def estimate_tokens(text: str) -> int:
    """About four characters per token, the usual rule of thumb for English."""
    return max(1, (len(text) + 3) // 4)


def speaking_as(chosen: Persona | str | None) -> Persona:
    """The persona a call names (the graph binds its turn's persona), else the default."""
    if isinstance(chosen, Persona):
        return chosen
    try:
        return get_persona(chosen or DEFAULT_PERSONA)
    except ValueError:
        return get_persona(DEFAULT_PERSONA)


@dataclass(frozen=True)
class _Speaker:
    """The model as the strategy stages see it, speaking as one persona."""

    model: OfflineModel
    persona: Persona

    def respond_turn(self, messages: list[BaseMessage], tools: list[dict],
                     tool_choice: str | None) -> AIMessage:
        return self.model.respond_turn(messages, tools, tool_choice, self.persona)

    def message(self, messages: list[BaseMessage], text: str, calls: list[Call]) -> AIMessage:
        return self.model.message(messages, text, calls)

    def voice(self, human: str, position: int) -> Voice:
        return self.model.voice(human, position, self.persona)


class OfflineModel(BaseChatModel):
    """Understands the user's words with fixed rules, keeps a dialogue state in the thread,
    calls real tools and words the answer in the persona's voice.

    It is labelled rule-based everywhere it appears: no language model is involved.
    """

    temperature: float = 0.0
    seed: int | None = None
    model_name: str = "offline"
    # Strategy stages (plan, validate, write, ...) reach it as a `stage` keyword, and the
    # turn's persona as a `persona` keyword: nothing is read from the run behind its back.
    accepts_stage: ClassVar[bool] = True
    accepts_persona: ClassVar[bool] = True

    @property
    def _llm_type(self) -> str:
        return "treadwise-offline-rule-based"

    @property
    def _identifying_params(self) -> dict[str, Any]:
        return {"model_name": self.model_name, "temperature": self.temperature, "seed": self.seed}

    def bind_tools(self, tools: Sequence[Any], *, tool_choice: str | None = None,
                   **kwargs: Any) -> Any:
        formatted = [convert_to_openai_tool(t) for t in tools]
        return self.bind(tools=formatted, tool_choice=tool_choice, **kwargs)

    def _generate(self, messages: list[BaseMessage], stop: list[str] | None = None,
                  run_manager: CallbackManagerForLLMRun | None = None,
                  **kwargs: Any) -> ChatResult:
        return ChatResult(generations=[ChatGeneration(message=self._reply(messages, kwargs))])

    def _stream(self, messages: list[BaseMessage], stop: list[str] | None = None,
                run_manager: CallbackManagerForLLMRun | None = None,
                **kwargs: Any) -> Iterator[ChatGenerationChunk]:
        message = self._reply(messages, kwargs)
        if message.tool_calls:
            yield ChatGenerationChunk(message=AIMessageChunk(
                content=message.content, id=message.id, usage_metadata=message.usage_metadata,
                tool_call_chunks=[
                    {"name": c["name"], "args": json.dumps(c["args"]), "id": c["id"], "index": i}
                    for i, c in enumerate(message.tool_calls)]))
            return
        words = re.findall(r"\S+\s*|\s+", str(message.content)) or [""]
        for i, word in enumerate(words):
            last = i == len(words) - 1
            # Usage and the dialogue state ride on the last chunk only, so merging keeps them.
            chunk = AIMessageChunk(content=word, id=message.id,
                                   usage_metadata=message.usage_metadata if last else None,
                                   additional_kwargs=message.additional_kwargs if last else {})
            if run_manager:
                run_manager.on_llm_new_token(word, chunk=ChatGenerationChunk(message=chunk))
            yield ChatGenerationChunk(message=chunk)

    def _reply(self, messages: list[BaseMessage], kwargs: dict[str, Any]) -> AIMessage:
        tools, choice = kwargs.get("tools") or [], kwargs.get("tool_choice")
        persona = speaking_as(kwargs.get("persona"))
        if stage := kwargs.get("stage"):
            # The one hook for reasoning strategies: their stage prompts are answered there.
            from treadwise.rules.stages import respond

            return respond(_Speaker(self, persona), stage, messages, tools, choice)
        return self.respond_turn(messages, tools, choice, persona)

    def respond_turn(self, messages: list[BaseMessage], tools: list[dict], tool_choice: str | None,
                 persona: Persona | None = None) -> AIMessage:
        """One ordinary turn step: the next tool calls of the plan, or the worded answer."""
        human, state, plan = read_turn(messages)
        turn = current_turn(messages)
        results = [m for m in turn if isinstance(m, ToolMessage)]
        done = sum(1 for m in turn if isinstance(m, AIMessage) and m.tool_calls)
        # Routing binds a few groups and names the rest in the system message; like any
        # model reading that line, the rules may call one of those by name.
        tool_names = {t["function"]["name"] for t in tools} | callable_by_name(messages)
        stopped = tool_choice == "none"
        if not stopped and done < len(plan.steps) and \
                not any(m.status == "error" for m in results):
            calls = _resolve(plan.steps[done], results)
            if calls is not None and all(c.tool in tool_names for c in calls):
                return self.message(messages, "", calls)
            # A step that cannot run (a result that cannot be reused exactly, a missing tool)
            # ends the turn with what was found so far.
            stopped = bool(results)
        voice = self.voice(human, len(turn), persona)
        text = voice.answer(plan, results, tool_names, capped=stopped)
        return self.message(messages, text, [], dialogue.after(state, plan, results))

    def voice(self, human: str, position: int, persona: Persona | None = None) -> Voice:
        """The persona's voice for this reply, seeded by the message and the step."""
        return Voice(persona or speaking_as(None), self._rng(human, position), self.temperature)

    def _rng(self, human: str, position: int) -> random.Random:
        if self.seed is None:
            return random.Random()
        digest = hashlib.sha256(f"{self.seed}|{position}|{human}".encode()).hexdigest()
        return random.Random(int(digest[:16], 16))

    def message(self, messages: list[BaseMessage], text: str, calls: list[Call],
                state: dialogue.DialogueState | None = None) -> AIMessage:
        prompt = sum(estimate_tokens(m.text) for m in messages)
        tool_calls = [{"name": c.tool, "args": c.args, "id": f"call_{uuid.uuid4().hex[:12]}",
                       "type": "tool_call"} for c in calls]
        output = estimate_tokens(text + json.dumps([c.args for c in calls]))
        return AIMessage(
            content=text, tool_calls=tool_calls, id=f"offline-{uuid.uuid4().hex[:12]}",
            additional_kwargs={dialogue.STATE_KEY: state.to_dict()} if state else {},
            usage_metadata={"input_tokens": prompt, "output_tokens": output,
                            "total_tokens": prompt + output},
            response_metadata={"model_name": "offline", "model_provider": "offline",
                               "finish_reason": "tool_calls" if calls else "stop"},
        )


def _resolve(step: list[Call], results: list[ToolMessage]) -> list[Call] | None:
    """This step's calls, with the previous step's exact result where a call needs it."""
    value = dialogue.result_of(results[-1]) if results else None
    resolved = []
    for call in step:
        if needs_previous(call):
            if value is None:
                return None
            call = with_previous(call, value)
        resolved.append(call)
    return resolved


__all__ = ["OfflineModel", "Plan", "estimate_tokens"]


def build(spec: ModelSpec, settings: ModelSettings) -> OfflineModel:
    """The registry's entry for the spec `offline` (no token limit: its replies are short)."""
    return OfflineModel(temperature=settings.temperature, seed=settings.seed)
