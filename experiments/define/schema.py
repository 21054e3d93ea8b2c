"""The shapes of grid and scenario files as pydantic models; errors name the file and field."""

from __future__ import annotations

import re
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator

# One reader of pydantic errors for every data file; grid.py and scenarios.py take it from here.
from treadwise.datafiles import validate_file  # noqa: F401
from treadwise.settings import RoutingMode

StrategyName = Literal["react", "plan-verify", "think-write", "self-consistency"]
DEFAULT_STRATEGY: StrategyName = "react"
ID_PATTERN = r"[a-z0-9][a-z0-9_\-]{0,63}"

Temperature = Annotated[float, Field(ge=0.0, le=2.0)]
Name = Annotated[str, Field(min_length=1)]


class Strict(BaseModel):
    """Unknown fields are errors; values are not coerced between types."""

    model_config = ConfigDict(extra="forbid", strict=True, frozen=True)


def _listed(value: Any) -> Any:
    """A single name may stand for a one-item list."""
    return [value] if isinstance(value, str) else value


def _unique(values: list[Any]) -> list[Any]:
    if len(set(map(str, values))) != len(values):
        raise ValueError("lists the same value twice")
    return values


class VariationFile(Strict):
    system_suffix: str = ""
    max_tokens: Annotated[int, Field(ge=1)] | None = None


class BudgetFile(Strict):
    max_calls: Annotated[int, Field(ge=1)] | None = None
    max_cost_usd: Annotated[float, Field(ge=0)] | None = None


class ScenarioChoice(Strict):
    file: Name | None = None
    categories: list[str] = []
    ids: list[str] = []

    _listed = field_validator("categories", "ids", mode="before")(_listed)


class GridFile(Strict):
    """A grid file: the factors of a sweep and how to run it."""

    model_config = ConfigDict(extra="forbid", strict=True, frozen=True,
                              json_schema_extra={"title": "TreadWise experiment grid"})

    name: str | None = None
    description: str = ""
    personas: Annotated[list[Name], Field(min_length=1)]
    models: Annotated[list[Name], Field(min_length=1)]
    temperatures: Annotated[list[Temperature], Field(min_length=1)]
    strategies: Annotated[list[StrategyName], Field(min_length=1)] = [DEFAULT_STRATEGY]
    # The agent's tool routing per case; empty: whatever TREADWISE_ROUTING says.
    routings: list[RoutingMode] = []
    # A local model's own settings, crossed with every local model of `models`.
    decodings: list[Name] = []
    model_routings: list[Name] = []
    variations: dict[str, VariationFile | None] | None = None
    exclude: list[dict[str, Any]] = []
    repeats: Annotated[int, Field(ge=1, le=1000)] = 1
    concurrency: Annotated[int, Field(ge=1, le=64)] = 4
    workers: Annotated[int, Field(ge=1, le=16)] = 1
    timeout_s: Annotated[float, Field(ge=0.1, le=3600)] = 60.0
    max_retries: Annotated[int, Field(ge=0, le=10)] | None = None
    max_retry_wait_s: Annotated[float, Field(ge=0, le=600)] | None = None
    budget: BudgetFile = BudgetFile()
    scenarios: ScenarioChoice = ScenarioChoice()
    rate_limits: dict[str, Annotated[float, Field(ge=0)]] = {}
    prices: Name | None = None
    keep_cases: Literal["failed", "all", "none"] = "failed"
    judge: Name | None = None
    judge_samples: Annotated[int, Field(ge=1, le=20)] = 1
    judge_temperature: Temperature = 0.0
    judge_cache: bool = True
    stream: bool = False

    _unique = field_validator("personas", "models", "temperatures", "strategies", "routings",
                              "decodings", "model_routings")(_unique)

    @field_validator("routings", mode="before")
    @classmethod
    def _yaml_on_off(cls, value: Any) -> Any:
        # YAML reads a bare on / off as true / false; a grid author means the routing mode.
        listed = _listed(value) if not isinstance(value, bool) else [value]
        return [{True: "on", False: "off"}.get(v, v) if isinstance(v, bool) else v
                for v in listed or []]

    @field_validator("scenarios", mode="before")
    @classmethod
    def _file_alone(cls, value: Any) -> Any:
        return {"file": value} if isinstance(value, str) else (value or {})

    @field_validator("exclude", "rate_limits", "budget", mode="before")
    @classmethod
    def _empty(cls, value: Any, info: Any) -> Any:
        return ([] if info.field_name == "exclude" else {}) if value is None else value


class ScenarioEntry(Strict):
    id: str
    category: Annotated[str, Field(min_length=1)]
    turns: Annotated[list[Annotated[str, Field(pattern=r"\S")]], Field(min_length=1)]
    checks: list[dict[str, Any]] = []
    description: str = ""
    calls: Annotated[int, Field(ge=1)] | None = None
    # The tool a capable model calls first; read from the tool checks when not given.
    first_tool: Annotated[str, Field(min_length=1)] | None = None

    _listed = field_validator("turns", mode="before")(_listed)

    @field_validator("id", mode="before")
    @classmethod
    def _id(cls, value: Any) -> Any:
        value = str(value) if isinstance(value, int) else value
        if not isinstance(value, str) or not re.fullmatch(ID_PATTERN, value):
            raise ValueError(f"id {value!r} must be lower-case letters, digits, _ or - "
                             "(at most 64)")
        return value


class ScenarioFile(Strict):
    description: str = ""
    scenarios: Annotated[list[ScenarioEntry], Field(min_length=1)]
