"""The sweep: plan a grid's cases, run them on threads or a Dask cluster within budget, and
keep each record as it comes back."""

from __future__ import annotations

import os
import queue
import shutil
import sys
import time
from collections.abc import Callable, Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from experiments.define.grid import DEFAULT_GRID, Case, Grid, load_grid
from experiments.define.prices import load_prices
from experiments.run.budget import Budget
from experiments.run.lanes import GONE, LOST, LaneGone, LocalLane
from experiments.run.placement import is_local
from experiments.run.plan import SweepError, SweepPlan, plan_sweep, saved_grid
from experiments.run.prepare import CASES_DIR, strategies_supported
from experiments.run.progress import Progress, Tally, TerminalBar
from experiments.run.response_cache import cache_path
from experiments.run.run_meta import ResumeRefused, check_resume, copy_personas, spent, start_meta
from experiments.store.catalog import new_run, open_run
from experiments.store.folder import RunBusy
from experiments.store.record import CaseRecord
from experiments.store.run_store import RunStore, RunWriter

__all__ = ["CASES_DIR", "Progress", "SweepError", "plan_sweep", "run_sweep",
           "strategies_supported"]
LOCAL_CLUSTER = "local"


def echo_stderr(line: str) -> None:
    print(line, file=sys.stderr, flush=True)


def run_sweep(grid_path: Path | None = None, *, out_dir: Path = Path("results"),
              resume: Path | str | None = None, strict: bool = False,
              progress: Callable[[Progress], None] | None = None, limit: int | None = None,
              report: bool = True, echo: Callable[[str], None] | None = None,
              retry_errors: bool = False, cache: bool | Path = False,
              workers: int | None = None, cluster: str | None = None) -> Path:
    """Run (or resume) a sweep and return its run folder.

    Rows are appended to RUN/results.csv and transcripts to RUN/transcripts.jsonl as cases
    finish (to the database instead when TREADWISE_DATABASE_URL is set); at the end the report
    is written (RUN/report.md, summary.csv, charts/). `progress` receives a Progress after
    every case (a tqdm bar on stderr when not given); `echo` receives the plan lines (stderr by
    default). `retry_errors` (with `resume`) runs again only the cases whose latest row is an
    error. `cache` (True, or the SQLite file to use) answers identical model requests from the
    response cache. `cluster` is a Dask scheduler's address, or "local" for a LocalCluster of
    `workers` processes (default: the grid's; `workers: N` alone starts one too).
    """
    echo = echo or echo_stderr
    if retry_errors and resume is None:
        raise SweepError("--retry-errors re-runs the errored cases of a run: give it --resume "
                         "RUN_DIR")
    run, grid = _open(grid_path, out_dir, resume)
    workers = workers or grid.workers
    try:
        with run.locked():
            sweep(grid, run, resume=resume is not None, strict=strict, progress=progress,
                  echo=echo, cluster=cluster or (LOCAL_CLUSTER if workers > 1 else None),
                  plan_options={"limit": limit, "retry_errors": retry_errors,
                                "cache": cache_file(cache, run.folder), "workers": workers})
    except RunBusy as exc:
        raise SweepError(str(exc)) from None
    if report:
        from experiments.analyse.report import write_report

        echo(f"report: {write_report(run)}")
    return run.folder


def _open(grid_path: Path | None, out_dir: Path, resume: Path | str | None
          ) -> tuple[RunStore, Grid]:
    """The run to resume and its saved grid, or a new run of the grid at `grid_path`."""
    if resume is not None:
        run = open_run(resume, out_dir)
        grid = saved_grid(run.prepare_folder())
        try:
            check_resume(grid, run.meta())
        except ResumeRefused as exc:
            raise SweepError(f"{run.folder}: {exc}") from None
        return run, grid
    grid = load_grid(Path(grid_path or DEFAULT_GRID))
    grid.scenarios()
    load_prices(grid.prices_file)
    run = new_run(grid, out_dir)
    copy_personas(grid, run.folder)
    return run, grid


def cache_file(cache: bool | Path, run_dir: Path) -> Path | None:
    """The response cache a run uses: the file given, the default beside the run, or none."""
    if not cache:
        return None
    return cache if isinstance(cache, Path) else cache_path(run_dir.parent)


def sweep(grid: Grid, store: RunWriter, *, resume: bool, strict: bool = False,
          progress: Callable[[Progress], None] | None = None,
          echo: Callable[[str], None] = echo_stderr, cluster: str | None = None,
          plan_options: dict[str, Any]) -> None:
    """Plan the run `store` keeps and run it (no lock taken, no report written)."""
    plan = _plan(grid, store, resume, plan_options)
    on = None
    try:
        if cluster and plan.todo:
            on = _join_cluster(plan, cluster)
        if strict and plan.skipped:
            reasons = "; ".join(f"{s}: {r}" for s, r in plan.skipped.items())
            if not resume and not plan.finished:
                shutil.rmtree(store.folder, ignore_errors=True)
            raise SweepError(f"cannot run every model (--strict): {reasons}")
        for line in plan.lines():
            echo(line)
        bar: TerminalBar | None = None
        if progress is None:
            progress = bar = TerminalBar()
        try:
            stop = _run(plan, progress, on)
        finally:
            if bar is not None:
                bar.close()
    finally:
        plan.prepared.close()
        if on is not None:
            on.close()
    if stop:
        echo(f"stopped launching new cases: {stop}")


def _plan(grid: Grid, store: RunWriter, resume: bool, options: dict[str, Any]) -> SweepPlan:
    try:
        return plan_sweep(grid, store, **options)
    except SweepError:
        if not resume:  # a new run that cannot start leaves no empty folder behind
            shutil.rmtree(store.folder, ignore_errors=True)
        raise


def _join_cluster(plan: SweepPlan, address: str) -> Any:
    """Connect to (or start) the cluster and place the plan's local models on it."""
    from experiments.run.cluster import connect

    workers = plan.workers if plan.workers > 1 else (os.cpu_count() or 1)
    local = [m for m in plan.grid.models if is_local(m) and m not in plan.skipped]
    on = connect(address, workers=workers, threads=plan.grid.concurrency, local_models=local)
    try:
        plan.cluster, plan.workers, plan.threads = on.address, on.workers(), on.threads()
        plan.place_local_models(on.offers())
    except BaseException:
        on.close()
        raise
    return on


def _start_meta(plan: SweepPlan) -> dict[str, Any]:
    meta = start_meta(plan, plan.judge_errors)
    if plan.cluster:
        meta["attempts"][-1]["cluster"] = plan.cluster
    return meta


def _lane(plan: SweepPlan, runner: Any, on: Any, events: queue.SimpleQueue,
          meta: dict[str, Any]) -> Any:
    if on is None:
        return LocalLane(runner, plan.grid.concurrency, events)
    import treadwise
    from experiments.run.cluster import ClusterLane, run_spec

    spec = run_spec(plan.run_dir, plan.cache, 1 / max(1, plan.workers), treadwise.__version__,
                    meta["git_commit"])
    return ClusterLane(on, spec, events)


def _run(plan: SweepPlan, progress: Callable[[Progress], None], on: Any) -> str | None:
    """Run the plan's cases; return why new cases stopped being launched, if a budget did."""
    import treadwise

    store = plan.store
    meta = _start_meta(plan)
    store.start(meta)
    runner = plan.prepared.runner(plan.grid, plan.run_dir,
                                  package_version=treadwise.__version__,
                                  git_commit=meta["git_commit"])
    tally = Tally(Budget(plan.grid.max_calls, plan.grid.max_cost_usd), progress)
    tally.start(plan)
    started, status = time.perf_counter(), "interrupted"
    launched, stop = 0, None
    events: queue.SimpleQueue = queue.SimpleQueue()
    lane = _lane(plan, runner, on, events, meta)
    try:
        with store as sink:
            launched, stop = _drive(lane, events, iter(plan.todo), sink, tally,
                                    _lost_record(runner, {c.key: c for c in plan.cases}))
        status = "stopped_by_budget" if stop else "finished"
    finally:
        lane.close(wait=status != "interrupted")
        changes = {
            "status": status, "finished": datetime.now(UTC).isoformat(timespec="seconds"),
            "duration_s": round(time.perf_counter() - started, 2),
            "budget_stop": {"reason": stop, "not_launched": len(plan.todo) - launched}
            if status == "stopped_by_budget" else None,
            "spent": spent(tally.budget)}
        if on is not None:
            changes["cluster"] = {"scheduler": on.address, "cases_by_worker": lane.placed}
        store.finish(**changes)
    return stop


def _lost_record(runner: Any, cases: dict[str, Case]) -> Callable[[str, str], CaseRecord]:
    """An error record for a case the harness could not bring back (its workers died)."""
    def record(key: str, why: str) -> CaseRecord:
        return runner.harness_error(cases[key], why)

    return record


def _drive(lane: Any, events: queue.SimpleQueue, cases: Iterator[Case], sink: RunWriter,
           tally: Tally, lost_record: Callable[[str, str], CaseRecord]
           ) -> tuple[int, str | None]:
    """Keep the lane's capacity of cases in flight until done or over budget; keep each record
    as it comes back. Returns (cases launched, budget stop reason or None)."""
    in_flight, launched, stop = 0, 0, None
    while True:
        while stop is None and in_flight < lane.capacity():
            if (stop := tally.budget.exceeded()) is not None:
                break
            case = next(cases, None)
            if case is None:
                break
            lane.submit(case)
            in_flight += 1
            launched += 1
        if in_flight == 0:
            return launched, stop
        lane.flush()  # what was launched goes out (a cluster's lane sends it in batches)
        event = events.get()
        if event.kind == GONE:
            raise LaneGone(event.why)
        records = [lost_record(key, event.why) for key in event.keys] if event.kind == LOST \
            else event.records
        for record in records:
            lane.in_flight -= 1
            in_flight -= 1
            sink.append(record)
            tally.add(record.row)
