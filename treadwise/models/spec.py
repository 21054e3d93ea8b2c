"""Which model and how it is asked: a spec read once (ModelSpec) and its settings (ModelSettings).

A provider is built from exactly these two: ``build(spec, settings)`` (models/registry.py).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from pydantic import BaseModel, ConfigDict, Field, ValidationInfo, field_validator

from treadwise.settings import Settings

MODEL_TEMPERATURES = (0.0, 2.0)


@dataclass(frozen=True)
class ModelSpec:
    """A model spec read once: "openai:gpt-4o-mini" is provider "openai", model "gpt-4o-mini";
    "local:smollm2?decoding=free" is provider "local", model "smollm2?decoding=free"."""

    provider: str
    model: str

    @property
    def text(self) -> str:
        return "offline" if self.provider == "offline" else f"{self.provider}:{self.model}"


class ModelSettings(BaseModel):
    """How a model is asked (pydantic-ai's ModelSettings): the sampling temperature, the seed
    and the token limit of a reply (None: the provider's own), checked when made.

    `runtime` is how this process reaches providers (Settings: the timeout, retries and rate
    limit of its clients, keys and endpoints in `runtime.environment`); the agent fills it in,
    None means the environment's settings. It is not part of what a turn asked for.
    """

    model_config = ConfigDict(frozen=True, extra="forbid", arbitrary_types_allowed=True)

    temperature: float = 0.0
    seed: int | None = None
    max_tokens: int | None = Field(default=None, gt=0)
    runtime: Settings | None = Field(default=None, exclude=True, repr=False)

    @field_validator("temperature", mode="before")
    @classmethod
    def _temperature(cls, value: object, info: ValidationInfo) -> float:
        """A number within the range the caller allows (context "temperatures", default the
        models' 0 to 2), said in words otherwise."""
        low, high = (info.context or {}).get("temperatures", MODEL_TEMPERATURES)
        number = value if isinstance(value, int | float) and not isinstance(value, bool) else None
        if number is None or math.isnan(number) or not low <= number <= high:
            raise ValueError(f"The temperature must be a number from {low:g} to {high:g} "
                             f"(got {value!r}).")
        return float(number)

    def reached_by(self, runtime: Settings) -> ModelSettings:
        """These settings with the process's way of reaching providers."""
        return self.model_copy(update={"runtime": runtime})

    @property
    def process(self) -> Settings:
        """The process settings a provider reads: `runtime`, else the environment's."""
        return self.runtime if self.runtime is not None else Settings.from_env()
