"""A sweep's plan: the grid's cases, those already done, those that cannot run where it runs."""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

from experiments.define.grid import Case, Grid, load_grid
from experiments.run.case_limit import LimitTooSmall, trim
from experiments.run.placement import is_local, resource
from experiments.run.prepare import Prepared, prepare
from experiments.store.run_store import (
    GRID_COPY,
    PRICES_COPY,
    SCENARIOS_COPY,
    RunStore,
    RunWriter,
)


class SweepError(ValueError):
    """A sweep cannot start (a bad resume folder, a provider missing under --strict)."""


@dataclass
class SweepPlan:
    """What a sweep will do: its cases, those still to run, and what it runs them with."""

    grid: Grid
    store: RunWriter  # where the run is kept: its folder, or the database
    cases: list[Case]
    todo: list[Case]
    prepared: Prepared
    finished: dict[str, str] = field(default_factory=dict)
    judge_errors: set[str] = field(default_factory=set)  # finished, but the judge failed
    workers: int = 1
    cache: Path | None = None
    retry_errors: bool = False
    limit: int | None = None
    cluster: str = ""  # the scheduler's address, when the cases run on a Dask cluster
    threads: int = 0  # the cluster's worker threads
    limit_note: str = ""  # what the case limit left out ("" when it left out nothing)

    @property
    def run_dir(self) -> Path:
        return self.store.folder

    @property
    def skipped(self) -> dict[str, str]:
        return self.prepared.skipped

    def select(self) -> None:
        """The cases to run now: the grid's, less those of skipped models or strategies and
        those done already (or, retrying errors, only the errored ones), up to the limit in
        whole scenarios (case_limit.py)."""
        scenarios = self.grid.scenarios()
        self.cases = [c for c in self.grid.cases(scenarios) if c.cell.model not in self.skipped
                      and f"strategy {c.cell.strategy}" not in self.skipped]
        if self.retry_errors:
            todo = [c for c in self.cases
                    if self.finished.get(c.key) == "error" or c.key in self.judge_errors]
        else:
            todo = [c for c in self.cases if c.key not in self.finished]
        try:
            trimmed = trim(todo, self.limit)
        except LimitTooSmall as exc:
            raise SweepError(str(exc)) from None
        self.todo, self.limit_note = trimmed.cases, trimmed.note

    def place_local_models(self, offers: dict[str, int]) -> None:
        """On a cluster a local model runs where a worker offers it (a Dask resource named by
        its spec), whether or not this machine could run it."""
        for spec in self.grid.models:
            if not is_local(spec):
                continue
            if offers.get(resource(spec)):
                self.skipped.pop(spec, None)
            else:
                self.skipped[spec] = (f"no worker of the cluster offers it (start one with "
                                      f"dask worker ... --resources {resource(spec)}=1)")
        self.select()

    @property
    def judge_calls(self) -> int:
        """Judge requests per case: one per sample, when the grid has a judge that runs."""
        return self.grid.judge_samples if self.prepared.judge is not None else 0

    def calls_estimate(self) -> int:
        """Model calls of the cases still to run, the judge's included."""
        return sum(case.scenario.expected_calls + self.judge_calls for case in self.todo)

    def cost_estimate(self) -> tuple[float, list[str]]:
        """Estimated USD of the cases still to run (judging included), and the models with
        no price."""
        calls: Counter[str] = Counter()
        for case in self.todo:
            calls[case.cell.model] += case.scenario.expected_calls
            if self.prepared.judge is not None and self.judge_calls:
                calls[self.prepared.judge.spec] += self.judge_calls
        total, unknown = 0.0, []
        for spec, n in calls.items():
            cost = self.prepared.prices.estimate(spec, n)
            if cost is None:
                unknown.append(spec)
            else:
                total += cost
        return total, unknown

    def lines(self) -> Iterator[str]:
        grid, cells = self.grid, {c.cell for c in self.cases}
        levels = grid.levels()
        full = 1
        for values in levels.values():
            full *= len(values)
        yield f"sweep {grid.name} ({grid.path}) -> {self.run_dir}"
        yield (f"  cells: {len(cells)} (" + " x ".join(
            f"{len(v)} {k}{'s' if len(v) != 1 else ''}" for k, v in levels.items())
            + f"; {full - len(grid.cells())} excluded)")
        scenarios = {c.scenario.id for c in self.cases}
        errors = sum(1 for s in self.finished.values() if s == "error")
        yield (f"  cases: {len(self.cases)} ({len(scenarios)} scenarios x {grid.repeats} "
               f"repeats); to run now: {len(self.todo)}, already done: {len(self.finished)}"
               + (f" ({errors} errored)" if errors else ""))
        cost, unknown = self.cost_estimate()
        priced = f"${cost:.2f}" + (f" + unknown for {', '.join(unknown)}" if unknown else "")
        if self.limit_note:
            yield f"  {self.limit_note}"
        yield f"  model calls (estimate): {self.calls_estimate()}, cost (estimate): {priced}"
        limits = [f"max_calls {grid.max_calls}" if grid.max_calls else "",
                  f"max_cost_usd {grid.max_cost_usd:g}" if grid.max_cost_usd is not None else ""]
        if any(limits):
            yield f"  budget: {', '.join(x for x in limits if x)}"
        running = (f"on the Dask cluster at {self.cluster}: {self.workers} worker"
                   f"{'s' if self.workers != 1 else ''}, {self.threads} cases in flight"
                   if self.cluster else f"concurrency {grid.concurrency}")
        yield (f"  {running}, timeout {grid.timeout_s:g} s per "
               "call" + "".join(f", {p} limited to {r:g} req/s"
                                for p, r in grid.rate_limits.items()))
        if (judge := self.prepared.judge) is not None:
            samples = f", {judge.samples} samples a case" if judge.samples > 1 else ""
            cached = "cached" if judge.cache is not None else "not cached"
            yield (f"  judge: {judge.spec} scores each case against its persona's rubric "
                   f"({cached}{samples}; its calls count in the estimate and budget)")
        if self.cache is not None:
            yield f"  response cache: {self.cache}"
        for spec, reason in self.skipped.items():
            yield f"  skipped {spec}: {reason}"
        for name, reason in self.prepared.missing_toolsets.items():
            yield f"  toolset {name} unavailable ({reason}); its scenarios will fail"


def saved_grid(run_dir: Path) -> Grid:
    """The grid a run folder keeps (with its own copies of the scenarios and prices)."""
    if not (run_dir / GRID_COPY).exists():
        raise SweepError(f"{run_dir}: not a run folder to resume (no {GRID_COPY})")
    prices = run_dir / PRICES_COPY
    return load_grid(run_dir / GRID_COPY, scenarios_file=run_dir / SCENARIOS_COPY,
                     prices_file=prices if prices.exists() else None)


def plan_sweep(grid: Grid, store: RunWriter, *, limit: int | None = None,
               retry_errors: bool = False, cache: Path | None = None,
               workers: int = 1) -> SweepPlan:
    """Expand the grid, build its models and tools once, and drop the cases that cannot run
    here (a missing key or package, a strategy this agent lacks) or are already done."""
    prepared = prepare(grid, store.folder, cache=cache, rate_share=1 / workers)
    # A judge error is re-done by running its case again.
    judged_again = store.judge_errors() if retry_errors and isinstance(store, RunStore) \
        else set()
    plan = SweepPlan(grid, store, [], [], prepared, store.finished(), judged_again, workers,
                     cache, retry_errors, limit)
    plan.select()
    return plan
