"""OpenAI and every OpenAI-compatible server (vLLM, Ollama, llama.cpp, LM Studio)."""

from __future__ import annotations

from functools import lru_cache
from typing import Any

from pydantic import SecretStr

from treadwise.models.http import http_clients, rate_limiter
from treadwise.models.registry import api_key, missing_package
from treadwise.models.spec import ModelSettings, ModelSpec


def build(spec: ModelSpec, settings: ModelSettings) -> Any:
    runtime = settings.process
    env = runtime.environment
    base_url = env.get("OPENAI_BASE_URL", "").strip() or None
    # Local OpenAI-compatible servers (vLLM, Ollama, llama.cpp) often need no key.
    key = api_key("openai", env) if not base_url or env.get("OPENAI_API_KEY") else "not-needed"
    try:
        from langchain_openai import ChatOpenAI
    except ImportError:
        raise missing_package("openai") from None
    chat_class = _compatible_class() if base_url else ChatOpenAI
    sync_client, async_client = http_clients(runtime, base_url or "https://api.openai.com/v1")
    return chat_class(
        model=spec.model, temperature=settings.temperature, api_key=SecretStr(key),
        base_url=base_url, timeout=runtime.timeout_s, max_retries=0, seed=settings.seed,
        max_completion_tokens=settings.max_tokens, stream_usage=True,
        http_socket_options=(),  # our own clients below; nothing for langchain-openai to tune
        http_client=sync_client, http_async_client=async_client,
        rate_limiter=rate_limiter("openai", runtime),
    )


@lru_cache(maxsize=1)
def _compatible_class() -> Any:
    from langchain_openai import ChatOpenAI

    class CompatibleChatOpenAI(ChatOpenAI):
        """ChatOpenAI for compatible servers: langchain-openai sends the token limit only as
        max_completion_tokens, which llama-cpp-python's server ignores; max_tokens goes too."""

        def _get_request_payload(self, input_: Any, *, stop: list[str] | None = None,
                                 **kwargs: Any) -> dict:
            payload = super()._get_request_payload(input_, stop=stop, **kwargs)
            if "max_completion_tokens" in payload:
                payload.setdefault("max_tokens", payload["max_completion_tokens"])
            return payload

    return CompatibleChatOpenAI
