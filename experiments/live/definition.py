"""A live experiment's YAML: arms (persona, model, temperature, strategy), weights and limits."""

from __future__ import annotations

import hashlib
import random
from pathlib import Path
from typing import Annotated, Any

import yaml
from pydantic import Field, model_validator

from experiments.define.schema import ID_PATTERN, Strict, validate_file

EXAMPLE = """name: warm-vs-technical
arms:
  - name: friendly
    persona: friendly
  - name: technical
    persona: technical
    weight: 1
max_visitors: 2000
alpha: 0.05
"""


class LiveError(ValueError):
    """A live experiment file cannot be used; one line names the file and the field."""


class Arm(Strict):
    """One version of the assistant a visitor may be given."""

    name: Annotated[str, Field(pattern=f"^{ID_PATTERN}$")]
    persona: Annotated[str, Field(min_length=1)]
    model: Annotated[str, Field(min_length=1)] = "offline"
    temperature: Annotated[float, Field(ge=0.0, le=1.0)] = 0.0
    strategy: Annotated[str, Field(min_length=1)] = "react"
    weight: Annotated[float, Field(gt=0)] = 1.0


class LiveExperiment(Strict):
    """A live A/B experiment: the first arm is the control every other arm is compared with."""

    name: Annotated[str, Field(pattern=f"^{ID_PATTERN}$")]
    arms: Annotated[list[Arm], Field(min_length=2, max_length=6)]
    # The stopping rule: stop when the report names a better arm, or at this many visitors.
    max_visitors: Annotated[int, Field(ge=10)] = 2000
    alpha: Annotated[float, Field(gt=0.0, lt=0.5)] = 0.05
    # Side by side: each message is answered by two arms (a random pair, by weight) and the
    # visitor picks the better answer; the report ranks the arms by Bradley-Terry.
    side_by_side: bool = False
    description: str = ""

    @model_validator(mode="after")
    def _distinct_arms(self) -> LiveExperiment:
        names = [arm.name for arm in self.arms]
        if len(set(names)) != len(names):
            raise ValueError("two arms have the same name")
        return self

    def arm(self, name: str) -> Arm | None:
        return next((arm for arm in self.arms if arm.name == name), None)

    def pick(self, visitor: str) -> Arm:
        """The arm a visitor's hash falls in, by weight: the same on every replica."""
        digest = hashlib.sha256(f"{self.name}:{visitor}".encode()).digest()
        point = int.from_bytes(digest[:8], "big") / 2**64 * sum(a.weight for a in self.arms)
        for arm in self.arms:
            point -= arm.weight
            if point < 0:
                return arm
        return self.arms[-1]

    def pair(self, rng: random.Random) -> tuple[Arm, Arm]:
        """Two different arms drawn by weight, in a random order (which is shown first)."""
        first = rng.choices(self.arms, [a.weight for a in self.arms])[0]
        rest = [a for a in self.arms if a is not first]
        second = rng.choices(rest, [a.weight for a in rest])[0]
        return (first, second) if rng.random() < 0.5 else (second, first)


def parse_experiment(text: str, where: str = "experiment") -> LiveExperiment:
    """The experiment a YAML text defines, or LiveError in one line."""
    try:
        data = yaml.safe_load(text)
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        at = f" at line {mark.line + 1}" if mark else ""
        problem = " ".join(str(getattr(exc, "problem", None) or "").split())
        raise LiveError(f"{where}: not valid YAML{at}: {problem}".rstrip(": ")) from None
    if not isinstance(data, dict):
        raise LiveError(f"{where}: the file must hold a mapping (name:, arms:)")
    experiment = validate_file(LiveExperiment, data, Path(where), LiveError)
    _check_arms(experiment, where)
    return experiment


def load_experiment(path: Path) -> LiveExperiment:
    try:
        text = Path(path).read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise LiveError(f"{path}: cannot read the file ({getattr(exc, 'strerror', None) or exc})"
                        ) from None
    return parse_experiment(text, str(path))


def _check_arms(experiment: LiveExperiment, where: str) -> None:
    """Personas, strategies and model specs must be ones this TreadWise has."""
    from treadwise.agent.strategies import strategy_names
    from treadwise.models import parse_spec
    from treadwise.personas import load_personas

    personas, strategies = load_personas(), strategy_names()
    for arm in experiment.arms:
        if arm.persona not in personas:
            raise LiveError(f"{where}: arm {arm.name}: no persona {arm.persona!r} (there are "
                            f"{', '.join(personas)})")
        if arm.strategy not in strategies:
            raise LiveError(f"{where}: arm {arm.name}: no strategy {arm.strategy!r} (there are "
                            f"{', '.join(strategies)})")
        try:
            parse_spec(arm.model)
        except ValueError as exc:
            raise LiveError(f"{where}: arm {arm.name}: {exc}") from None
    if experiment.side_by_side:
        _check_pairs(experiment, where)


def _check_pairs(experiment: LiveExperiment, where: str) -> None:
    """Side by side pairs different assistants: two identical arms would be a coin toss."""
    seen: dict[tuple, str] = {}
    for arm in experiment.arms:
        same = seen.setdefault((arm.persona, arm.model, arm.temperature, arm.strategy), arm.name)
        if same != arm.name:
            raise LiveError(f"{where}: side_by_side: arms {same} and {arm.name} are the same "
                            "assistant (persona, model, temperature, strategy); side by side "
                            "needs arms that differ")


def from_stored(definition: dict[str, Any]) -> LiveExperiment:
    """An experiment as the store keeps it (checked when it was created)."""
    return LiveExperiment.model_validate(definition)
