"""A local model's own settings (decoding, routing) read from its spec and set on it, so a grid
can cross them as factors: `local:smollm2?decoding=free&routing=none`."""

from __future__ import annotations

from itertools import product

from treadwise.errors import ModelConfigError

# The settings a local spec takes after "?" (treadwise.models.local.SETTINGS) and the grid
# fields that list their levels.
GRID_FIELDS = {"decoding": "decodings", "routing": "model_routings",
               "grounding": "groundings"}


def _local_parse():
    """treadwise.models.local.parse, or None in a TreadWise whose local models take no
    settings (they arrive with constrained decoding, issue 21)."""
    from treadwise.models import local

    return getattr(local, "parse", None)


def model_settings(spec: str) -> dict[str, str]:
    """{"decoding": ..., "routing": ...} of a local spec (defaults filled in); {} for every
    other model, and for local models that take no settings."""
    from treadwise.models import parse_spec

    provider, name = parse_spec(spec)
    parse = _local_parse()
    if provider != "local" or parse is None:
        return {}
    return parse(name).settings()


def with_settings(spec: str, values: dict[str, str]) -> str:
    """The spec with these settings, written canonically (defaults left out, so
    `local:smollm2?decoding=constrained` is `local:smollm2`); other models unchanged."""
    if not spec.startswith("local:") or not values:
        return spec
    parse = _local_parse()
    if parse is None:
        raise ModelConfigError(f"{spec}: this TreadWise's local models take no settings "
                               f"({', '.join(values)})")
    name, _, query = spec.removeprefix("local:").partition("?")
    pairs = dict(part.partition("=")[::2] for part in query.split("&") if part)
    pairs.update(values)
    return parse(f"{name}?" + "&".join(f"{k}={v}" for k, v in pairs.items())).spec


def expand(models: tuple[str, ...], levels: dict[str, tuple[str, ...]]) -> tuple[str, ...]:
    """Each local model once per combination of the listed setting levels ({"decoding":
    ("free", "constrained")}); other models once. Raises ModelConfigError for a level the
    local model does not take."""
    listed = {key: values for key, values in levels.items() if values}
    if not listed:
        return models
    specs: list[str] = []
    for spec in models:
        for combo in product(*listed.values()):
            specs.append(with_settings(spec, dict(zip(listed, combo, strict=True))))
    return tuple(dict.fromkeys(specs))
