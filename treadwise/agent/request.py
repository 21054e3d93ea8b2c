"""One turn as every edge asks for it: persona, model, model settings, strategy, routing, thread.

The web page, the command line, a sweep case and a Python caller (``Agent.run``'s keywords)
each make a TurnRequest from what they were given, with ``TurnRequest.read``, and it is checked
once, there: a bad value is one line in words (InvalidRequest, a ModelConfigError), which the
web shows, the CLI exits 2 on and the sweep records as an error row. Behind the edge nothing
checks or looks anything up again: the persona arrives resolved, the model's display name is
worked out once, and the provider is built from ``(ModelSpec, ModelSettings)``.
"""

from __future__ import annotations

import uuid
from collections.abc import Collection
from functools import cached_property
from pathlib import Path
from typing import Any

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    ValidationError,
    ValidationInfo,
    field_validator,
)

from treadwise.agent.strategies import DEFAULT_STRATEGY, get_strategy, strategy_names
from treadwise.errors import ModelConfigError, redact
from treadwise.models.registry import check_spec, display_name, read_spec
from treadwise.models.spec import MODEL_TEMPERATURES, ModelSettings, ModelSpec
from treadwise.personas import DEFAULT_PERSONA, Persona, get_persona, load_personas
from treadwise.settings import ROUTING_MODES

MAX_THREAD_CHARS = 200


class InvalidRequest(ModelConfigError):
    """A turn asked with a value that cannot be used; the message says which, in words."""


class TurnRequest(BaseModel):
    """Who answers one turn and how. Make it with `read` (or validate a dict with the context
    {"personas_dir": ...}): a persona key is resolved to its Persona, the spec is checked."""

    model_config = ConfigDict(frozen=True, extra="forbid", arbitrary_types_allowed=True)

    persona: Persona
    model: str = "offline"
    settings: ModelSettings = ModelSettings()
    strategy: str = DEFAULT_STRATEGY
    routing: str | None = None  # on, compact or off; None: the agent's settings decide
    thread_id: str = Field(default_factory=lambda: uuid.uuid4().hex, min_length=1,
                           max_length=MAX_THREAD_CHARS)

    @field_validator("persona", mode="before")
    @classmethod
    def _persona(cls, value: object, info: ValidationInfo) -> Persona:
        if isinstance(value, Persona):
            return value
        folder = (info.context or {}).get("personas_dir")
        try:
            return get_persona(str(value), folder)
        except ValueError:
            names = ", ".join(load_personas(folder))
            raise ValueError(f"There is no persona {value!r}; pick one of {names}.") from None

    @field_validator("model", mode="before")
    @classmethod
    def _model(cls, value: object, info: ValidationInfo) -> str:
        """The spec stripped (blank is the offline model); the registry's words if it
        cannot be read. Names in the context's "models" (models a caller injected) pass."""
        text = check_spec(value if isinstance(value, str) else "")
        if text not in (info.context or {}).get("models", ()):
            read_spec(text)
        return text or "offline"

    @field_validator("strategy", mode="before")
    @classmethod
    def _strategy(cls, value: object) -> str:
        name = str(value or DEFAULT_STRATEGY).strip()
        try:
            get_strategy(name)
        except ValueError:
            raise ValueError(f"There is no strategy {name!r}; pick one of "
                             f"{', '.join(strategy_names())}.") from None
        return name

    @field_validator("routing", mode="before")
    @classmethod
    def _routing(cls, value: object) -> str | None:
        if value is None or value in ROUTING_MODES:
            return value
        raise ValueError(f"Routing must be one of {', '.join(ROUTING_MODES)} (got {value!r}).")

    @cached_property
    def spec(self) -> ModelSpec:
        """The model spec, read once."""
        return read_spec(self.model)

    @cached_property
    def shown(self) -> str:
        """How the model is named to people (footers, the CLI's `model`), worked out once."""
        return display_name(self.model)

    @classmethod
    def read(cls, *, persona: str | Persona = DEFAULT_PERSONA, model: str = "offline",
             temperature: object = 0.0, seed: object = None, max_tokens: object = None,
             strategy: str | None = None, routing: str | None = None,
             thread_id: str | None = None, personas_dir: Path | None = None,
             temperatures: tuple[float, float] = MODEL_TEMPERATURES,
             models: Collection[str] = ()) -> TurnRequest:
        """The request for these values, checked once: InvalidRequest, in words, when one
        cannot be used. `temperatures` is the range the edge offers (the web's slider goes to
        1; models take up to 2); `models` names models the caller injected (not specs)."""
        fields: dict[str, Any] = {
            "persona": persona, "model": model, "strategy": strategy or DEFAULT_STRATEGY,
            "routing": routing,
            "settings": {"temperature": temperature, "seed": seed, "max_tokens": max_tokens}}
        if thread_id is not None:
            fields["thread_id"] = thread_id
        try:
            return cls.model_validate(fields, context={"personas_dir": personas_dir,
                                                       "temperatures": temperatures,
                                                       "models": models})
        except ValidationError as exc:
            raise InvalidRequest(redact(in_words(exc))) from None


def in_words(error: ValidationError) -> str:
    """A validation error as sentences: our validators' own words, else "field: problem"."""
    said = []
    for problem in error.errors():
        if problem["type"] == "value_error":
            said.append(str(problem["ctx"]["error"]))
        else:
            where = " ".join(str(part) for part in problem["loc"] if part != "settings")
            said.append(f"{where.replace('_', ' ').capitalize()}: {problem['msg'].lower()}.")
    return " ".join(dict.fromkeys(said))
