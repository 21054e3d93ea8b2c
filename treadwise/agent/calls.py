"""How a turn's model calls went: HTTP attempts, retry waits, time to first token, usage."""

from __future__ import annotations

import time
from collections.abc import Iterator, Sequence
from contextvars import Context
from dataclasses import dataclass
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


def within(context: Context, items: Iterator[Any]) -> Iterator[Any]:
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
