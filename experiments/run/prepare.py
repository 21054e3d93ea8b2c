"""What every process that runs cases builds once: models, tools, judge, prices, code version."""

from __future__ import annotations

import inspect
from dataclasses import dataclass
from pathlib import Path

from experiments.define import provenance
from experiments.define.grid import Grid
from experiments.define.prices import Prices, load_prices
from experiments.define.schema import DEFAULT_STRATEGY
from experiments.run.cases import (
    CaseRunner,
    ModelPool,
    RunContext,
    load_toolsets,
    sweep_settings,
    tool_context,
)
from experiments.run.grading import Judge
from experiments.run.response_cache import ResponseCache, cache_path
from experiments.store.run_store import CASES_DIR
from treadwise.settings import Settings

# Where the run/ package has always found it (shared runs read it from here).
git_commit = provenance.git_commit


def strategies_supported() -> bool:
    """Whether this TreadWise's agent takes a reasoning strategy (it arrives with issue 14)."""
    from treadwise.agent import Agent

    return any("strategy" in inspect.signature(method).parameters
               for method in (Agent.run, Agent.stream))


@dataclass
class Prepared:
    settings: Settings
    models: ModelPool
    skipped: dict[str, str]
    tools: list
    missing_toolsets: dict[str, str]
    prices: Prices
    judge: Judge | None

    def runner(self, grid: Grid, run_dir: Path, *, package_version: str,
               git_commit: str) -> CaseRunner:
        return CaseRunner(RunContext(
            run_id=run_dir.name, grid=grid, cases_dir=run_dir / CASES_DIR,
            settings=self.settings, models=self.models, prices=self.prices, tools=self.tools,
            package_version=package_version, git_commit=git_commit, judge=self.judge))

    def close(self) -> None:
        for cache in {id(c): c for c in (self.models.cache, self.judge_cache) if c}.values():
            cache.close()

    @property
    def judge_cache(self) -> ResponseCache | None:
        return self.judge.cache if self.judge else None


def _judge(grid: Grid, models: ModelPool, skipped: dict[str, str], run_dir: Path,
           prices: Prices) -> Judge | None:
    from treadwise.errors import ModelConfigError

    if not grid.judge:
        return None
    try:
        model = models.build(grid.judge, grid.judge_temperature)
    except ModelConfigError as exc:
        skipped[f"judge {grid.judge}"] = str(exc)
        return None
    cache = None
    if grid.judge_cache:
        # Cached unless the grid says not: grading the same answer twice costs nothing (and
        # then identical answers share their scores).
        cache = (models.cache or ResponseCache(cache_path(run_dir.parent))).scoped(
            f"judge|{grid.judge}|{grid.judge_temperature:g}")
    return Judge(grid.judge, model, prices=prices, samples=grid.judge_samples, cache=cache)


def prepare(grid: Grid, run_dir: Path, *, cache: Path | None = None,
            rate_share: float = 1.0) -> Prepared:
    """Build the grid's models and judge (noting those that cannot run here), its tools, its
    prices. `rate_share` is this process's part of each provider's rate limit."""
    settings = sweep_settings(grid, run_dir / CASES_DIR)
    models = ModelPool(grid, settings, ResponseCache(cache) if cache else None,
                       rate_share=rate_share)
    skipped = models.prepare(grid.models, grid.temperatures)
    prices = load_prices(grid.prices_file)
    judge = _judge(grid, models, skipped, run_dir, prices)
    if not strategies_supported():
        for strategy in sorted(set(grid.strategies) - {DEFAULT_STRATEGY}):
            skipped[f"strategy {strategy}"] = ("this TreadWise's agent has no reasoning "
                                               "strategies yet (only react)")
    tools, missing = load_toolsets(tool_context(run_dir / CASES_DIR, settings))
    return Prepared(settings, models, skipped, tools, missing, prices, judge)
