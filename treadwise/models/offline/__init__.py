"""The offline model: rule-based (not an LLM), deterministic at temperature 0, real tool calls."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from treadwise.settings import Settings


def build(model: str, temperature: float, settings: Settings, env: Mapping[str, str],
          seed: int | None) -> Any:
    from treadwise.models.offline.model import OfflineModel

    return OfflineModel(temperature=temperature, seed=seed)
