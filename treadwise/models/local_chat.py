"""The local llama.cpp model as a LangChain chat model: tools, streaming, seeds, token counts."""

from __future__ import annotations

import json
from collections.abc import Iterable, Iterator, Sequence
from functools import lru_cache
from typing import Any

from langchain_core.language_models import BaseChatModel
from langchain_core.language_models.chat_models import generate_from_stream
from langchain_core.messages import AIMessageChunk, BaseMessage, HumanMessage, SystemMessage
from langchain_core.outputs import ChatGenerationChunk, ChatResult
from langchain_core.utils.function_calling import convert_to_openai_tool

from treadwise.models import chatml
from treadwise.models.llamacpp import (
    DEFAULT_N_CTX,
    MIN_REPLY_TOKENS,
    Generation,
    LlamaEngine,
    Sampling,
    engine,
)


class _Gate:
    """Lets prose through as it is generated and holds back whatever may be a tool call, so the
    user never watches raw call syntax stream by."""

    def __init__(self, names: Sequence[str]):
        self.calls = [chatml.OPEN, *(f"{n}(" for n in names)]
        self.text = ""
        self.sent = -1  # where unsent text starts; -1 until the reply is known to be prose
        self.holding = False

    def _opening(self, head: str) -> str:
        if head[:1] in ("{", "[", "`") or head.startswith(tuple(self.calls)):
            return "call"
        return "wait" if any(c.startswith(head) for c in self.calls) else "prose"

    def feed(self, piece: str) -> str:
        self.text += piece
        if self.holding:
            return ""
        if self.sent < 0:
            head = self.text.lstrip()
            opening = self._opening(head) if head else "wait"
            self.holding = opening == "call"
            if opening != "prose":
                return ""
            self.sent = len(self.text) - len(head)
        cut = self.text.find(chatml.OPEN, self.sent)
        if cut >= 0:
            self.holding = True
        else:
            # Keep back a tail that may be the start of a call tag.
            start = max(self.sent, len(self.text) - len(chatml.OPEN) + 1)
            cut = next((i for i in range(start, len(self.text))
                        if chatml.OPEN.startswith(self.text[i:])), len(self.text))
        out, self.sent = self.text[self.sent:cut], cut
        return out

    def rest(self, prose: str) -> str:
        """What is still to send once the reply is complete and ``prose`` is its text."""
        sent = self.text[:max(self.sent, 0)].lstrip()
        return prose[len(sent):] if prose.startswith(sent) else ""


class LocalChatModel(BaseChatModel):
    """A GGUF model run in this process by llama.cpp; one engine per file, shared by every copy."""

    model_path: str
    model_name: str = "local"
    temperature: float = 0.0
    seed: int | None = None
    max_tokens: int = 256
    n_ctx: int = DEFAULT_N_CTX
    timeout_s: float = 60.0
    # Prompt reading dominates a small model's latency on a CPU (about 100-400 tokens/s here).
    system_tokens: int = 600
    repeat_penalty: float = Sampling.repeat_penalty

    @property
    def _llm_type(self) -> str:
        return "llama.cpp"

    @property
    def _identifying_params(self) -> dict[str, Any]:
        return {"model_name": self.model_name, "temperature": self.temperature,
                "seed": self.seed, "max_tokens": self.max_tokens}

    def bind_tools(self, tools: Sequence[Any], *, tool_choice: Any = None,
                   **kwargs: Any) -> Any:
        return self.bind(tools=[convert_to_openai_tool(t) for t in tools],
                         tool_choice=tool_choice, **kwargs)

    def warm(self) -> None:
        """Load the weights now (the first call would otherwise do it)."""
        engine(self.model_path, self.n_ctx)

    def prompt(self, messages: Sequence[BaseMessage], tools: Sequence[dict] = (),
               tool_choice: Any = None) -> list[str]:
        """Exactly the text the model reads for these messages, as blocks (the system block
        first): joined, they are the ChatML prompt.

        The system message keeps its leading paragraphs up to ``system_tokens`` (persona and
        rules come first; the rest of the business profile is one tool call away), and the
        oldest turns are left out when the whole would not fit the context.
        """
        eng = engine(self.model_path, self.n_ctx)
        system = _fitted(eng, chatml.system_text(messages), self.system_tokens)
        tools_text = chatml.tools_section(tools, tool_choice)
        head = chatml.system_block(system, tools_text) + (_EXAMPLES() if tools_text else "")
        rest = [m for m in messages if not isinstance(m, SystemMessage)]
        starts = [i for i, m in enumerate(rest) if isinstance(m, HumanMessage)]
        budget = self.n_ctx - min(self.max_tokens, self.n_ctx // 4) - MIN_REPLY_TOKENS
        used = len(eng.block_tokens(head))
        for start in [0, *starts[1:]]:
            body = chatml.conversation(rest[start:])
            if used + sum(len(eng.block_tokens(b)) for b in body) <= budget:
                return [head, *body]
        return [head, *chatml.conversation(rest[starts[-1]:] if starts else rest)]

    def _stream(self, messages: list[BaseMessage], stop: list[str] | None = None,
                run_manager: Any = None, **kwargs: Any) -> Iterator[ChatGenerationChunk]:
        tools = kwargs.get("tools") or []
        tool_choice = kwargs.get("tool_choice")
        offered = [] if tool_choice == "none" else tools
        blocks = self.prompt(messages, tools, tool_choice)
        stats = Generation()
        pieces = engine(self.model_path, self.n_ctx).generate(
            blocks, max_tokens=int(kwargs.get("max_tokens") or self.max_tokens),
            temperature=self.temperature, seed=self.seed, timeout_s=self.timeout_s,
            stats=stats, sampling=Sampling(repeat_penalty=self.repeat_penalty))
        try:
            yield from self._chunks(_until_stop(pieces, stop), offered, stats, run_manager)
        finally:
            pieces.close()  # releases the engine at once, even when a stop string ended it

    def _chunks(self, pieces: Iterable[str], offered: Sequence[dict], stats: Generation,
                run_manager: Any = None) -> Iterator[ChatGenerationChunk]:
        """Prose as it is generated, then one last chunk with the tool calls and the usage."""
        gate = _Gate([t["function"]["name"] for t in offered])
        for piece in pieces:
            if text := gate.feed(piece):
                yield self._emit(text, run_manager)
        prose, calls = chatml.parse_reply(gate.text, offered)
        if tail := gate.rest(prose):
            yield self._emit(tail, run_manager)
        yield ChatGenerationChunk(message=AIMessageChunk(
            content="",
            tool_call_chunks=[{"name": c.name, "id": c.id, "index": i, "type": "tool_call_chunk",
                               "args": json.dumps(c.args) if c.args is not None else c.raw}
                              for i, c in enumerate(calls)],
            usage_metadata={"input_tokens": stats.prompt_tokens,
                            "output_tokens": stats.output_tokens,
                            "total_tokens": stats.prompt_tokens + stats.output_tokens},
            response_metadata={"model_name": self.model_name,
                               "finish_reason": stats.finish_reason},
            chunk_position="last"))

    @staticmethod
    def _emit(text: str, run_manager: Any) -> ChatGenerationChunk:
        chunk = ChatGenerationChunk(message=AIMessageChunk(content=text))
        if run_manager is not None:
            run_manager.on_llm_new_token(text, chunk=chunk)
        return chunk

    def _generate(self, messages: list[BaseMessage], stop: list[str] | None = None,
                  run_manager: Any = None, **kwargs: Any) -> ChatResult:
        return generate_from_stream(self._stream(messages, stop, run_manager, **kwargs))


_EXAMPLES = lru_cache(maxsize=1)(chatml.examples)


@lru_cache(maxsize=32)
def _fitted(eng: LlamaEngine, system: str, budget: int) -> str:
    return chatml.fit_paragraphs(system, budget, lambda text: len(eng.block_tokens(text)))


def _until_stop(pieces: Iterable[str], stop: Sequence[str] | None) -> Iterator[str]:
    """The pieces up to the first stop string, if the caller gave any."""
    text = ""
    for piece in pieces:
        text += piece
        hits = [text.find(s) for s in stop or () if s in text]
        if hits:
            if (cut := min(hits) - (len(text) - len(piece))) > 0:
                yield piece[:cut]
            return
        yield piece
