"""The sweep: plan a grid's cases, run them on a thread pool within budget, keep each record."""

from __future__ import annotations

import queue
import shutil
import sys
import threading
import time
from collections import Counter
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Protocol

from experiments.define.grid import DEFAULT_GRID, Case, Grid, load_grid
from experiments.define.prices import load_prices
from experiments.run.budget import Budget
from experiments.run.lanes import LOST, READY, Event, WorkerSpec, start_lanes
from experiments.run.prepare import (
    CASES_DIR,
    Prepared,
    prepare,
    strategies_supported,
)
from experiments.run.progress import Progress, Tally, TerminalBar
from experiments.run.response_cache import cache_path
from experiments.run.run_meta import (
    ResumeRefused,
    check_resume,
    copy_personas,
    spent,
    start_meta,
)
from experiments.store.folder import FolderRun, RunBusy
from experiments.store.record import CaseRecord
from experiments.store.run_store import (
    GRID_COPY,
    PRICES_COPY,
    SCENARIOS_COPY,
    RunStore,
    RunWriter,
)

__all__ = ["CASES_DIR", "Progress", "SweepError", "plan_sweep", "run_sweep",
           "strategies_supported"]


class CaseSource(Protocol):
    def claim(self) -> Case | None:
        """The next case for this worker to run (no other worker gets it), or None."""


class CaseQueue:
    """The cases of one process's plan, handed out in order."""

    def __init__(self, cases: Iterable[Case]):
        self._cases = iter(cases)
        self._lock = threading.Lock()

    def claim(self) -> Case | None:
        with self._lock:
            return next(self._cases, None)


class SweepError(ValueError):
    """A sweep cannot start (a bad resume folder, a provider missing under --strict)."""


@dataclass
class SweepPlan:
    """What a sweep will do: its cases, those still to run, and what it runs them with."""

    grid: Grid
    store: RunWriter  # where the run is kept: its folder, or a shared run's database
    cases: list[Case]
    todo: list[Case]
    prepared: Prepared
    finished: dict[str, str] = field(default_factory=dict)
    judge_errors: set[str] = field(default_factory=set)  # finished, but the judge failed
    workers: int = 1
    cache: Path | None = None
    shared: Any = None  # a claims.SharedRun (also the store): cases come from PostgreSQL

    @property
    def run_dir(self) -> Path:
        return self.store.folder

    @property
    def skipped(self) -> dict[str, str]:
        return self.prepared.skipped

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
        calls = Counter()
        for case in self.todo:
            calls[case.cell.model] += case.scenario.expected_calls
            if self.judge_calls:
                calls[self.grid.judge] += self.judge_calls
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
        yield f"  model calls (estimate): {self.calls_estimate()}, cost (estimate): {priced}"
        limits = [f"max_calls {grid.max_calls}" if grid.max_calls else "",
                  f"max_cost_usd {grid.max_cost_usd:g}" if grid.max_cost_usd is not None else ""]
        if any(limits):
            yield f"  budget: {', '.join(x for x in limits if x)}"
        processes = f" over {self.workers} processes" if self.workers > 1 else ""
        yield (f"  concurrency {grid.concurrency}{processes}, timeout {grid.timeout_s:g} s per "
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


def _to_run(cases: list[Case], finished: dict[str, str], retry_errors: bool,
            judge_errors: set[str] | frozenset[str] = frozenset()) -> list[Case]:
    if retry_errors:
        return [c for c in cases if finished.get(c.key) == "error" or c.key in judge_errors]
    return [c for c in cases if c.key not in finished]


def plan_sweep(grid: Grid, store: RunWriter, *, limit: int | None = None,
               retry_errors: bool = False, cache: Path | None = None, workers: int = 1,
               shared: Any = None) -> SweepPlan:
    """Expand the grid, build its models and tools once, and drop the cases that cannot run
    here (a missing key or package, a strategy this agent lacks) or are already done."""
    scenarios = grid.scenarios()
    prepared = prepare(grid, store.folder, cache=cache, rate_share=1 / workers)
    skipped = prepared.skipped
    cases = [c for c in grid.cases(scenarios) if c.cell.model not in skipped
             and f"strategy {c.cell.strategy}" not in skipped]
    finished = store.finished()
    # A judge error is re-done by running its case again (shared runs re-open only errors).
    judged_again = store.judge_errors() if retry_errors and isinstance(store, RunStore) \
        else set()
    todo = _to_run(cases, finished, retry_errors, judged_again)
    if limit is not None:
        todo = todo[:max(0, limit)]
    return SweepPlan(grid, store, cases, todo, prepared, finished, judged_again, workers, cache,
                     shared)


def echo_stderr(line: str) -> None:
    print(line, file=sys.stderr, flush=True)


def run_sweep(grid_path: Path | None = None, *, out_dir: Path = Path("results"),
              resume: Path | None = None, strict: bool = False,
              progress: Callable[[Progress], None] | None = None, limit: int | None = None,
              report: bool = True, echo: Callable[[str], None] | None = None,
              retry_errors: bool = False, cache: bool | Path = False,
              workers: int | None = None) -> Path:
    """Run (or resume) a sweep and return its run folder.

    Rows are appended to RUN/results.csv and transcripts to RUN/transcripts.jsonl as cases
    finish; at the end the report is written (RUN/report.md, summary.csv, charts/).
    `progress` receives a Progress after every case (a tqdm bar on stderr when not given);
    `echo` receives the plan lines (stderr by default). `retry_errors` (with `resume`) runs
    again only the cases whose latest row is an error. `cache` (True, or the SQLite file to
    use) answers identical model requests from the response cache. `workers` (default: the
    grid's) is how many processes share the cases in flight. A run shared through PostgreSQL
    is run by experiments/run/shared.py's `join_sweep` instead.
    """
    echo = echo or echo_stderr
    if retry_errors and resume is None:
        raise SweepError("--retry-errors re-runs the errored cases of a run: give it --resume "
                         "RUN_DIR")
    if resume is not None:
        run = FolderRun(resume)
        grid = saved_grid(run.folder)
        try:
            check_resume(grid, run.meta())
        except ResumeRefused as exc:
            raise SweepError(f"{run.folder}: {exc}") from None
    else:
        grid = load_grid(Path(grid_path or DEFAULT_GRID))
        grid.scenarios()
        load_prices(grid.prices_file)
        run = FolderRun.create(grid, out_dir)
        copy_personas(grid, run.folder)
    try:
        with run.locked():
            sweep(grid, run, resume=resume is not None, strict=strict, progress=progress,
                  echo=echo, plan_options={"limit": limit, "retry_errors": retry_errors,
                                           "cache": cache_file(cache, run.folder),
                                           "workers": workers or grid.workers})
    except RunBusy as exc:
        raise SweepError(str(exc)) from None
    if report:
        from experiments.analyse.report import write_report

        echo(f"report: {write_report(run)}")
    return run.folder


def cache_file(cache: bool | Path, run_dir: Path) -> Path | None:
    """The response cache a run uses: the file given, the default beside the run, or none."""
    if not cache:
        return None
    return cache if isinstance(cache, Path) else cache_path(run_dir.parent)


def sweep(grid: Grid, store: RunWriter, *, resume: bool, strict: bool = False,
          progress: Callable[[Progress], None] | None = None,
          echo: Callable[[str], None] = echo_stderr, plan_options: dict[str, Any]) -> None:
    """Plan the run `store` keeps and run it (no lock taken, no report written)."""
    plan = plan_sweep(grid, store, **plan_options)
    if strict and plan.skipped:
        reasons = "; ".join(f"{s}: {r}" for s, r in plan.skipped.items())
        if not resume and not plan.finished:
            shutil.rmtree(store.folder, ignore_errors=True)
        raise SweepError(f"cannot run every model (--strict): {reasons}")
    for line in plan.lines():
        echo(line)
    bar = TerminalBar() if progress is None else None
    try:
        stop = _run(plan, progress or bar)
    finally:
        if bar is not None:
            bar.close()
        plan.prepared.close()
    if stop:
        echo(f"stopped launching new cases: {stop}")


def _spec(plan: SweepPlan, meta: dict[str, Any]) -> WorkerSpec:
    import treadwise

    folder = plan.run_dir
    prices = folder / PRICES_COPY
    return WorkerSpec(folder, folder / GRID_COPY, folder / SCENARIOS_COPY,
                      prices if prices.exists() else None, plan.cache, 1 / plan.workers,
                      plan.grid.concurrency, treadwise.__version__, meta["git_commit"])


def _run(plan: SweepPlan, progress: Callable[[Progress], None]) -> str | None:
    """Run the plan's cases; return why new cases stopped being launched, if a budget did."""
    import treadwise

    shared, store = plan.shared, plan.store
    meta = start_meta(plan, plan.judge_errors)
    store.start(meta)
    runner = plan.prepared.runner(plan.grid, plan.run_dir,
                                  package_version=treadwise.__version__,
                                  git_commit=meta["git_commit"])
    tally = Tally(Budget(plan.grid.max_calls, plan.grid.max_cost_usd), progress)
    tally.start(plan)
    started, status = time.perf_counter(), "interrupted"
    launched, stop = 0, None
    events: queue.SimpleQueue[Event] = queue.SimpleQueue()
    spec = _spec(plan, meta) if plan.workers > 1 and len(plan.todo) > 1 else None
    lanes = start_lanes(runner, plan.grid.concurrency, spec, plan.workers, events)
    lost = _lost_record(runner, {c.key: c for c in plan.cases})
    try:
        with store as sink:
            source = shared.bind(plan.cases, lost) if shared else CaseQueue(plan.todo)
            launched, stop = _drive(lanes, events, source, sink, tally,
                                    plan.grid.concurrency, lost)
        stop = stop or (shared.stop_reason if shared else None)
        status = "stopped_by_budget" if stop else "finished"
    finally:
        for lane in lanes:
            lane.close(wait=status != "interrupted")
        changes = {
            "status": status, "finished": datetime.now(UTC).isoformat(timespec="seconds"),
            "duration_s": round(time.perf_counter() - started, 2),
            "budget_stop": {"reason": stop, "not_launched": len(plan.todo) - launched}
            if status == "stopped_by_budget" else None,
            "spent": spent(tally.budget)}
        store.finish(**changes)
    return stop


def _lost_record(runner: Any, cases: dict[str, Case]) -> Callable[..., CaseRecord]:
    """An error record for a case a worker process took with it when it died."""
    def record(key: str, why: str = "the worker process running this case died") -> CaseRecord:
        return runner.harness_error(cases[key], why)

    return record


def _drive(lanes: list[Any], events: queue.SimpleQueue, source: CaseSource,
           sink: RunWriter, tally: Tally, concurrency: int,
           lost_record: Callable[[str], CaseRecord]) -> tuple[int, str | None]:
    """Keep `concurrency` cases in flight over the ready lanes until done or over budget; keep
    each record as it finishes. Returns (cases launched, budget stop reason or None)."""
    in_flight, launched, stop = 0, 0, None
    while True:
        while in_flight < concurrency and stop is None:
            if (stop := tally.budget.exceeded()) is not None:
                break
            case = source.claim()
            if case is None:
                break
            # The least busy ready lane; other processes before this one's threads on a tie.
            min((lane for lane in lanes if lane.ready),
                key=lambda lane: lane.in_flight).submit(case)
            in_flight += 1
            launched += 1
        if in_flight == 0:
            return launched, stop
        event = events.get()
        if event.kind == READY:
            event.lane.ready = True
            continue
        records = [event.record] if event.record is not None else []
        if event.kind == LOST:
            event.lane.ready = False
            records = [lost_record(key) for key in event.keys]
        for record in records:
            event.lane.in_flight -= 1
            in_flight -= 1
            sink.append(record)
            tally.add(record.row)
