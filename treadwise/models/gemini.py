"""Google Gemini through langchain-google-genai; TREADWISE_GEMINI_BASE_URL moves the endpoint."""

from __future__ import annotations

from typing import Any

from treadwise.models.http import rate_limiter, transports
from treadwise.models.registry import api_key, missing_package
from treadwise.models.spec import ModelSettings, ModelSpec

# langchain-google-genai 4.4.2 passes max_retries to google-genai as HttpRetryOptions(attempts=N):
# 1 is a single attempt (no SDK retries), while 0 means "the SDK's default", which retries.
# Retries happen once, in our transport.
SINGLE_ATTEMPT = 1


def build(spec: ModelSpec, settings: ModelSettings) -> Any:
    runtime = settings.process
    env = runtime.environment
    key = api_key("google_genai", env)
    try:
        from langchain_google_genai import ChatGoogleGenerativeAI
    except ImportError:
        raise missing_package("google_genai") from None
    base_url = env.get("TREADWISE_GEMINI_BASE_URL", "").strip() or None
    sync_transport, _ = transports(runtime,
                                   base_url or "https://generativelanguage.googleapis.com")
    return ChatGoogleGenerativeAI(
        model=spec.model, temperature=settings.temperature, google_api_key=key,
        base_url=base_url, timeout=runtime.timeout_s, max_retries=SINGLE_ATTEMPT,
        seed=settings.seed, max_output_tokens=settings.max_tokens,
        client_args={"transport": sync_transport},
        rate_limiter=rate_limiter("google_genai", runtime),
    )
