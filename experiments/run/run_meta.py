"""What meta.json records of a run and each attempt at it: the plan, where the run came from
(code, packages, prompts, files), and what it spent."""

from __future__ import annotations

import os
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from experiments.define import provenance
from experiments.define.grid import Grid
from experiments.define.prices import DEFAULT_PRICES

PERSONAS_COPY = "personas"  # the persona files (voice, rubric) a run was made with


class ResumeRefused(ValueError):
    """A run cannot be resumed as it is: what its cases were made with has changed."""


def sources(grid: Grid) -> dict[str, Any]:
    """Where the run's cases come from: the code (commit, uncommitted changes), package
    versions, each persona's prompt hash (part of its configuration key), the hashes of the
    grid, scenario and price files, and the weights of every local model."""
    files = {"grid": grid.path, "scenarios": grid.scenarios_file,
             "prices": grid.prices_file or DEFAULT_PRICES}
    return {
        "git_dirty": provenance.git_dirty(),
        "packages": provenance.package_versions(),
        "persona_prompts": dict(grid.prompt_hashes),
        "file_sha256": {name: provenance.sha256_file(path) for name, path in files.items()},
        "model_files": provenance.model_files(grid.models),
    }


def check_resume(grid: Grid, meta: dict[str, Any]) -> None:
    """Refuse to resume a run whose personas' prompts changed since it started: its finished
    cases and the ones still to run would not be the same configurations."""
    before = meta.get("persona_prompts") or {}
    changed = [p for p, h in grid.prompt_hashes.items() if p in before and before[p] != h]
    if changed:
        raise ResumeRefused(
            f"the prompt of persona(s) {', '.join(changed)} changed since this run started "
            "(persona file, system prompt or business profile): its cases would not pair with "
            "the finished ones; start a new run instead of resuming")


def copy_personas(grid: Grid, folder: Path) -> None:
    """Copies of the persona files the run used (their voice and rubric), beside the grid,
    redacted like the run's other copies."""
    from treadwise.personas import persona_path
    from treadwise.privacy.redaction import redact

    target = Path(folder) / PERSONAS_COPY
    target.mkdir(exist_ok=True)
    for key in grid.personas:
        text = persona_path(key).read_text(encoding="utf-8")
        (target / f"{key}.yaml").write_text(redact(text), encoding="utf-8")


def retrying(finished: dict[str, str], todo: list[Any], judge_errors: set[str]) -> dict[str, int]:
    """What the cases an attempt runs again had ended as (error, judge_error), so the
    report can say how many errors a run had after --retry-errors replaced them."""
    counts: dict[str, int] = {}
    for case in todo:
        status = finished.get(case.key)
        if case.key in judge_errors and status != "error":
            status = "judge_error"
        if status in ("error", "judge_error"):
            counts[status] = counts.get(status, 0) + 1
    return counts


def start_meta(plan: Any, judge_errors: set[str]) -> dict[str, Any]:
    """meta.json at the start of an attempt."""
    import treadwise

    grid, now = plan.grid, datetime.now(UTC).isoformat(timespec="seconds")
    meta = plan.store.meta()
    cost, unknown = plan.cost_estimate()
    attempts = [*meta.get("attempts", []), {
        "started": now, "cases": len(plan.todo), "estimated_calls": plan.calls_estimate(),
        "estimated_cost_usd": round(cost, 4), "unpriced_models": unknown,
        "retrying": retrying(plan.finished, plan.todo, judge_errors),
        "limit": plan.limit_note or None}]
    return {
        "run_id": plan.store.name, "created": meta.get("created", now), "status": "running",
        "pid": os.getpid(), "grid_name": grid.name, "grid_file": str(grid.path),
        "description": grid.description, "cells": len({c.cell for c in plan.cases}),
        "cases": len(plan.cases), "skipped_models": plan.skipped,
        "missing_toolsets": plan.prepared.missing_toolsets, "judge": grid.judge,
        "judge_samples": grid.judge_samples, "judge_cache": grid.judge_cache,
        "workers": plan.workers,
        "budget": {"max_calls": grid.max_calls, "max_cost_usd": grid.max_cost_usd},
        "budget_stop": None, "package_version": treadwise.__version__,
        "git_commit": meta.get("git_commit") or provenance.git_commit(),
        **sources(grid), "attempts": attempts,
    }


def spent(budget: Any) -> dict[str, Any]:
    """What the attempt spent: every paid request (the judge's included) and their cost."""
    return {"model_calls": budget.calls, "cost_usd": round(budget.cost_usd, 6),
            "judge_calls": budget.judge_calls,
            "judge_cost_usd": round(budget.judge_cost_usd, 6)}
