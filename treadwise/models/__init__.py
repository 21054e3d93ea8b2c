"""Chat models by spec string: the registry, hosted providers and the offline rule-based model."""

from treadwise.models.registry import (
    OFFLINE_LABEL,
    PROVIDERS,
    available_specs,
    default_spec,
    display_name,
    label,
    loading_message,
    parse_spec,
    provider,
    resolve_model,
)

__all__ = ["OFFLINE_LABEL", "PROVIDERS", "available_specs", "default_spec", "display_name",
           "label", "loading_message", "parse_spec", "provider", "resolve_model"]
