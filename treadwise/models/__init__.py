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
    read_spec,
    resolve_model,
    short_label,
)
from treadwise.models.spec import ModelSettings, ModelSpec

__all__ = ["OFFLINE_LABEL", "PROVIDERS", "ModelSettings", "ModelSpec", "available_specs",
           "default_spec", "display_name", "expectation", "label", "loading_message",
           "model_settings", "parse_spec", "provider", "read_spec", "resolve_model",
           "short_label"]
