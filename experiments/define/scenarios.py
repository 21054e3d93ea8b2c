"""Scenario files: scripted conversations (one or more user turns) with deterministic checks."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from experiments.define.checks import CheckError, check_ids, validate
from experiments.define.schema import ScenarioFile, validate_file
from treadwise.datafiles import read_yaml_mapping

DEFAULT_SCENARIOS = Path(__file__).resolve().parent.parent / "scenarios" / "default.yaml"


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
    first_tool: str | None = None

    @property
    def expected_calls(self) -> int:
        """Model calls this scenario usually takes: given, or a tool call plus an answer a turn."""
        return self.calls or 2 * len(self.turns)

    @property
    def check_ids(self) -> list[str]:
        return check_ids([{"kind": "no_error"}, *self.checks])

    def _turn(self, spec: dict[str, Any]) -> int:
        turn = spec.get("turn", "all")
        if turn == "last":
            return len(self.turns)
        return 1 if turn == "all" else (turn if turn > 0 else len(self.turns) + 1 + turn)

    def expected_tools(self) -> list[tuple[int, str]]:
        """(turn, tool) the scenario's checks want run, in turn order then as listed."""
        wanted = [(self._turn(c), name) for c in self.checks
                  for name in (c["tools"] if c["kind"] == "tools_called"
                               else [c["tool"]] if c["kind"] == "tool_args" else [])]
        return sorted(dict.fromkeys(wanted), key=lambda item: item[0])

    @property
    def expected_first_tool(self) -> tuple[int, str] | None:
        """(turn, tool): the tool a capable model calls first in that turn (the earliest turn
        whose checks want a tool run; `first_tool` names it when given); None when the
        scenario wants no particular tool."""
        wanted = self.expected_tools()
        if self.first_tool:
            return (wanted[0][0] if wanted else 1), self.first_tool
        return wanted[0] if wanted else None


def load_scenarios(path: Path = DEFAULT_SCENARIOS) -> list[Scenario]:
    """Every scenario of a file, validated; ScenarioError names the file and the field."""
    path = Path(path)
    data = read_yaml_mapping(path, ScenarioError, "scenario file")
    parsed = validate_file(ScenarioFile, data, path, ScenarioError)
    scenarios, seen = [], set()
    for i, entry in enumerate(parsed.scenarios):
        where = f"{path}: scenarios[{i}] ({entry.id})"
        if entry.id in seen:
            raise ScenarioError(f"{where}: scenario id {entry.id!r} appears twice")
        seen.add(entry.id)
        try:
            checks = tuple(validate(c, f"{where}: checks[{j}]")
                           for j, c in enumerate(entry.checks))
        except CheckError as exc:
            raise ScenarioError(str(exc)) from None
        scenarios.append(Scenario(entry.id, entry.category.strip(),
                                  tuple(t.strip() for t in entry.turns), checks,
                                  entry.description.strip(), entry.calls, entry.first_tool))
    return scenarios


def select(scenarios: Sequence[Scenario], categories: Sequence[str] = (),
           ids: Sequence[str] = ()) -> list[Scenario]:
    """The scenarios in these categories and/or with these ids (all when both are empty)."""
    return [s for s in scenarios
            if (not categories or s.category in categories) and (not ids or s.id in ids)]
