"""Scenario files: scripted conversations (one or more user turns) with deterministic checks."""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from experiments.checks import CheckError, check_ids, validate
from treadwise.datafiles import read_yaml_mapping

DEFAULT_SCENARIOS = Path(__file__).resolve().parent / "scenarios" / "default.yaml"
ID_RE = re.compile(r"[a-z0-9][a-z0-9_\-]{0,63}")
SCENARIO_FIELDS = {"id", "category", "description", "turns", "checks", "calls"}


class ScenarioError(ValueError):
    """A scenario file cannot be used; the message names the file and the field."""


@dataclass(frozen=True)
class Scenario:
    id: str
    category: str
    turns: tuple[str, ...]
    checks: tuple[dict[str, Any], ...]
    description: str = ""
    calls: int | None = None

    @property
    def expected_calls(self) -> int:
        """Model calls this scenario usually takes: given, or a tool call plus an answer a turn."""
        return self.calls or 2 * len(self.turns)

    @property
    def check_ids(self) -> list[str]:
        return check_ids([{"kind": "no_error"}, *self.checks])


def _scenario(raw: Any, where: str) -> Scenario:
    if not isinstance(raw, dict):
        raise ScenarioError(f"{where}: each scenario is a mapping with id, category, turns, checks")
    unknown = sorted(set(raw) - SCENARIO_FIELDS)
    if unknown:
        raise ScenarioError(f"{where}: unknown field(s) {', '.join(unknown)}; allowed: "
                            f"{', '.join(sorted(SCENARIO_FIELDS))}")
    sid = str(raw.get("id", ""))
    if not ID_RE.fullmatch(sid):
        raise ScenarioError(f"{where}: id {sid!r} must be lower-case letters, digits, _ or -")
    where = f"{where} ({sid})"
    category = str(raw.get("category") or "").strip()
    if not category:
        raise ScenarioError(f"{where}: category is required")
    turns = raw.get("turns")
    if isinstance(turns, str):
        turns = [turns]
    if not turns or not all(isinstance(t, str) and t.strip() for t in turns):
        raise ScenarioError(f"{where}: turns must be a non-empty list of user messages")
    checks = raw.get("checks") or []
    if not isinstance(checks, list):
        raise ScenarioError(f"{where}: checks must be a list")
    try:
        parsed = tuple(validate(c, f"{where}: checks[{i}]") for i, c in enumerate(checks))
    except CheckError as exc:
        raise ScenarioError(str(exc)) from None
    calls = raw.get("calls")
    if calls is not None and (not isinstance(calls, int) or calls < 1):
        raise ScenarioError(f"{where}: calls must be a positive whole number")
    return Scenario(sid, category, tuple(t.strip() for t in turns), parsed,
                    str(raw.get("description") or "").strip(), calls)


def load_scenarios(path: Path = DEFAULT_SCENARIOS) -> list[Scenario]:
    """Every scenario of a file, validated; ScenarioError names the file and the field."""
    path = Path(path)
    data = read_yaml_mapping(path, ScenarioError, "scenario file")
    if not isinstance(data.get("scenarios"), list):
        raise ScenarioError(f"{path}: expected a top-level 'scenarios:' list")
    unknown = sorted(set(data) - {"scenarios", "description"})
    if unknown:
        raise ScenarioError(f"{path}: unknown field(s) {', '.join(unknown)}")
    scenarios = [_scenario(raw, f"{path}: scenarios[{i}]")
                 for i, raw in enumerate(data["scenarios"])]
    seen: set[str] = set()
    for scenario in scenarios:
        if scenario.id in seen:
            raise ScenarioError(f"{path}: scenario id {scenario.id!r} appears twice")
        seen.add(scenario.id)
    if not scenarios:
        raise ScenarioError(f"{path}: no scenarios")
    return scenarios


def select(scenarios: Sequence[Scenario], categories: Sequence[str] = (),
           ids: Sequence[str] = ()) -> list[Scenario]:
    """The scenarios in these categories and/or with these ids (all when both are empty)."""
    return [s for s in scenarios
            if (not categories or s.category in categories) and (not ids or s.id in ids)]
