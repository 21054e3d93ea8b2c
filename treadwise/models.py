"""Model providers: one spec string ("offline", "openai:gpt-4o-mini", ...) resolved in one place."""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping
from functools import lru_cache
from typing import Any

from treadwise.errors import ModelConfigError
from treadwise.settings import Settings

OFFLINE_LABEL = "offline (rule-based, not an LLM)"
Provider = Callable[[str, float, Settings, Mapping[str, str], int | None], Any]
PROVIDERS: dict[str, Provider] = {}

# Models offered in pickers when the provider's key is set; any other name works as a spec too.
SUGGESTED_MODELS: dict[str, tuple[str, ...]] = {
    "openai": ("gpt-4o-mini", "gpt-4o", "gpt-3.5-turbo"),
    "google_genai": ("gemini-2.0-flash", "gemini-2.5-flash", "gemini-2.5-pro"),
}
KEY_VARIABLES: dict[str, tuple[str, ...]] = {
    "openai": ("OPENAI_API_KEY",),
    "google_genai": ("GOOGLE_API_KEY", "GEMINI_API_KEY"),
}
PACKAGES: dict[str, str] = {
    "openai": "langchain-openai",
    "google_genai": "langchain-google-genai",
    "anthropic": "langchain-anthropic",
    "ollama": "langchain-ollama",
    "mistralai": "langchain-mistralai",
    "groq": "langchain-groq",
}
_rate_limiters: dict[tuple[str, float], Any] = {}


def provider(name: str) -> Callable[[Provider], Provider]:
    def register(fn: Provider) -> Provider:
        PROVIDERS[name] = fn
        return fn

    return register


def parse_spec(spec: str) -> tuple[str, str]:
    """Split a spec into (provider, model); a bare gpt-/gemini- name gets its provider."""
    spec = (spec or "").strip()
    if spec in ("", "offline"):
        return "offline", "rule-based"
    name, sep, model = spec.partition(":")
    if sep and name and model:
        return name.strip(), model.strip()
    if spec.startswith(("gpt-", "o1", "o3", "o4")):
        return "openai", spec
    if spec.startswith("gemini-"):
        return "google_genai", spec
    raise ModelConfigError(
        f"model spec {spec!r} must be 'offline' or look like provider:model "
        "(for example openai:gpt-4o-mini or google_genai:gemini-2.0-flash)"
    )


def display_name(spec: str) -> str:
    provider_name, model = parse_spec(spec)
    if provider_name == "offline":
        return OFFLINE_LABEL
    return f"{provider_name}:{model}"


def _key(provider_name: str, env: Mapping[str, str]) -> str:
    names = KEY_VARIABLES[provider_name]
    for name in names:
        if value := env.get(name, "").strip():
            return value
    raise ModelConfigError(
        f"{' or '.join(names)} is not set: export it to use {provider_name} models, "
        "or use --model offline"
    )


def _rate_limiter(provider_name: str, settings: Settings) -> Any:
    if settings.rate_limit_rps <= 0:
        return None
    key = (provider_name, settings.rate_limit_rps)
    if key not in _rate_limiters:
        from langchain_core.rate_limiters import InMemoryRateLimiter

        _rate_limiters[key] = InMemoryRateLimiter(
            requests_per_second=settings.rate_limit_rps, check_every_n_seconds=0.05,
            max_bucket_size=max(1.0, settings.rate_limit_rps))
    return _rate_limiters[key]


@lru_cache(maxsize=1)
def _tls_context() -> Any:
    """One TLS context for every client: building one costs tens of milliseconds."""
    import httpx

    return httpx.create_ssl_context()


def _proxy_for(url: str) -> str | None:
    """The proxy the environment (HTTPS_PROXY, NO_PROXY, ...) names for this endpoint."""
    import urllib.request
    from urllib.parse import urlsplit

    parts = urlsplit(url)
    if not parts.hostname or urllib.request.proxy_bypass(parts.hostname):
        return None
    proxies = urllib.request.getproxies()
    return proxies.get(parts.scheme) or proxies.get("all")


def _transports(settings: Settings, endpoint: str) -> tuple[Any, Any]:
    """Retrying transports; a custom transport turns off httpx's own proxy lookup, so the
    environment's proxy for this endpoint is applied here."""
    import httpx

    from treadwise.retries import AsyncRetryTransport, RetryTransport

    options = {"max_retries": settings.max_retries, "max_wait_s": settings.max_retry_wait_s}
    proxy = _proxy_for(endpoint)
    return (RetryTransport(httpx.HTTPTransport(verify=_tls_context(), proxy=proxy), **options),
            AsyncRetryTransport(httpx.AsyncHTTPTransport(verify=_tls_context(), proxy=proxy),
                                **options))


def _missing_package(provider_name: str) -> ModelConfigError:
    package = PACKAGES.get(provider_name, f"langchain-{provider_name.replace('_', '-')}")
    return ModelConfigError(f"the package {package} is not installed: pip install {package}")


@provider("offline")
def _offline(model: str, temperature: float, settings: Settings, env: Mapping[str, str],
             seed: int | None) -> Any:
    from treadwise.offline import OfflineModel

    return OfflineModel(temperature=temperature, seed=seed)


@provider("openai")
def _openai(model: str, temperature: float, settings: Settings, env: Mapping[str, str],
            seed: int | None) -> Any:
    base_url = env.get("OPENAI_BASE_URL", "").strip() or None
    # Local OpenAI-compatible servers (vLLM, Ollama, llama.cpp) often need no key.
    key = _key("openai", env) if not base_url or env.get("OPENAI_API_KEY") else "not-needed"
    try:
        import httpx
        from langchain_openai import ChatOpenAI
    except ImportError:
        raise _missing_package("openai") from None
    sync_transport, async_transport = _transports(settings,
                                                  base_url or "https://api.openai.com/v1")
    timeout = httpx.Timeout(settings.timeout_s, connect=min(10.0, settings.timeout_s))
    return ChatOpenAI(
        model=model, temperature=temperature, api_key=key, base_url=base_url,
        timeout=settings.timeout_s, max_retries=0, seed=seed, stream_usage=True,
        http_socket_options=(),  # our own clients below; nothing for langchain-openai to tune
        http_client=httpx.Client(transport=sync_transport, timeout=timeout),
        http_async_client=httpx.AsyncClient(transport=async_transport, timeout=timeout),
        rate_limiter=_rate_limiter("openai", settings),
    )


@provider("google_genai")
def _gemini(model: str, temperature: float, settings: Settings, env: Mapping[str, str],
            seed: int | None) -> Any:
    key = _key("google_genai", env)
    try:
        from langchain_google_genai import ChatGoogleGenerativeAI
    except ImportError:
        raise _missing_package("google_genai") from None
    base_url = env.get("TREADWISE_GEMINI_BASE_URL", "").strip() or None
    sync_transport, _ = _transports(settings,
                                    base_url or "https://generativelanguage.googleapis.com")
    return ChatGoogleGenerativeAI(
        model=model, temperature=temperature, google_api_key=key, base_url=base_url,
        timeout=settings.timeout_s, max_retries=1, client_args={"transport": sync_transport},
        rate_limiter=_rate_limiter("google_genai", settings),
    )


def _other(provider_name: str, model: str, temperature: float, settings: Settings) -> Any:
    try:
        from langchain.chat_models import init_chat_model
    except ImportError:
        raise _missing_package("langchain") from None
    try:
        return init_chat_model(f"{provider_name}:{model}", temperature=temperature,
                               timeout=settings.timeout_s, max_retries=settings.max_retries,
                               rate_limiter=_rate_limiter(provider_name, settings))
    except ImportError:
        raise _missing_package(provider_name) from None
    except ValueError as exc:
        raise ModelConfigError(f"cannot build {provider_name}:{model}: {exc}") from None


def resolve_model(spec: str, *, temperature: float = 0.0, settings: Settings | None = None,
                  env: Mapping[str, str] | None = None, seed: int | None = None) -> Any:
    """Build the chat model a spec names, or raise ModelConfigError with one clear line."""
    settings = settings or Settings.from_env()
    env = os.environ if env is None else env
    if not 0.0 <= temperature <= 2.0:
        raise ModelConfigError(f"temperature must be between 0 and 2, got {temperature}")
    provider_name, model = parse_spec(spec)
    if provider_name in PROVIDERS:
        return PROVIDERS[provider_name](model, temperature, settings, env, seed)
    return _other(provider_name, model, temperature, settings)


def default_spec(env: Mapping[str, str] | None = None) -> str:
    """The offline model unless TREADWISE_MODEL names another; never a surprise paid call."""
    env = os.environ if env is None else env
    return env.get("TREADWISE_MODEL", "").strip() or "offline"


def available_specs(env: Mapping[str, str] | None = None) -> list[str]:
    """offline, then the suggested models of every provider whose key is set."""
    env = os.environ if env is None else env
    specs = ["offline"]
    for provider_name, names in KEY_VARIABLES.items():
        if any(env.get(n, "").strip() for n in names):
            specs.extend(f"{provider_name}:{m}" for m in SUGGESTED_MODELS[provider_name])
    return specs
