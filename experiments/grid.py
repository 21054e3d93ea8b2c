"""Grid files: the factors of a sweep, validated, and their expansion into cells and cases."""

from __future__ import annotations

import hashlib
import json
import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from functools import cached_property
from itertools import product
from pathlib import Path
from typing import Any

from experiments.scenarios import DEFAULT_SCENARIOS, Scenario, ScenarioError, load_scenarios
from treadwise.datafiles import read_yaml_mapping

GRIDS_DIR = Path(__file__).resolve().parent / "grids"
DEFAULT_GRID = GRIDS_DIR / "default.yaml"
FIELDS = {
    "name", "description", "personas", "models", "temperatures", "variations", "exclude",
    "repeats", "concurrency", "timeout_s", "max_retries", "max_retry_wait_s", "budget",
    "scenarios", "rate_limits", "prices", "keep_cases",
}
VARIATION_FIELDS = {"system_suffix", "max_tokens"}
BUDGET_FIELDS = {"max_calls", "max_cost_usd"}
SCENARIO_FIELDS = {"file", "categories", "ids"}
FACTORS = ("persona", "model", "temperature", "variation")
EXCLUDE_FIELDS = {*FACTORS, "scenario", "category"}
KEEP_CASES = ("failed", "all", "none")
BASELINE = "baseline"


class GridError(ValueError):
    """A grid file cannot be used; the message names the file and the field."""


@dataclass(frozen=True)
class Variation:
    """A named set of overrides applied on top of a configuration."""

    name: str = BASELINE
    system_suffix: str = ""
    max_tokens: int | None = None

    def overrides(self) -> dict[str, Any]:
        found = {"system_suffix": self.system_suffix, "max_tokens": self.max_tokens}
        return {k: v for k, v in found.items() if v}


@dataclass(frozen=True)
class Cell:
    """One configuration: persona x model x temperature x variation."""

    persona: str
    model: str
    temperature: float
    variation: Variation = field(default_factory=Variation)

    @cached_property
    def config_hash(self) -> str:
        config = {"persona": self.persona, "model": self.model,
                  "temperature": round(self.temperature, 3),
                  "variation": {"name": self.variation.name, **self.variation.overrides()}}
        text = json.dumps(config, sort_keys=True)
        return hashlib.sha256(text.encode()).hexdigest()[:10]

    @property
    def provider(self) -> str:
        from treadwise.models import parse_spec

        return parse_spec(self.model)[0]

    @property
    def model_name(self) -> str:
        from treadwise.models import parse_spec

        return parse_spec(self.model)[1]

    def factors(self) -> dict[str, Any]:
        return {"persona": self.persona, "model": self.model, "temperature": self.temperature,
                "variation": self.variation.name}


@dataclass(frozen=True)
class Case:
    """One run of a scenario under a cell; its key is stable across runs and resumes."""

    cell: Cell
    scenario: Scenario
    repeat: int

    @property
    def key(self) -> str:
        return f"{self.cell.config_hash}-{self.scenario.id}-r{self.repeat}"

    @property
    def seed(self) -> int:
        return int(hashlib.sha256(self.key.encode()).hexdigest()[:8], 16)

    @property
    def thread_id(self) -> str:
        return f"exp-{self.key}"


@dataclass(frozen=True)
class Grid:
    path: Path
    name: str
    personas: tuple[str, ...]
    models: tuple[str, ...]
    temperatures: tuple[float, ...]
    variations: tuple[Variation, ...] = (Variation(),)
    exclude: tuple[dict[str, Any], ...] = ()
    repeats: int = 1
    concurrency: int = 4
    timeout_s: float = 60.0
    max_retries: int | None = None
    max_retry_wait_s: float | None = None
    max_calls: int | None = None
    max_cost_usd: float | None = None
    scenarios_file: Path = DEFAULT_SCENARIOS
    categories: tuple[str, ...] = ()
    scenario_ids: tuple[str, ...] = ()
    rate_limits: dict[str, float] = field(default_factory=dict)
    prices_file: Path | None = None
    keep_cases: str = "failed"
    description: str = ""

    def cells(self) -> list[Cell]:
        """Every configuration the factors span, minus the excluded ones, in a stable order."""
        cells = [Cell(p, m, t, v) for m, p, t, v in product(
            self.models, self.personas, self.temperatures, self.variations)]
        return [c for c in cells if not any(_matches(rule, c, None) for rule in self.exclude)]

    def scenarios(self) -> list[Scenario]:
        from experiments.scenarios import select

        try:
            every = load_scenarios(self.scenarios_file)
        except ScenarioError as exc:
            raise GridError(f"{self.path}: scenarios: {exc}") from None
        categories = {s.category for s in every}
        for wanted in self.categories:
            if wanted not in categories:
                raise GridError(f"{self.path}: scenarios.categories: unknown category {wanted!r};"
                                f" {self.scenarios_file.name} has {', '.join(sorted(categories))}")
        ids = {s.id for s in every}
        for wanted in self.scenario_ids:
            if wanted not in ids:
                raise GridError(f"{self.path}: scenarios.ids: unknown scenario {wanted!r}")
        chosen = select(every, self.categories, self.scenario_ids)
        if not chosen:
            raise GridError(f"{self.path}: scenarios: the filter selects no scenario")
        return chosen

    def cases(self, scenarios: list[Scenario] | None = None) -> list[Case]:
        """Every case: cells x scenarios x repeats, in an order that mixes configurations."""
        scenarios = self.scenarios() if scenarios is None else scenarios
        cells = self.cells()
        return [Case(cell, scenario, repeat)
                for repeat in range(1, self.repeats + 1)
                for scenario in scenarios
                for cell in cells
                if not any(_matches(rule, cell, scenario) for rule in self.exclude)]


def _matches(rule: Mapping[str, Any], cell: Cell, scenario: Scenario | None) -> bool:
    """True when every factor the rule names has the rule's value (scenario keys need one)."""
    values = {**cell.factors(), "scenario": scenario.id if scenario else None,
              "category": scenario.category if scenario else None}
    for key, wanted in rule.items():
        if key in ("scenario", "category") and scenario is None:
            return False
        have = values[key]
        if key == "temperature":
            if not math.isclose(float(have), float(wanted), abs_tol=1e-9):
                return False
        elif str(have) != str(wanted):
            return False
    return True


class _Reader:
    """Validates one grid file's mapping, naming the file and field in every error."""

    def __init__(self, path: Path, data: dict[str, Any]):
        self.path = path
        self.data = data

    def fail(self, where: str, message: str) -> GridError:
        return GridError(f"{self.path}: {where}: {message}" if where else
                         f"{self.path}: {message}")

    def only(self, where: str, keys: Any, allowed: set[str], noun: str = "field(s)") -> None:
        """Refuse keys outside `allowed`, listing the ones that are known."""
        unknown = sorted(set(keys) - allowed)
        if unknown:
            raise self.fail(where, f"unknown {noun} {', '.join(unknown)}; known: "
                            f"{', '.join(sorted(allowed))}")

    def items(self, key: str) -> list[Any]:
        value = self.data.get(key)
        if value is None:
            raise self.fail(key, "is required (a list)")
        if not isinstance(value, list) or not value:
            raise self.fail(key, "must be a non-empty list")
        if len(set(map(str, value))) != len(value):
            raise self.fail(key, "lists the same value twice")
        return value

    def check_number(self, value: Any, where: str, *, low: float, high: float = math.inf,
                     whole: bool = False) -> Any:
        if isinstance(value, bool) or not isinstance(value, int | float) or (
                whole and not isinstance(value, int)):
            raise self.fail(where, f"must be a {'whole ' if whole else ''}number, got {value!r}")
        if not low <= value <= high:
            bound = f"between {low:g} and {high:g}" if high != math.inf else f">= {low:g}"
            raise self.fail(where, f"must be {bound}, got {value!r}")
        return value

    def number(self, key: str, default: Any, *, low: float, high: float = math.inf,
               whole: bool = False, source: Mapping[str, Any] | None = None,
               where: str | None = None) -> Any:
        value = (self.data if source is None else source).get(key, default)
        if value is None:
            return None
        return self.check_number(value, where or key, low=low, high=high, whole=whole)

    def personas(self) -> tuple[str, ...]:
        from treadwise.personas import load_personas

        known = load_personas()
        values = [str(p) for p in self.items("personas")]
        for persona in values:
            if persona not in known:
                raise self.fail("personas", f"unknown persona {persona!r}; known: "
                                f"{', '.join(known)}")
        return tuple(values)

    def models(self) -> tuple[str, ...]:
        from treadwise.errors import ModelConfigError
        from treadwise.models import parse_spec

        values = [str(m).strip() for m in self.items("models")]
        for spec in values:
            try:
                parse_spec(spec)
            except ModelConfigError as exc:
                raise self.fail("models", str(exc)) from None
        return tuple(values)

    def temperatures(self) -> tuple[float, ...]:
        values = self.items("temperatures")
        for i, value in enumerate(values):
            self.check_number(value, f"temperatures[{i}]", low=0.0, high=2.0)
        return tuple(float(t) for t in values)

    def variations(self) -> tuple[Variation, ...]:
        raw = self.data.get("variations")
        if raw is None:
            return (Variation(),)
        if not isinstance(raw, dict) or not raw:
            raise self.fail("variations", "must map variation names to overrides")
        found = []
        for name, overrides in raw.items():
            where = f"variations.{name}"
            overrides = overrides or {}
            if not isinstance(overrides, dict):
                raise self.fail(where, "must be a mapping of overrides (or empty)")
            self.only(where, overrides, VARIATION_FIELDS, "override(s)")
            tokens = self.number("max_tokens", None, low=1, whole=True, source=overrides,
                                 where=f"{where}.max_tokens")
            suffix = overrides.get("system_suffix") or ""
            if not isinstance(suffix, str):
                raise self.fail(f"{where}.system_suffix", "must be text")
            found.append(Variation(str(name), suffix.strip(), tokens))
        return tuple(found)

    def exclude(self, cells_from: dict[str, tuple]) -> tuple[dict[str, Any], ...]:
        rules = self.data.get("exclude") or []
        if not isinstance(rules, list):
            raise self.fail("exclude", "must be a list of partial factor mappings")
        for i, rule in enumerate(rules):
            where = f"exclude[{i}]"
            if not isinstance(rule, dict) or not rule:
                raise self.fail(where, "must be a non-empty mapping like {model: ..., "
                                "temperature: ...}")
            self.only(where, rule, EXCLUDE_FIELDS, "factor(s)")
            for key, levels in cells_from.items():
                if key in rule and not any(str(rule[key]) == str(level) or (
                        key == "temperature" and _close(rule[key], level)) for level in levels):
                    raise self.fail(f"{where}.{key}", f"{rule[key]!r} is not one of the grid's "
                                    f"{key} levels")
        return tuple(dict(r) for r in rules)

    def mapping(self, key: str, allowed: set[str], raw: Any = None) -> dict[str, Any]:
        raw = (self.data.get(key) if raw is None else raw) or {}
        if not isinstance(raw, dict):
            raise self.fail(key, "must be a mapping")
        self.only(key, raw, allowed)
        return raw

    def relative(self, value: Any, where: str) -> Path:
        if not isinstance(value, str) or not value.strip():
            raise self.fail(where, "must be a file path")
        path = Path(value).expanduser()
        return path if path.is_absolute() else (self.path.parent / path).resolve()

    def rate_limits(self) -> dict[str, float]:
        raw = self.data.get("rate_limits") or {}
        if not isinstance(raw, dict):
            raise self.fail("rate_limits", "must map provider names to requests per second")
        return {str(k): float(self.number(k, None, low=0.0, source=raw,
                                          where=f"rate_limits.{k}")) for k in raw}


def _close(a: Any, b: Any) -> bool:
    try:
        return math.isclose(float(a), float(b), abs_tol=1e-9)
    except (TypeError, ValueError):
        return False


def _strings(reader: _Reader, raw: Any, where: str) -> tuple[str, ...]:
    if raw is None:
        return ()
    if isinstance(raw, str):
        raw = [raw]
    if not isinstance(raw, list) or not all(isinstance(x, str) for x in raw):
        raise reader.fail(where, "must be a list of names")
    return tuple(raw)


def load_grid(path: Path, *, scenarios_file: Path | None = None,
              prices_file: Path | None = None) -> Grid:
    """Read and validate a grid file; GridError names the file and the field.

    `scenarios_file` and `prices_file` replace the files the grid names (a resumed run uses the
    copies saved in its folder).
    """
    path = Path(path).resolve()
    data = read_yaml_mapping(path, GridError, "grid file")
    reader = _Reader(path, data)
    reader.only("", data, FIELDS)
    personas, models = reader.personas(), reader.models()
    temperatures, variations = reader.temperatures(), reader.variations()
    levels = {"persona": personas, "model": models, "temperature": temperatures,
              "variation": tuple(v.name for v in variations)}
    budget = reader.mapping("budget", BUDGET_FIELDS)
    raw_scenarios = data.get("scenarios")
    if isinstance(raw_scenarios, str):
        raw_scenarios = {"file": raw_scenarios}
    scenarios = reader.mapping("scenarios", SCENARIO_FIELDS, raw_scenarios)
    keep = str(data.get("keep_cases", "failed"))
    if keep not in KEEP_CASES:
        raise reader.fail("keep_cases", f"must be one of {', '.join(KEEP_CASES)}")
    scenario_path = reader.relative(scenarios["file"], "scenarios.file") if scenarios.get(
        "file") else DEFAULT_SCENARIOS
    prices = reader.relative(data["prices"], "prices") if data.get("prices") else None
    return Grid(
        path=path,
        name=str(data.get("name") or path.stem),
        description=str(data.get("description") or "").strip(),
        personas=personas, models=models, temperatures=temperatures, variations=variations,
        exclude=reader.exclude(levels),
        repeats=reader.number("repeats", 1, low=1, high=1000, whole=True),
        concurrency=reader.number("concurrency", 4, low=1, high=64, whole=True),
        timeout_s=float(reader.number("timeout_s", 60.0, low=0.1, high=3600)),
        max_retries=reader.number("max_retries", None, low=0, high=10, whole=True),
        max_retry_wait_s=reader.number("max_retry_wait_s", None, low=0, high=600),
        max_calls=reader.number("max_calls", None, low=1, whole=True, source=budget,
                                where="budget.max_calls"),
        max_cost_usd=reader.number("max_cost_usd", None, low=0, source=budget,
                                   where="budget.max_cost_usd"),
        scenarios_file=scenarios_file or scenario_path,
        categories=_strings(reader, scenarios.get("categories"), "scenarios.categories"),
        scenario_ids=_strings(reader, scenarios.get("ids"), "scenarios.ids"),
        rate_limits=reader.rate_limits(),
        prices_file=prices_file or prices,
        keep_cases=keep,
    )
