"""How a turn's model calls went: HTTP attempts, retries, first token, usage, and each call's."""

from __future__ import annotations

import time
from collections.abc import Generator, Iterator, Sequence
from contextlib import contextmanager
from contextvars import Context, ContextVar
from dataclasses import dataclass, field
from typing import Any

from langchain_core.callbacks import BaseCallbackHandler
from langchain_core.messages import AnyMessage

_END = object()


@dataclass
class CallStats:
    """What the experiment harness records per turn beside the answer."""

    http_attempts: int = 0
    retry_wait_s: float = 0.0
    ttft_s: float | None = None
    # The provider sent no token counts: the turn's usage is an estimate, not a zero.
    usage_missing: bool = False
    # One record per model call, in order (the JSON's `calls`).
    per_call: list[ModelCall] = field(default_factory=list)


@dataclass
class ModelCall:
    """One model call of a turn: what it was for, what it bound, what it cost."""

    stage: str
    # The routed tool groups it bound; None when every tool was bound (routing not on).
    toolsets: list[str] | None
    tools: int
    input_tokens: int = 0
    output_tokens: int = 0
    # The HTTP request body's size; None when no request was sent (offline, local models).
    request_bytes: int | None = None
    usage_estimated: bool = False


_CALLS: ContextVar[list[ModelCall] | None] = ContextVar("treadwise_model_calls", default=None)


def start_calls() -> list[ModelCall]:
    """A fresh list of the current context's model calls (the turn's)."""
    calls: list[ModelCall] = []
    _CALLS.set(calls)
    return calls


@contextmanager
def recorded(stage: str, toolsets: Any, tools: int) -> Iterator[ModelCall]:
    """Note one model call of the turn, failed or not, with the bytes its request sent; the
    caller counts the reply's tokens on the yielded record. Outside a turn it is dropped."""
    from treadwise.models.tally import current_tally

    record = ModelCall(stage, None if toolsets is None else sorted(toolsets), tools)
    tally = current_tally()
    sent = len(tally.sizes) if tally is not None else 0
    try:
        yield record
    finally:
        if tally is not None and len(tally.sizes) > sent:
            record.request_bytes = tally.sizes[-1]  # the attempt that answered
        if (calls := _CALLS.get()) is not None:
            calls.append(record)


def count_reply(record: ModelCall, prompt: Sequence[AnyMessage], reply: Any) -> None:
    """The reply's token counts on its record; estimated (and flagged) when none came."""
    from treadwise.models.offline import estimate_tokens

    usage = getattr(reply, "usage_metadata", None)
    if usage:
        record.input_tokens = int(usage.get("input_tokens", 0))
        record.output_tokens = int(usage.get("output_tokens", 0))
        return
    record.usage_estimated = True
    record.input_tokens = sum(estimate_tokens(m.text) for m in prompt)
    record.output_tokens = estimate_tokens(reply.text + str(getattr(reply, "tool_calls", "")))


class FirstToken(BaseCallbackHandler):
    """Seconds from the turn's first model request to the first output it received (the
    first streamed chunk, or the whole reply when the call did not stream)."""

    run_inline = True
    ignore_chain = True
    ignore_agent = True
    ignore_retriever = True
    ignore_retry = True

    def __init__(self) -> None:
        self.started: float | None = None
        self.first: float | None = None

    def on_chat_model_start(self, *args: Any, **kwargs: Any) -> None:
        if self.started is None:
            self.started = time.perf_counter()

    def _seen(self) -> None:
        if self.first is None and self.started is not None:
            self.first = time.perf_counter()

    def on_llm_new_token(self, *args: Any, **kwargs: Any) -> None:
        self._seen()

    def on_llm_end(self, *args: Any, **kwargs: Any) -> None:
        self._seen()

    @property
    def seconds(self) -> float | None:
        if self.started is None or self.first is None:
            return None
        return round(self.first - self.started, 4)


def within(context: Context, items: Iterator[Any]) -> Generator[Any, None, None]:
    """Iterate in one context whichever thread asks, so the turn's context variables (the
    request tally) hold for every step; web servers resume generators on pool threads."""
    try:
        while (item := context.run(next, items, _END)) is not _END:
            yield item
    finally:
        # A turn stopped early unwinds in its own context too (it resets what it set there).
        if (close := getattr(items, "close", None)) is not None:
            context.run(close)


def estimate_usage(messages: Sequence[AnyMessage], index: int,
                   persona: Any = None) -> dict[str, int]:
    """Token counts for the reply at `index` when the provider sent none: about four
    characters a token, the prompt being the persona's system prompt and every message
    before the reply."""
    from treadwise.agent.prompts import build_system_prompt
    from treadwise.models.offline import estimate_tokens

    system = estimate_tokens(build_system_prompt(persona)) if persona is not None else 0
    prompt = system + sum(estimate_tokens(m.text) for m in messages[:index])
    reply = messages[index]
    output = estimate_tokens(reply.text + str(getattr(reply, "tool_calls", "") or ""))
    return {"input_tokens": prompt, "output_tokens": output}
