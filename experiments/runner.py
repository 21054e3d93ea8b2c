"""The sweep: plan a grid's cases, run them on a thread pool within budget, keep each record."""

from __future__ import annotations

import inspect
import os
import shutil
import sys
import time
from collections import Counter
from collections.abc import Callable, Iterator
from concurrent.futures import FIRST_COMPLETED, Future, ThreadPoolExecutor, wait
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from experiments.cache import ResponseCache, cache_path
from experiments.cases import (
    CaseRunner,
    ModelPool,
    RunContext,
    load_toolsets,
    sweep_settings,
    tool_context,
)
from experiments.grading import Judge
from experiments.grid import DEFAULT_GRID, Case, Grid, load_grid
from experiments.prices import DEFAULT_PRICES, Prices, load_prices
from experiments.progress import Progress, TerminalBar
from experiments.results import RESULTS_FILE, repair
from experiments.runs import (
    RunBusy,
    git_commit,
    locked,
    new_run_id,
    read_meta,
    update_meta,
    write_meta,
)
from experiments.schema import DEFAULT_STRATEGY
from experiments.sink import CaseQueue, CaseSource, ResultsSink, RunFolder
from treadwise.settings import Settings

__all__ = ["Progress", "SweepError", "plan_sweep", "run_sweep"]

GRID_COPY, SCENARIOS_COPY, PRICES_COPY = "grid.yaml", "scenarios.yaml", "prices.yaml"
CASES_DIR = "cases"


class SweepError(ValueError):
    """A sweep cannot start (a bad resume folder, a provider missing under --strict)."""


@dataclass
class Budget:
    """Spending so far against the grid's limits; new cases start only while within them."""

    max_calls: int | None = None
    max_cost_usd: float | None = None
    calls: int = 0
    cost_usd: float = 0.0

    def add(self, row: dict[str, Any]) -> None:
        cached = int(float(row.get("cache_hits") or 0))
        self.calls += max(0, int(float(row.get("model_calls") or 0)) - cached)
        cost = row.get("cost_usd")
        if cost not in (None, ""):
            self.cost_usd += float(cost)

    def exceeded(self) -> str | None:
        if self.max_calls is not None and self.calls >= self.max_calls:
            return f"max_calls {self.max_calls} reached ({self.calls} model calls made)"
        if self.max_cost_usd is not None and self.cost_usd >= self.max_cost_usd:
            return (f"max_cost_usd {self.max_cost_usd:g} reached (estimated "
                    f"${self.cost_usd:.4f} spent)")
        return None


def strategies_supported() -> bool:
    """Whether this TreadWise's agent takes a reasoning strategy (it arrives with issue 14)."""
    from treadwise.agent import Agent

    return "strategy" in inspect.signature(Agent.run).parameters or "strategy" in \
        inspect.signature(Agent.stream).parameters


@dataclass
class SweepPlan:
    """What a sweep will do: its cases, those still to run, and what it runs them with."""

    grid: Grid
    run_dir: Path
    cases: list[Case]
    todo: list[Case]
    settings: Settings
    models: ModelPool
    skipped: dict[str, str]
    tools: list
    missing_toolsets: dict[str, str]
    prices: Prices
    finished: dict[str, str] = field(default_factory=dict)
    judge: Judge | None = None

    def calls_estimate(self) -> int:
        return sum(case.scenario.expected_calls for case in self.todo)

    def cost_estimate(self) -> tuple[float, list[str]]:
        """Estimated USD of the cases still to run, and the models with no price."""
        calls = Counter()
        for case in self.todo:
            calls[case.cell.model] += case.scenario.expected_calls
        total, unknown = 0.0, []
        for spec, n in calls.items():
            cost = self.prices.estimate(spec, n)
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
        yield f"  model calls (estimate): {self.calls_estimate()}, cost (estimate): {priced}"
        limits = [f"max_calls {grid.max_calls}" if grid.max_calls else "",
                  f"max_cost_usd {grid.max_cost_usd:g}" if grid.max_cost_usd is not None else ""]
        if any(limits):
            yield f"  budget: {', '.join(x for x in limits if x)}"
        yield (f"  concurrency {grid.concurrency}, timeout {grid.timeout_s:g} s per call"
               + "".join(f", {p} limited to {r:g} req/s" for p, r in grid.rate_limits.items()))
        if self.judge is not None:
            yield f"  judge: {self.judge.spec} scores each case against its persona's rubric"
        if self.models.cache is not None:
            yield f"  response cache: {self.models.cache.store.path}"
        for spec, reason in self.skipped.items():
            yield f"  skipped {spec}: {reason}"
        for name, reason in self.missing_toolsets.items():
            yield f"  toolset {name} unavailable ({reason}); its scenarios will fail"


def _resume_grid(run_dir: Path) -> Grid:
    if not (run_dir / GRID_COPY).exists():
        raise SweepError(f"{run_dir}: not a run folder to resume (no {GRID_COPY})")
    prices = run_dir / PRICES_COPY
    return load_grid(run_dir / GRID_COPY, scenarios_file=run_dir / SCENARIOS_COPY,
                     prices_file=prices if prices.exists() else None)


def _new_run_dir(grid: Grid, out_dir: Path) -> Path:
    run_dir = Path(out_dir) / new_run_id(grid.name)
    run_dir.mkdir(parents=True)
    shutil.copyfile(grid.path, run_dir / GRID_COPY)
    shutil.copyfile(grid.scenarios_file, run_dir / SCENARIOS_COPY)
    shutil.copyfile(grid.prices_file or DEFAULT_PRICES, run_dir / PRICES_COPY)
    return run_dir


def _to_run(cases: list[Case], finished: dict[str, str], retry_errors: bool) -> list[Case]:
    if retry_errors:
        return [c for c in cases if finished.get(c.key) == "error"]
    return [c for c in cases if c.key not in finished]


def _judge(grid: Grid, models: ModelPool, skipped: dict[str, str],
           run_dir: Path) -> Judge | None:
    from treadwise.errors import ModelConfigError

    if not grid.judge:
        return None
    try:
        model = models.build(grid.judge, 0.0)
    except ModelConfigError as exc:
        skipped[f"judge {grid.judge}"] = str(exc)
        return None
    # The judge's answers are always cached: grading the same answer twice costs nothing.
    cache = models.cache or ResponseCache(cache_path(run_dir.parent))
    return Judge(grid.judge, model.model_copy(update={"cache": cache.scoped(
        f"judge|{grid.judge}")}))


def plan_sweep(grid: Grid, run_dir: Path, *, limit: int | None = None,
               retry_errors: bool = False, cache: Path | None = None,
               sink: ResultsSink | None = None) -> SweepPlan:
    """Expand the grid, build its models and tools once, and drop the cases that cannot run
    here (a missing key or package, a strategy this agent lacks) or are already done."""
    scenarios = grid.scenarios()
    prices = load_prices(grid.prices_file)
    settings = sweep_settings(grid, run_dir / CASES_DIR)
    models = ModelPool(grid, settings, ResponseCache(cache) if cache else None)
    skipped = models.prepare(grid.models, grid.temperatures)
    judge = _judge(grid, models, skipped, run_dir)
    if not strategies_supported():
        for strategy in set(grid.strategies) - {DEFAULT_STRATEGY}:
            skipped[f"strategy {strategy}"] = "this TreadWise's agent has no reasoning " \
                                              "strategies yet (only react)"
    tools, missing = load_toolsets(tool_context(run_dir / CASES_DIR))
    cases = [c for c in grid.cases(scenarios) if c.cell.model not in skipped
             and f"strategy {c.cell.strategy}" not in skipped]
    finished = (sink or RunFolder(run_dir)).finished()
    todo = _to_run(cases, finished, retry_errors)
    if limit is not None:
        todo = todo[:max(0, limit)]
    return SweepPlan(grid, run_dir, cases, todo, settings, models, skipped, tools, missing,
                     prices, finished, judge)


def _echo_stderr(line: str) -> None:
    print(line, file=sys.stderr, flush=True)


def run_sweep(grid_path: Path | None = None, *, out_dir: Path = Path("results"),
              resume: Path | None = None, strict: bool = False,
              progress: Callable[[Progress], None] | None = None, limit: int | None = None,
              report: bool = True, echo: Callable[[str], None] | None = None,
              retry_errors: bool = False, cache: bool | Path = False) -> Path:
    """Run (or resume) a sweep and return its run folder.

    Rows are appended to RUN/results.csv and transcripts to RUN/transcripts.jsonl as cases
    finish; at the end the report is written (RUN/report.md, summary.csv, charts/).
    `progress` receives a Progress after every case (a tqdm bar on stderr when not given);
    `echo` receives the plan lines (stderr by default). `retry_errors` (with `resume`) runs
    again only the cases whose latest row is an error. `cache` (True, or the SQLite file to
    use) answers identical model requests from the response cache.
    """
    echo = echo or _echo_stderr
    if retry_errors and resume is None:
        raise SweepError("--retry-errors re-runs the errored cases of a run: give it --resume "
                         "RUN_DIR")
    if resume is not None:
        run_dir = Path(resume)
        grid = _resume_grid(run_dir)
    else:
        grid = load_grid(Path(grid_path or DEFAULT_GRID))
        grid.scenarios()
        load_prices(grid.prices_file)
        run_dir = _new_run_dir(grid, out_dir)
    cache_file = (cache if isinstance(cache, Path) else cache_path(run_dir.parent)) \
        if cache else None
    try:
        with locked(run_dir):
            _sweep(grid, run_dir, resume=resume is not None, strict=strict, progress=progress,
                   echo=echo, plan_options={"limit": limit, "retry_errors": retry_errors,
                                            "cache": cache_file})
    except RunBusy as exc:
        raise SweepError(str(exc)) from None
    if report:
        from experiments.report import write_report

        path = write_report(run_dir)
        echo(f"report: {path}")
    return run_dir


def _sweep(grid: Grid, run_dir: Path, *, resume: bool, strict: bool,
           progress: Callable[[Progress], None] | None, echo: Callable[[str], None],
           plan_options: dict[str, Any]) -> None:
    repair(run_dir / RESULTS_FILE)
    plan = plan_sweep(grid, run_dir, **plan_options)
    if strict and plan.skipped:
        reasons = "; ".join(f"{s}: {r}" for s, r in plan.skipped.items())
        if not resume and not plan.finished:
            shutil.rmtree(run_dir, ignore_errors=True)
        raise SweepError(f"cannot run every model (--strict): {reasons}")
    for line in plan.lines():
        echo(line)
    bar = TerminalBar() if progress is None else None
    try:
        stop = _run(plan, progress or bar)
    finally:
        if bar is not None:
            bar.close()
        if plan.models.cache is not None:
            plan.models.cache.close()
    if stop:
        echo(f"stopped launching new cases: {stop}")


def _start_meta(plan: SweepPlan) -> dict[str, Any]:
    import treadwise

    grid, now = plan.grid, datetime.now(UTC).isoformat(timespec="seconds")
    meta = read_meta(plan.run_dir)
    cost, unknown = plan.cost_estimate()
    attempts = [*meta.get("attempts", []), {
        "started": now, "cases": len(plan.todo), "estimated_calls": plan.calls_estimate(),
        "estimated_cost_usd": round(cost, 4), "unpriced_models": unknown}]
    return {
        "run_id": plan.run_dir.name, "created": meta.get("created", now), "status": "running",
        "pid": os.getpid(), "grid_name": grid.name, "grid_file": str(grid.path),
        "description": grid.description, "cells": len({c.cell for c in plan.cases}),
        "cases": len(plan.cases), "skipped_models": plan.skipped,
        "missing_toolsets": plan.missing_toolsets, "judge": grid.judge,
        "budget": {"max_calls": grid.max_calls, "max_cost_usd": grid.max_cost_usd},
        "budget_stop": None, "package_version": treadwise.__version__,
        "git_commit": meta.get("git_commit") or git_commit(), "attempts": attempts,
    }


def _run(plan: SweepPlan, progress: Callable[[Progress], None]) -> str | None:
    """Run the plan's cases; return why new cases stopped being launched, if a budget did."""
    import treadwise

    meta = _start_meta(plan)
    write_meta(plan.run_dir, meta)
    runner = CaseRunner(RunContext(
        run_id=plan.run_dir.name, grid=plan.grid, cases_dir=plan.run_dir / CASES_DIR,
        settings=plan.settings, models=plan.models, prices=plan.prices, tools=plan.tools,
        package_version=treadwise.__version__, git_commit=meta["git_commit"],
        judge=plan.judge))
    tally = _Tally(Budget(plan.grid.max_calls, plan.grid.max_cost_usd), progress)
    tally.start(plan)
    started, status = time.perf_counter(), "interrupted"
    launched, stop = 0, None
    pool = ThreadPoolExecutor(max_workers=plan.grid.concurrency, thread_name_prefix="case")
    try:
        with RunFolder(plan.run_dir) as sink:
            launched, stop = _drive(pool, runner, CaseQueue(plan.todo), sink, tally,
                                    plan.grid.concurrency)
        status = "stopped_by_budget" if stop else "finished"
    finally:
        pool.shutdown(wait=status != "interrupted", cancel_futures=True)
        update_meta(plan.run_dir, status=status, finished=datetime.now(UTC).isoformat(
            timespec="seconds"), duration_s=round(time.perf_counter() - started, 2),
            budget_stop={"reason": stop, "not_launched": len(plan.todo) - launched}
            if status == "stopped_by_budget" else None,
            spent={"model_calls": tally.budget.calls,
                   "cost_usd": round(tally.budget.cost_usd, 6)})
    return stop


@dataclass
class _Tally:
    """Counts finished cases by status for the progress callback and the budget."""

    budget: Budget
    progress: Callable[[Progress], None]
    total: int = 0
    counts: Counter = field(default_factory=Counter)

    def start(self, plan: SweepPlan) -> None:
        """Count what an earlier attempt finished (retried errors count once, when redone)."""
        kept = {k: s for k, s in plan.finished.items() if k not in {c.key for c in plan.todo}}
        self.counts.update(kept.values())
        self.total = len(kept) + len(plan.todo)
        self.report("starting")

    def add(self, row: dict[str, Any]) -> None:
        self.budget.add(row)
        self.counts[row["status"]] += 1
        self.report(f"{row['scenario']} ({row['persona']}, T={float(row['temperature']):g})")

    def report(self, label: str) -> None:
        counts = self.counts
        self.progress(Progress(sum(counts.values()), self.total, counts["ok"], counts["failed"],
                               label, counts["error"]))


def _drive(pool: ThreadPoolExecutor, runner: CaseRunner, source: CaseSource,
           sink: ResultsSink, tally: _Tally, concurrency: int) -> tuple[int, str | None]:
    """Keep `concurrency` cases in flight until done or over budget; keep each record as it
    finishes. Returns (cases launched, budget stop reason or None)."""
    pending: set[Future] = set()
    launched, stop = 0, None
    while True:
        while len(pending) < concurrency and stop is None:
            if (stop := tally.budget.exceeded()) is not None:
                break
            case = source.claim()
            if case is None:
                break
            pending.add(pool.submit(runner.run, case))
            launched += 1
        if not pending:
            return launched, stop
        finished, pending = wait(pending, return_when=FIRST_COMPLETED)
        for future in finished:
            record = future.result()
            sink.write(record)
            tally.add(record.row)
