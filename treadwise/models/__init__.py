"""Chat models by spec string: the registry, hosted providers and the offline rule-based model."""

from treadwise.models.registry import (
    OFFLINE_LABEL,
    PROVIDERS,
    available_specs,
    default_spec,
    display_name,
    expectation,
    label,
    loading_message,
    model_settings,
    parse_spec,
    provider,
    resolve_model,
    short_label,
)

__all__ = ["OFFLINE_LABEL", "PROVIDERS", "available_specs", "default_spec", "display_name",
           "expectation", "label", "loading_message", "model_settings", "parse_spec",
           "provider", "resolve_model", "short_label"]
