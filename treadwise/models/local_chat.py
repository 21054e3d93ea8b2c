"""The local llama.cpp model as a LangChain chat model: tools, streaming, seeds, token counts."""

from __future__ import annotations

import json
from collections.abc import Iterable, Iterator, Sequence
from functools import lru_cache
from typing import Any, ClassVar

from langchain_core.language_models import BaseChatModel
from langchain_core.language_models.chat_models import generate_from_stream
from langchain_core.messages import AIMessageChunk, BaseMessage
from langchain_core.outputs import ChatGenerationChunk, ChatResult
from langchain_core.utils.function_calling import convert_to_openai_tool

from treadwise.models.llamacpp import DEFAULT_N_CTX, Sampling, engine
from treadwise.models.local_turn import (
    DEFAULT_DECODING,
    DEFAULT_ROUTING,
    Decoding,
    Grounding,
    LocalTurn,
    Options,
    Routing,
)


class LocalChatModel(BaseChatModel):
    """A GGUF model run in this process by llama.cpp; one engine per file, shared by every copy."""

    # The graph binds the turn's persona as a keyword (see agent/graph.py).
    accepts_persona: ClassVar[bool] = True
    model_path: str
    model_name: str = "local"
    temperature: float = 0.0
    seed: int | None = None
    max_tokens: int = 256
    n_ctx: int = DEFAULT_N_CTX
    threads: int = 0  # llama.cpp threads (Settings.local_threads); 0: half the cores
    # Where read system blocks are kept for other processes (local.states_folder, from
    # TREADWISE_LOCAL_STATE_DIR); empty: nowhere.
    state_dir: str = ""
    timeout_s: float = 60.0
    repeat_penalty: float = Sampling.repeat_penalty
    # How it decides (see local_turn): calls held to the tools' grammars or read from free
    # text, and with routing "tool" a first step that picks one of the tools it is given.
    decoding: Decoding = DEFAULT_DECODING
    routing: Routing = DEFAULT_ROUTING
    # "on": held calls may only write values the conversation grounds, and the agent's
    # grounding guard checks every call (agent/argument_check.py); "off" for a baseline.
    grounding: Grounding = "on"

    @property
    def _llm_type(self) -> str:
        return "llama.cpp"

    @property
    def _identifying_params(self) -> dict[str, Any]:
        return {"model_name": self.model_name, "temperature": self.temperature,
                "seed": self.seed, "max_tokens": self.max_tokens, "decoding": self.decoding,
                "routing": self.routing, "grounding": self.grounding}

    def bind_tools(self, tools: Sequence[Any], *, tool_choice: Any = None,
                   **kwargs: Any) -> Any:
        return self.bind(tools=[convert_to_openai_tool(t) for t in tools],
                         tool_choice=tool_choice, **kwargs)

    def warm(self) -> None:
        """Load the weights now (the first call would otherwise do it)."""
        engine(self.model_path, self.n_ctx, self.threads, self.state_dir)

    def options(self, **overrides: Any) -> Options:
        fields = {"decoding": self.decoding, "routing": self.routing,
                  "grounding": self.grounding,
                  "temperature": self.temperature, "seed": self.seed,
                  "max_tokens": self.max_tokens, "timeout_s": self.timeout_s,
                  "repeat_penalty": self.repeat_penalty}
        return Options(**{**fields, **overrides})

    def turn(self, messages: Sequence[BaseMessage], tools: Sequence[dict] = (),
             tool_choice: Any = None, persona: Any = None, **overrides: Any) -> LocalTurn:
        """The steps one call takes (see local_turn); run() it to generate. `persona` (or its
        key) is the turn's, which the graph binds: it frames answers in the persona's voice."""
        if isinstance(persona, str):
            persona = _persona(persona)
        return LocalTurn(engine(self.model_path, self.n_ctx, self.threads, self.state_dir),
                         self.options(**overrides), messages, tools, tool_choice, persona)

    def _stream(self, messages: list[BaseMessage], stop: list[str] | None = None,
                run_manager: Any = None, **kwargs: Any) -> Iterator[ChatGenerationChunk]:
        overrides = {"max_tokens": int(kwargs["max_tokens"])} if kwargs.get("max_tokens") else {}
        turn = self.turn(messages, kwargs.get("tools") or [], kwargs.get("tool_choice"),
                         kwargs.get("persona"), **overrides)
        pieces = turn.run()
        try:
            for piece in _until_stop(pieces, stop):
                yield self._emit(piece, run_manager)
        finally:
            pieces.close()  # releases the engine at once, even when a stop string ended it
        yield self._last(turn)

    def _last(self, turn: LocalTurn) -> ChatGenerationChunk:
        """The closing chunk: the tool calls, the usage of every step, how the call decided."""
        stats = [record.stats for record in turn.steps]
        prompt = sum(s.prompt_tokens for s in stats)
        output = sum(s.output_tokens for s in stats)
        return ChatGenerationChunk(message=AIMessageChunk(
            content="",
            tool_call_chunks=[{"name": c.name, "id": c.id, "index": i, "type": "tool_call_chunk",
                               "args": json.dumps(c.args) if c.args is not None else c.raw}
                              for i, c in enumerate(turn.calls)],
            usage_metadata={"input_tokens": prompt, "output_tokens": output,
                            "total_tokens": prompt + output},
            response_metadata={
                "model_name": self.model_name,
                "finish_reason": stats[-1].finish_reason if stats else "stop",
                "decoding": self.decoding, "routing": self.routing,
                "grounding": self.grounding,
                "steps": [{"step": r.step, "input_tokens": r.stats.prompt_tokens,
                           "output_tokens": r.stats.output_tokens} for r in turn.steps]},
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


@lru_cache(maxsize=16)
def _persona(key: str) -> Any:
    from treadwise.personas import get_persona

    return get_persona(key)


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
