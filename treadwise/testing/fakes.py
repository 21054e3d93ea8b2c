"""A scripted chat model for tests: each call answers from a queue or a function."""

from __future__ import annotations

import threading
from collections.abc import Callable, Sequence
from typing import Any

from langchain_core.language_models import BaseChatModel
from langchain_core.messages import AIMessage, BaseMessage
from langchain_core.outputs import ChatGeneration, ChatResult
from langchain_core.utils.function_calling import convert_to_openai_tool
from pydantic import PrivateAttr

Script = AIMessage | Callable[[list[BaseMessage], dict[str, Any]], AIMessage]


class ScriptedModel(BaseChatModel):
    """Answers with queued messages (the last one repeats) and records every call."""

    script: list[Any] = []
    _calls: list[tuple[list[BaseMessage], dict[str, Any]]] = PrivateAttr(default_factory=list)
    _lock: threading.Lock = PrivateAttr(default_factory=threading.Lock)

    @property
    def _llm_type(self) -> str:
        return "scripted-test-model"

    @property
    def calls(self) -> list[tuple[list[BaseMessage], dict[str, Any]]]:
        return self._calls

    def enqueue(self, *items: Script) -> ScriptedModel:
        self.script.extend(items)
        return self

    def bind_tools(self, tools: Sequence[Any], *, tool_choice: str | None = None,
                   **kwargs: Any) -> Any:
        return self.bind(tools=[convert_to_openai_tool(t) for t in tools],
                         tool_choice=tool_choice, **kwargs)

    def _generate(self, messages: list[BaseMessage], stop: list[str] | None = None,
                  run_manager: Any = None, **kwargs: Any) -> ChatResult:
        with self._lock:
            self._calls.append((list(messages), dict(kwargs)))
            item = self.script.pop(0) if len(self.script) > 1 else self.script[0]
        message = item(messages, kwargs) if callable(item) else item
        return ChatResult(generations=[ChatGeneration(message=message.model_copy())])
