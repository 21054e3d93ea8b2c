"""The model registry: one spec string ("offline", "openai:gpt-4o-mini", ...) resolved in one place.

Built-in providers are entry points of the group ``treadwise.models`` in pyproject.toml,
declared exactly as an outside provider declares its own. A provider is
``build(spec: ModelSpec, settings: ModelSettings) -> BaseChatModel`` (models/spec.py): the spec
names the model (``spec.provider``, ``spec.model``), the settings say how it is asked
(``temperature``, ``seed``, ``max_tokens``) and, in ``settings.process``, how this process
reaches providers (timeout, retries, rate limit; keys and endpoints in its ``environment``).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from typing import Any

from treadwise.errors import ModelConfigError, redact
from treadwise.models.spec import ModelSettings, ModelSpec
from treadwise.plugins import Registry
from treadwise.settings import Settings, process_environment

OFFLINE_LABEL = "offline (rule-based, not an LLM)"
MAX_SPEC_CHARS = 200
SHOWN_SPEC_CHARS = 60
# Provider and model names, local model paths and their ?setting=value&... (local:smollm2?
# decoding=free): nothing that could carry markup or escapes.
_SPEC_CHARS = re.compile(r"[\w .:/@+~=?&-]+")
ENTRY_POINT_GROUP = "treadwise.models"
Provider = Callable[[ModelSpec, ModelSettings], Any]
MODELS: Registry[Provider] = Registry(ENTRY_POINT_GROUP)
# Providers registered at run time (embedding apps, tests); they win over everything else.
PROVIDERS: dict[str, Provider] = MODELS.entries

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
# Prefixes people write for Gemini models, which are google_genai:... here. LangChain reads
# "gemini:..." as a Vertex AI model name; a provider registered under one of these (an entry
# point, an app) wins.
GEMINI_GUESSES = ("gemini", "google")


def provider(name: str) -> Callable[[Provider], Provider]:
    """Register a provider function under a spec prefix."""
    def register(fn: Provider) -> Provider:
        return MODELS.add(name, fn)

    return register


def find_provider(name: str) -> Provider | None:
    """The provider registered for a spec prefix: run-time, built-in, then entry points."""
    return MODELS.get(name)


def check_spec(spec: str) -> str:
    """The spec stripped, or one line saying why it cannot be a spec: too long, odd characters,
    or an API key pasted into it (the key itself is never repeated)."""
    spec = (spec or "").strip()
    if len(spec) > MAX_SPEC_CHARS:
        raise ModelConfigError(f"the model spec is {len(spec):,} characters long; the limit is "
                               f"{MAX_SPEC_CHARS}")
    if redact(spec) != spec:
        raise ModelConfigError("the model spec looks like it contains an API key; set keys in "
                               "environment variables (such as OPENAI_API_KEY), never in the spec")
    if not _SPEC_CHARS.fullmatch(spec or "offline"):
        raise ModelConfigError("a model spec may hold only letters, digits, spaces and . _ - : / "
                               "@ + ~ = ? &, like openai:gpt-4o-mini")
    return spec


def parse_spec(spec: str) -> tuple[str, str]:
    """Split a spec into (provider, model); a bare gpt-/gemini- name gets its provider."""
    spec = check_spec(spec)
    if spec in ("", "offline"):
        return "offline", "rule-based"
    name, sep, model = spec.partition(":")
    if sep and name and model:
        name, model = name.strip(), model.strip()
        if name in GEMINI_GUESSES and find_provider(name) is None:
            raise ModelConfigError(f"there is no model provider {name!r}: write Gemini models "
                                   f"as google_genai:{model}")
        return name, model
    if spec.startswith(("gpt-", "o1", "o3", "o4")):
        return "openai", spec
    if spec.startswith("gemini-"):
        return "google_genai", spec
    raise ModelConfigError(
        f"model spec {spec!r} must be 'offline' or look like provider:model "
        "(for example openai:gpt-4o-mini or google_genai:gemini-2.0-flash)"
    )


def read_spec(spec: str) -> ModelSpec:
    """The spec read once, or ModelConfigError saying in one line why it cannot be one."""
    return ModelSpec(*parse_spec(spec))


def display_name(spec: str) -> str:
    """How a spec is shown (CLI JSON, reply footers, exports); never raises, never shows a key.

    A spec that cannot be used is shown redacted, on one line and cut short.
    """
    try:
        provider_name, model = parse_spec(spec)
    except ModelConfigError:
        text = "".join(c if c.isprintable() else " " for c in redact(str(spec or "")))
        text = " ".join(text.split())
        return text if len(text) <= SHOWN_SPEC_CHARS else text[:SHOWN_SPEC_CHARS - 3] + "..."
    if provider_name == "offline":
        return OFFLINE_LABEL
    if provider_name == "local":
        from treadwise.models.local import parse

        try:
            return parse(model).spec
        except ModelConfigError:
            pass
    return f"{provider_name}:{model}"


def label(spec: str, settings: bool = True) -> str:
    """How a model is named to people (pickers, tables, charts): the name plus what kind of
    model it is (and a local model's settings unless `settings` is False); a spec that cannot
    be read is shown as `display_name` shows it."""
    try:
        provider_name, model = parse_spec(spec)
    except ModelConfigError:
        return display_name(spec)
    if provider_name == "local":
        from treadwise.models.local import label as local_label

        try:
            return local_label(model, settings)
        except ModelConfigError:
            return display_name(spec)
    return display_name(spec)


def model_settings(spec: str) -> dict[str, str]:
    """How a model decides, for results and grid factors: a local model's decoding and
    routing (defaults filled in), nothing for other models. Raises ModelConfigError for a
    spec that cannot be read."""
    provider_name, model = parse_spec(spec)
    if provider_name != "local":
        return {}
    from treadwise.models.local import parse

    return parse(model).settings()


def short_label(spec: str) -> str:
    """A model's name short enough to read whole in a phone's picker (`label` is the long
    one): the offline model says it is rule-based, a local model that it is a local LLM."""
    name = display_name(spec)
    return f"{name} (local LLM)" if str(spec).startswith("local:") else name


def expectation(spec: str) -> str | None:
    """One line telling a user what to expect of this model, for small local models."""
    try:
        provider_name, model = parse_spec(spec)
        if provider_name != "local":
            return None
        from treadwise.models.local import expectation as local_expectation

        return local_expectation(model)
    except ModelConfigError:
        return None


def loading_message(spec: str) -> str | None:
    """What to tell the user before a model's first, slower call (a local model loading)."""
    provider_name, model = parse_spec(spec)
    if provider_name != "local":
        return None
    from treadwise.models.local import loading_message as local_loading

    return local_loading(model)


def api_key(provider_name: str, env: Mapping[str, str]) -> str:
    """The provider's key from the environment, or one line naming the variable to set."""
    names = KEY_VARIABLES[provider_name]
    for name in names:
        if value := env.get(name, "").strip():
            return value
    raise ModelConfigError(
        f"{' or '.join(names)} is not set: export it to use {provider_name} models, "
        "or use the offline model"
    )


def missing_package(provider_name: str) -> ModelConfigError:
    package = PACKAGES.get(provider_name, f"langchain-{provider_name.replace('_', '-')}")
    return ModelConfigError(f"the package {package} is not installed: pip install {package}")


def build_passthrough(spec: ModelSpec, settings: ModelSettings) -> Any:
    """Any other provider through init_chat_model, with our retrying HTTP clients when its
    integration takes httpx clients (SDK retries off); otherwise its SDK retries instead."""
    from treadwise.models.http import http_clients, rate_limiter

    try:
        from langchain.chat_models import init_chat_model
    except ImportError:
        raise missing_package("langchain") from None
    runtime = settings.process
    options: dict[str, Any] = {
        "temperature": settings.temperature, "timeout": runtime.timeout_s,
        "rate_limiter": rate_limiter(spec.provider, runtime)}
    if settings.max_tokens is not None:
        options["max_tokens"] = settings.max_tokens
    try:
        chat = init_chat_model(spec.text, max_retries=runtime.max_retries, **options)
        if {"http_client", "http_async_client"} <= set(type(chat).model_fields):
            sync_client, async_client = http_clients(runtime, None)
            chat = init_chat_model(spec.text, max_retries=0, http_client=sync_client,
                                   http_async_client=async_client, **options)
        return chat
    except ImportError:
        raise missing_package(spec.provider) from None
    except ValueError as exc:
        raise ModelConfigError(f"cannot build {spec.text}: {exc}") from None


def resolve_model(spec: str | ModelSpec, settings: ModelSettings | None = None) -> Any:
    """Build the chat model a spec names with these settings (default: temperature 0, the
    environment's way of reaching providers), or raise ModelConfigError with one clear line."""
    spec = spec if isinstance(spec, ModelSpec) else read_spec(spec)
    settings = settings or ModelSettings()
    build = find_provider(spec.provider)
    if build is not None:
        return build(spec, settings)
    return build_passthrough(spec, settings)


def default_spec(env: Mapping[str, str] | None = None) -> str:
    """The offline model unless TREADWISE_MODEL names another; never a surprise paid call."""
    return Settings.from_env(env).model


def available_specs(env: Mapping[str, str] | None = None) -> list[str]:
    """offline, the bundled local models when installed, then the suggested models of every
    provider whose key is set."""
    from treadwise.models.local import bundled_specs

    env = process_environment() if env is None else env
    specs = ["offline", *bundled_specs()]
    for provider_name, names in KEY_VARIABLES.items():
        if any(env.get(n, "").strip() for n in names):
            specs.extend(f"{provider_name}:{m}" for m in SUGGESTED_MODELS[provider_name])
    return specs
