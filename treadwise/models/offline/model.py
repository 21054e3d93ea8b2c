"""The offline model: a deterministic rule-based chat model (not an LLM) that calls real tools."""

from __future__ import annotations

import hashlib
import json
import random
import re
import uuid
from collections.abc import Iterator, Sequence
from typing import Any, ClassVar

from langchain_core.callbacks import CallbackManagerForLLMRun
from langchain_core.language_models import BaseChatModel
from langchain_core.messages import (
    AIMessage,
    AIMessageChunk,
    BaseMessage,
    HumanMessage,
    SystemMessage,
    ToolMessage,
)
from langchain_core.outputs import ChatGeneration, ChatGenerationChunk, ChatResult
from langchain_core.utils.function_calling import convert_to_openai_tool

from treadwise.conversation import current_turn, turn_start
from treadwise.models.offline.intents import PREVIOUS, Call, Lookups, Plan, plan_turn
from treadwise.personas import DEFAULT_PERSONA, Persona, get_persona, load_personas

MATH_INTENTS = {"arithmetic", "integral", "derivative", "equation", "analysis", "plot"}
VALUE_RE = re.compile(r"-?\d+(?:\.\d+)?(?:e[-+]?\d+)?", re.IGNORECASE)


def estimate_tokens(text: str) -> int:
    """About four characters per token, the usual rule of thumb for English."""
    return max(1, (len(text) + 3) // 4)


def result_value(text: str) -> str | None:
    """The number a tool result ends with: after the last "=", preferring the "≈" decimal."""
    tail = text.rsplit("=", 1)[-1]
    if "\u2248" in tail:
        tail = tail.rsplit("\u2248", 1)[-1]
    match = VALUE_RE.search(tail.replace(",", ""))
    return match.group(0) if match else None


def _lookups() -> Lookups:
    from treadwise import profile

    return Lookups(profile.find_vehicle, profile.find_usage, profile.find_city,
                   profile.find_service)


class OfflineModel(BaseChatModel):
    """Routes the user's words to tools with fixed rules, then words the answer per persona.

    It is labelled rule-based everywhere it appears: no language model is involved.
    """

    temperature: float = 0.0
    seed: int | None = None
    model_name: str = "offline"
    # Strategy stages (plan, validate, write, ...) reach it as a `stage` keyword.
    accepts_stage: ClassVar[bool] = True

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
        message = self._reply(messages, kwargs)
        return ChatResult(generations=[ChatGeneration(message=message)])

    def _stream(self, messages: list[BaseMessage], stop: list[str] | None = None,
                run_manager: CallbackManagerForLLMRun | None = None,
                **kwargs: Any) -> Iterator[ChatGenerationChunk]:
        message = self._reply(messages, kwargs)
        if message.tool_calls:
            chunk = AIMessageChunk(
                content=message.content, id=message.id, usage_metadata=message.usage_metadata,
                tool_call_chunks=[
                    {"name": c["name"], "args": json.dumps(c["args"]), "id": c["id"], "index": i}
                    for i, c in enumerate(message.tool_calls)
                ],
            )
            yield ChatGenerationChunk(message=chunk)
            return
        words = re.findall(r"\S+\s*|\s+", str(message.content))
        for i, word in enumerate(words):
            last = i == len(words) - 1
            chunk = AIMessageChunk(content=word, id=message.id,
                                   usage_metadata=message.usage_metadata if last else None)
            if run_manager:
                run_manager.on_llm_new_token(word, chunk=ChatGenerationChunk(message=chunk))
            yield ChatGenerationChunk(message=chunk)

    def _reply(self, messages: list[BaseMessage], kwargs: dict[str, Any]) -> AIMessage:
        tools, choice = kwargs.get("tools") or [], kwargs.get("tool_choice")
        if stage := kwargs.get("stage"):
            from treadwise.models.offline.stages import respond

            return respond(self, stage, messages, tools, choice)
        return self._respond(messages, tools, choice)

    def _respond(self, messages: list[BaseMessage], tools: list[dict],
                 tool_choice: str | None) -> AIMessage:
        persona = _persona_from(messages)
        start = turn_start(messages)
        human = messages[start].text if start >= 0 else ""
        earlier = [m.text for m in messages[:max(start, 0)] if isinstance(m, HumanMessage)]
        turn = current_turn(messages)
        plan = plan_turn(human, earlier, _lookups())
        done = sum(1 for m in turn if isinstance(m, AIMessage) and m.tool_calls)
        results = [m for m in turn if isinstance(m, ToolMessage)]
        tool_names = {t["function"]["name"] for t in tools}
        rng = self._rng(human, len(turn))
        call_allowed = tool_choice != "none"
        failed = any(m.status == "error" for m in results)
        if call_allowed and not failed and done < len(plan.steps):
            step = plan.steps[done]
            if all(c.tool in tool_names for c in step):
                calls = _resolve(step, results)
                if calls is not None:
                    return self._finish(messages, "", calls)
        words = Voice(persona, rng, self.temperature).answer(plan, results, tool_names,
                                                             capped=not call_allowed)
        return self._finish(messages, words, [])

    def _rng(self, human: str, position: int) -> random.Random:
        if self.seed is None:
            return random.Random()
        digest = hashlib.sha256(f"{self.seed}|{position}|{human}".encode()).hexdigest()
        return random.Random(int(digest[:16], 16))

    def _finish(self, messages: list[BaseMessage], text: str, calls: list[Call]) -> AIMessage:
        prompt = sum(estimate_tokens(m.text) for m in messages)
        tool_calls = [{"name": c.tool, "args": c.args, "id": f"call_{uuid.uuid4().hex[:12]}",
                       "type": "tool_call"} for c in calls]
        output = estimate_tokens(text + json.dumps([c.args for c in calls]))
        return AIMessage(
            content=text, tool_calls=tool_calls, id=f"offline-{uuid.uuid4().hex[:12]}",
            usage_metadata={"input_tokens": prompt, "output_tokens": output,
                            "total_tokens": prompt + output},
            response_metadata={"model_name": "offline", "model_provider": "offline",
                               "finish_reason": "tool_calls" if calls else "stop"},
        )


def _persona_from(messages: list[BaseMessage]) -> Persona:
    """The persona named in the system prompt, as an LLM would read it."""
    system = next((m.text for m in messages if isinstance(m, SystemMessage)), "")
    for persona in load_personas().values():
        if persona.name in system:
            return persona
    return get_persona(DEFAULT_PERSONA)


def _resolve(step: list[Call], results: list[ToolMessage]) -> list[Call] | None:
    """Fill the previous step's numeric result into this step's arguments."""
    previous = result_value(results[-1].text) if results else None
    resolved = []
    for call in step:
        args = dict(call.args)
        for key, value in args.items():
            if value == PREVIOUS:
                if previous is None:
                    return None
                number = float(previous)
                args[key] = int(number) if number.is_integer() and abs(number) < 1e15 else number
        resolved.append(Call(call.tool, args))
    return resolved


class Voice:
    """Words an answer in a persona's voice; temperature widens the choice of phrasing."""

    def __init__(self, persona: Persona, rng: random.Random, temperature: float):
        self.persona = persona
        self.rng = rng
        self.temperature = temperature
        self.fallback = get_persona(DEFAULT_PERSONA)

    def pick(self, part: str, **values: str) -> str:
        options = self.persona.phrases(part) or self.fallback.phrases(part)
        if not options:
            return ""
        choice = options[0]
        if self.temperature > 0 and len(options) > 1 and self.rng.random() < self.temperature:
            choice = self.rng.choice(options)
        return choice.format(**values) if values else choice

    def answer(self, plan: Plan, results: list[ToolMessage], tool_names: set[str],
               capped: bool) -> str:
        if plan.reply:
            return self.pick(plan.reply)
        errors = [m.text for m in results if m.status == "error"]
        if errors:
            return self.pick("error", error=_first_sentence(errors[-1]))
        if not results:
            missing = sorted({c.tool for s in plan.steps for c in s} - tool_names)
            if missing:
                return self.pick("error", error="the tool " + ", ".join(missing)
                                 + " is not available in this setup.")
            return self.pick("feedback")
        texts = [m.text for m in results]
        if capped and len(results) < sum(len(s) for s in plan.steps):
            return self.pick("cap", summary=" ".join(texts))
        return self._compose(plan, texts, results)

    def _compose(self, plan: Plan, texts: list[str], results: list[ToolMessage]) -> str:
        if plan.intent == "feedback":
            return f"{self.pick('feedback')} {self.pick('closer')}"
        parts = [self.pick("opener")]
        if plan.intent in MATH_INTENTS:
            parts.append(self._math_body(plan, texts, results))
            parts.append(self.pick("math_closer") if self.persona.phrases("math_closer")
                         else self.pick("closer"))
        else:
            parts.append(" ".join(_sentence(t) for t in texts))
            if plan.intent == "lead":
                parts.append(self.pick("lead_note"))
            parts.append(self.pick("closer"))
        parts = [p for p in parts if p]
        # Lists from the tools read as lists; the persona's closing line gets its own paragraph.
        return "\n\n".join(parts) if any("\n" in p for p in parts) else " ".join(parts)

    def _math_body(self, plan: Plan, texts: list[str], results: list[ToolMessage]) -> str:
        lines = [t for t, m in zip(texts, results, strict=True) if m.name != "plot_area"]
        plot_lines = [t for t, m in zip(texts, results, strict=True) if m.name == "plot_area"]
        shown = lines or plot_lines
        if self.persona.show_method:
            steps = ("; ".join(f"step {i}: {t}" for i, t in enumerate(shown, 1))
                     if len(shown) > 1 else shown[0])
            body = f"{_sentence(steps)} {self.pick('method_label')} {_sentence(plan.method)}"
        elif len(shown) > 1:
            body = " ".join(_sentence(f"{word} {t}") for word, t in
                            zip(["First,", *["Then"] * (len(shown) - 2), "Finally,"], shown,
                                strict=True))
            if final := result_value(shown[-1]):
                body += f" So the final answer is {final}."
        else:
            body = _sentence(shown[0])
        if plot_lines and lines:
            body = f"{body} {self.pick('plot_note')}"
        caveat = self.pick("math_caveat") if self.persona.phrases("math_caveat") else ""
        return f"{body} {caveat}".strip()


def _sentence(text: str) -> str:
    text = text.strip()
    return text if not text or text[-1] in ".!?:" else text + "."


def _first_sentence(text: str) -> str:
    text = text.strip().removeprefix("Error:").strip()
    return text if len(text) <= 300 else text[:297] + "..."
