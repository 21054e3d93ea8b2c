"""Grid files: the factors of a sweep, validated, and their expansion into cells and cases."""

from __future__ import annotations

import hashlib
import json
import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from functools import cache, cached_property
from itertools import product
from pathlib import Path
from typing import Any

from experiments.define.scenarios import DEFAULT_SCENARIOS, Scenario, ScenarioError, load_scenarios
from experiments.define.schema import DEFAULT_STRATEGY, GridFile, validate_file
from treadwise.datafiles import read_yaml_mapping

GRIDS_DIR = Path(__file__).resolve().parent.parent / "grids"
DEFAULT_GRID = GRIDS_DIR / "default.yaml"
FACTORS = ("persona", "model", "temperature", "variation", "strategy", "routing", "decoding",
           "model_routing")
EXCLUDE_FIELDS = {*FACTORS, "scenario", "category"}
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
    """One configuration: persona x model x temperature x variation x strategy x routing.

    A local model's decoding and routing are part of its spec (local:smollm2?decoding=free).
    """

    persona: str
    model: str
    temperature: float
    variation: Variation = field(default_factory=Variation)
    strategy: str = DEFAULT_STRATEGY
    routing: str = ""  # the agent's tool routing (on, compact, off); "" = the settings'
    prompt_hash: str = ""  # of the persona's prompt, rubric and profile (define/provenance)

    @cached_property
    def config_hash(self) -> str:
        config: dict[str, Any] = {
            "persona": self.persona, "model": self.model,
            "temperature": round(self.temperature, 3),
            "variation": {"name": self.variation.name, **self.variation.overrides()}}
        # Defaults stay out of the hash, so runs made before a factor existed pair with (and
        # resume as) today's cases of its default level.
        if self.strategy != DEFAULT_STRATEGY:
            config["strategy"] = self.strategy
        if self.routing:
            config["routing"] = self.routing
        if self.prompt_hash:
            config["prompt"] = self.prompt_hash
        text = json.dumps(config, sort_keys=True)
        return hashlib.sha256(text.encode()).hexdigest()[:10]

    @cached_property  # read for every case's row: parsing a spec reads the environment
    def provider(self) -> str:
        from treadwise.models import parse_spec

        return parse_spec(self.model)[0]

    @cached_property
    def model_name(self) -> str:
        from treadwise.models import parse_spec

        return parse_spec(self.model)[1]

    @cached_property
    def model_settings(self) -> dict[str, str]:
        """A local model's decoding and routing; {} for other models."""
        from experiments.define.local_settings import model_settings

        return model_settings(self.model)

    def factors(self) -> dict[str, Any]:
        return {"persona": self.persona, "model": self.model, "temperature": self.temperature,
                "variation": self.variation.name, "strategy": self.strategy,
                "routing": self.routing, "decoding": self.model_settings.get("decoding", ""),
                "model_routing": self.model_settings.get("routing", "")}


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


@cache
def _case_type() -> Any:
    from pydantic import TypeAdapter

    return TypeAdapter(Case)


def case_json(case: Case) -> str:
    """A case as JSON: its cell, its whole scenario and its repeat (what a Dask task carries,
    so a worker runs it without expanding any grid)."""
    return _case_type().dump_json(case).decode()


def case_from_json(text: str | bytes) -> Case:
    """The case `case_json` wrote, validated (pydantic checks every field's type)."""
    return _case_type().validate_json(text)


@dataclass(frozen=True)
class Grid:
    path: Path
    name: str
    personas: tuple[str, ...]
    models: tuple[str, ...]
    temperatures: tuple[float, ...]
    variations: tuple[Variation, ...] = (Variation(),)
    strategies: tuple[str, ...] = (DEFAULT_STRATEGY,)
    routings: tuple[str, ...] = ("",)
    # Levels of local models' own settings (already crossed into `models`), for the plan.
    model_levels: dict[str, tuple[str, ...]] = field(default_factory=dict)
    exclude: tuple[dict[str, Any], ...] = ()
    repeats: int = 1
    concurrency: int = 4
    # Processes sharing the `concurrency` cases in flight (one process is held to about one
    # core by Python's GIL; a big sweep on a multi-core machine wants more).
    workers: int = 1
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
    judge: str | None = None
    # Judge each case this many times (their agreement is reported), at this temperature,
    # with or without the response cache (which gives identical answers one shared score).
    judge_samples: int = 1
    judge_temperature: float = 0.0
    judge_cache: bool = True
    # Call models in streaming mode, so time to first token is the first streamed token (not
    # the whole first reply); costs some CPU per chunk.
    stream: bool = False
    description: str = ""

    @cached_property
    def prompt_hashes(self) -> dict[str, str]:
        """persona -> the hash of its prompt; part of every configuration key."""
        from experiments.define.provenance import persona_prompt_hash

        return {persona: persona_prompt_hash(persona) for persona in self.personas}

    def cells(self) -> list[Cell]:
        """Every configuration the factors span, minus the excluded ones, in a stable order."""
        cells = [Cell(p, m, t, v, s, r, self.prompt_hashes[p]) for m, p, t, v, s, r in product(
            self.models, self.personas, self.temperatures, self.variations, self.strategies,
            self.routings)]
        return [c for c in cells if not any(_matches(rule, c, None) for rule in self.exclude)]

    def scenarios(self) -> list[Scenario]:
        from experiments.define.scenarios import select

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

    def levels(self) -> dict[str, tuple[Any, ...]]:
        """Each factor's levels; routing and local models' settings only when the grid
        lists them."""
        levels = {"persona": self.personas, "model": self.models,
                  "temperature": self.temperatures, "strategy": self.strategies,
                  "variation": tuple(v.name for v in self.variations)}
        if self.routings != ("",):
            levels["routing"] = self.routings
        return {**levels, **{k: v for k, v in self.model_levels.items() if v}}


def _same(key: str, have: Any, wanted: Any) -> bool:
    if key == "temperature":
        try:
            return math.isclose(float(have), float(wanted), abs_tol=1e-9)
        except (TypeError, ValueError):
            return False
    return str(have) == str(wanted)


def _matches(rule: Mapping[str, Any], cell: Cell, scenario: Scenario | None) -> bool:
    """True when every factor the rule names has the rule's value (scenario keys need one)."""
    values = {**cell.factors(), "scenario": scenario.id if scenario else None,
              "category": scenario.category if scenario else None}
    for key, wanted in rule.items():
        if key in ("scenario", "category") and scenario is None:
            return False
        if not _same(key, values[key], wanted):
            return False
    return True


class _Check:
    """What pydantic cannot know: personas and specs that exist, exclusions on real levels."""

    def __init__(self, path: Path):
        self.path = path

    def fail(self, where: str, message: str) -> GridError:
        return GridError(f"{self.path}: {where}: {message}")

    def personas(self, personas: list[str]) -> None:
        from treadwise.personas import load_personas

        known = load_personas()
        for persona in personas:
            if persona not in known:
                raise self.fail("personas", f"unknown persona {persona!r}; known: "
                                f"{', '.join(known)}")

    def models(self, specs: list[str], where: str = "models") -> None:
        from treadwise.errors import ModelConfigError
        from treadwise.models import parse_spec

        for spec in specs:
            try:
                parse_spec(spec)
            except ModelConfigError as exc:
                raise self.fail(where, str(exc)) from None

    def local_settings(self, specs: list[str], data: GridFile) -> tuple[tuple[str, ...],
                                                                        dict[str, tuple]]:
        """The models with each local one crossed with the listed levels of its settings
        (decodings, model_routings), and those levels."""
        from experiments.define.local_settings import GRID_FIELDS, expand
        from treadwise.errors import ModelConfigError

        levels = {key: tuple(getattr(data, name)) for key, name in GRID_FIELDS.items()}
        if any(levels.values()) and not any(s.startswith("local:") for s in specs):
            listed = ", ".join(GRID_FIELDS[k] for k, v in levels.items() if v)
            raise self.fail(listed, "applies to local models (local:...) and the grid lists "
                            "none")
        try:
            return expand(tuple(specs), levels), levels
        except ModelConfigError as exc:
            raise self.fail("models", str(exc)) from None

    def exclude(self, rules: list[dict[str, Any]], levels: dict[str, tuple[Any, ...]]) -> None:
        for i, rule in enumerate(rules):
            where = f"exclude[{i}]"
            if not rule:
                raise self.fail(where, "must name at least one factor, like {model: ..., "
                                "temperature: ...}")
            unknown = sorted(set(rule) - EXCLUDE_FIELDS)
            if unknown:
                raise self.fail(where, f"unknown factor(s) {', '.join(unknown)}; known: "
                                f"{', '.join(sorted(EXCLUDE_FIELDS))}")
            for key, have in levels.items():
                if key in rule and not any(_same(key, level, rule[key]) for level in have):
                    raise self.fail(f"{where}.{key}", f"{rule[key]!r} is not one of the grid's "
                                    f"{key} levels")

    def file(self, value: str | None) -> Path | None:
        if value is None:
            return None
        path = Path(value).expanduser()
        return path if path.is_absolute() else (self.path.parent / path).resolve()


def load_grid(path: Path, *, scenarios_file: Path | None = None,
              prices_file: Path | None = None) -> Grid:
    """Read and validate a grid file; GridError names the file and the field.

    `scenarios_file` and `prices_file` replace the files the grid names (a resumed run uses the
    copies saved in its folder).
    """
    path = Path(path).resolve()
    data = validate_file(GridFile, read_yaml_mapping(path, GridError, "grid file"), path,
                         GridError)
    check = _Check(path)
    check.personas(data.personas)
    check.models(data.models)
    if data.judge:
        check.models([data.judge], "judge")
    variations = tuple(Variation(name, (v.system_suffix if v else "").strip(),
                                 v.max_tokens if v else None)
                       for name, v in (data.variations or {BASELINE: None}).items())
    models, model_levels = check.local_settings([m.strip() for m in data.models], data)
    grid = Grid(
        path=path, name=data.name or path.stem, description=data.description.strip(),
        personas=tuple(data.personas), models=models,
        temperatures=tuple(data.temperatures), variations=variations,
        strategies=tuple(data.strategies), routings=tuple(data.routings) or ("",),
        model_levels=model_levels, exclude=tuple(dict(r) for r in data.exclude),
        repeats=data.repeats, concurrency=data.concurrency, workers=data.workers,
        timeout_s=data.timeout_s,
        max_retries=data.max_retries, max_retry_wait_s=data.max_retry_wait_s,
        max_calls=data.budget.max_calls, max_cost_usd=data.budget.max_cost_usd,
        scenarios_file=scenarios_file or check.file(data.scenarios.file)
        or DEFAULT_SCENARIOS,
        categories=tuple(data.scenarios.categories), scenario_ids=tuple(data.scenarios.ids),
        rate_limits=dict(data.rate_limits),
        prices_file=prices_file or check.file(data.prices),
        keep_cases=data.keep_cases, judge=data.judge, judge_samples=data.judge_samples,
        judge_temperature=data.judge_temperature, judge_cache=data.judge_cache,
        stream=data.stream)
    check.exclude(list(grid.exclude), grid.levels())
    return grid
