"""One case end to end: a worker's agent pointed at the case's own data dir, its turns, its row."""

from __future__ import annotations

import dataclasses
import shutil
import threading
from collections.abc import Sequence
from contextvars import ContextVar
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from experiments.checks import CheckResult, Outcome, evaluate
from experiments.grid import Case, Cell, Grid
from experiments.prices import Prices
from treadwise.agent import Agent
from treadwise.settings import Settings
from treadwise.tools import ToolContext

TOOLSETS = ("math", "business")
HARNESS_ERROR = "harness"


def sweep_settings(grid: Grid, data_dir: Path, base: Settings | None = None) -> Settings:
    """The grid's timeout and retry policy on top of the environment's settings.

    No MCP servers and no rate limit unless the grid sets one (rate limits are per provider and
    applied when each model is built).
    """
    base = base or Settings.from_env()
    return dataclasses.replace(
        base, data_dir=data_dir, timeout_s=grid.timeout_s, rate_limit_rps=0.0, mcp_config=None,
        max_retries=base.max_retries if grid.max_retries is None else grid.max_retries,
        max_retry_wait_s=(base.max_retry_wait_s if grid.max_retry_wait_s is None
                          else grid.max_retry_wait_s),
    )


class ModelPool:
    """Builds each (model, temperature) once per sweep; workers take their own copies.

    Building a provider client costs tens of milliseconds of CPU (TLS contexts, HTTP clients),
    and binding tools to a new model object costs ~10 ms more; per case, under the GIL, that
    would serialise a threaded sweep. A copy shares the HTTP clients with the original.
    """

    def __init__(self, grid: Grid, settings: Settings):
        self.grid = grid
        self.settings = settings
        self._models: dict[tuple[str, float], Any] = {}

    def prepare(self, specs: Sequence[str], temperatures: Sequence[float]) -> dict[str, str]:
        """Build every model; return {spec: reason} for those that cannot be used here."""
        from treadwise.errors import ModelConfigError
        from treadwise.models import parse_spec, resolve_model

        skipped: dict[str, str] = {}
        for spec in specs:
            provider = parse_spec(spec)[0]
            settings = dataclasses.replace(
                self.settings, rate_limit_rps=self.grid.rate_limits.get(provider, 0.0))
            for temperature in temperatures:
                try:
                    self._models[(spec, temperature)] = resolve_model(
                        spec, temperature=temperature, settings=settings)
                except ModelConfigError as exc:
                    skipped[spec] = str(exc)
                    break
        return skipped

    def copy_for(self, cell: Cell) -> Any:
        """A copy of the cell's model with the variation's token limit, for one worker."""
        base = self._models[(cell.model, cell.temperature)]
        fields = type(base).model_fields
        update: dict[str, Any] = {}
        if cell.variation.max_tokens:
            # Only real providers have a token limit; the offline model has no such field.
            name = next((n for n in ("max_tokens", "max_output_tokens") if n in fields), None)
            if name:
                update[name] = cell.variation.max_tokens
        return base.model_copy(update=update)


def with_seed(model: Any, seed: int) -> Any:
    """Set the case's seed on a worker's own model copy (read by the model at request time)."""
    if "seed" in type(model).model_fields:
        model.seed = seed
    return model


_CASE_DIR: ContextVar[Path | None] = ContextVar("experiments_case_dir", default=None)


class CaseToolContext(ToolContext):
    """One tool context for the whole sweep; its data dir is the running case's own.

    Tools read the data dir and the store when they are called, so one set of tools serves
    every worker (building them costs ~60 ms of CPU under the GIL). The dir is a ContextVar, so
    it follows LangGraph into the threads that run parallel tool calls.
    """

    @property  # type: ignore[override]
    def data_dir(self) -> Path:
        return _CASE_DIR.get() or self.__dict__["_fallback_dir"]

    @data_dir.setter
    def data_dir(self, value: Path) -> None:
        self.__dict__["_fallback_dir"] = Path(value)

    @property  # type: ignore[override]
    def store(self) -> Any:
        from treadwise.storage.sqlite import Store

        return Store(self.data_dir)

    @staticmethod
    def enter_case(data_dir: Path) -> None:
        """Point this thread's (and its tool threads') data dir at one case's folder."""
        _CASE_DIR.set(data_dir)


class CaseAgent(Agent):
    """An Agent one worker reuses case after case; the runner hands it each case's model.

    Its memory is in RAM: a case's thread is deleted when the case ends, so cases write no
    conversation database and the graph is compiled once per worker, not once per case.
    """

    def __init__(self, settings: Settings, *, tools: list, system_suffix: str = ""):
        from langgraph.checkpoint.memory import InMemorySaver

        from treadwise.agent.prompts import build_system_prompt

        def prompt(persona: Any) -> str:
            return f"{build_system_prompt(persona)}\n\n{system_suffix}".strip()

        super().__init__(settings, tools=tools, checkpointer=InMemorySaver(),
                         system_prompt=prompt if system_suffix else None)
        self.case_model: Any = None

    def model(self, spec: str, temperature: float, seed: int | None = None) -> Any:
        if self.case_model is not None:
            return self.case_model
        return super().model(spec, temperature, seed)


def load_toolsets(context: ToolContext,
                  wanted: Sequence[str] = TOOLSETS) -> tuple[list, dict[str, str]]:
    """The tools of every toolset that loads here, and {toolset: reason} for the others (a
    toolset that cannot load is reported and its scenarios fail; the sweep goes on)."""
    from treadwise.tools import get_tools

    tools: list = []
    missing: dict[str, str] = {}
    for name in wanted:
        try:
            tools.extend(get_tools(name, context=context))
        except Exception as exc:  # noqa: BLE001 - any import or build failure is reported
            missing[name] = f"{type(exc).__name__}: {exc}"
    return tools, missing


class _Worker:
    """What one worker thread reuses case after case: its agents and model copies."""

    def __init__(self, settings: Settings, tools: list, models: ModelPool):
        self.settings = settings
        self.tools = tools
        self.pool = models
        self.agents: dict[str, CaseAgent] = {}
        self.models: dict[Cell, Any] = {}

    def agent(self, system_suffix: str) -> CaseAgent:
        if system_suffix not in self.agents:
            self.agents[system_suffix] = CaseAgent(self.settings, tools=self.tools,
                                                   system_suffix=system_suffix)
        return self.agents[system_suffix]

    def model(self, cell: Cell, seed: int) -> Any:
        if cell not in self.models:
            self.models[cell] = self.pool.copy_for(cell)
        return with_seed(self.models[cell], seed)


@dataclasses.dataclass
class RunContext:
    """What every case of one sweep shares."""

    run_id: str
    grid: Grid
    cases_dir: Path
    settings: Settings
    models: ModelPool
    prices: Prices
    tools: list
    package_version: str
    git_commit: str


class CaseRunner:
    """Runs cases on worker threads, each worker with its own tools and agents."""

    def __init__(self, context: RunContext):
        self.context = context
        self._local = threading.local()

    def _worker(self) -> _Worker:
        worker = getattr(self._local, "worker", None)
        if worker is None:
            ctx = self.context
            worker = self._local.worker = _Worker(ctx.settings, ctx.tools, ctx.models)
        return worker

    def run(self, case: Case) -> dict[str, Any]:
        """Run one case and return its row; never raises."""
        case_dir = self.context.cases_dir / case.key
        shutil.rmtree(case_dir, ignore_errors=True)
        turns: list[Any] = []
        try:
            case_dir.mkdir(parents=True)
            turns = self._converse(case, case_dir)
            checks = evaluate(case.scenario.checks, Outcome(list(case.scenario.turns), turns,
                                                            case_dir))
            harness = None
        except Exception as exc:  # noqa: BLE001 - one broken case is a row, not a dead sweep
            harness = f"{type(exc).__name__}: {exc}"
            checks = [CheckResult(HARNESS_ERROR, False, harness)]
        row = self._row(case, turns, checks, harness)
        keep = self.context.grid.keep_cases
        if keep == "none" or (keep == "failed" and row["success"]):
            shutil.rmtree(case_dir, ignore_errors=True)
        return row

    def _converse(self, case: Case, case_dir: Path) -> list[Any]:
        worker = self._worker()
        CaseToolContext.enter_case(case_dir)
        agent = worker.agent(case.cell.variation.system_suffix)
        agent.case_model = worker.model(case.cell, case.seed)
        turns = []
        try:
            for message in case.scenario.turns:
                result = agent.run(message, thread_id=case.thread_id, persona=case.cell.persona,
                                   model=case.cell.model, temperature=case.cell.temperature,
                                   seed=case.seed)
                turns.append(result)
                if result.error is not None:
                    break
        finally:
            agent.case_model = None
            agent.checkpointer.delete_thread(case.thread_id)
        return turns

    def _row(self, case: Case, turns: list[Any], checks: list[CheckResult],
             harness: str | None) -> dict[str, Any]:
        ctx, cell = self.context, case.cell
        failed = [c for c in checks if not c.passed]
        steps = [s for t in turns for s in t.tool_calls]
        errors = [s.error for s in steps if s.error]
        input_tokens = sum(t.usage.get("input_tokens", 0) for t in turns)
        output_tokens = sum(t.usage.get("output_tokens", 0) for t in turns)
        answer = turns[-1].answer if turns else ""
        turn_error = next((t.error for t in turns if t.error is not None), None)
        return {
            "run_id": ctx.run_id, "case_key": case.key, "config_hash": cell.config_hash,
            "scenario": case.scenario.id, "repeat": case.repeat, "persona": cell.persona,
            "provider": cell.provider, "model": cell.model_name, "model_spec": cell.model,
            "temperature": cell.temperature, "variation": cell.variation.name,
            "category": case.scenario.category,
            "success": not failed, "checks_passed": len(checks) - len(failed),
            "checks_total": len(checks),
            "failed_checks": ";".join(c.id for c in failed),
            "check_details": " | ".join(f"{c.id}: {c.description}" for c in failed),
            "latency_s": round(sum(t.latency_s for t in turns), 4),
            "model_calls": sum(t.llm_calls for t in turns),
            "iterations": sum(t.iterations for t in turns),
            "turn_iterations": "|".join(str(t.iterations) for t in turns),
            "stopped_by_cap": any(t.stopped_by_cap for t in turns),
            "tool_sequence": " | ".join(">".join(s.name for s in t.tool_calls) or "(none)"
                                        for t in turns),
            "tool_errors": len(errors),
            "tool_error_detail": " ".join(errors[0].split())[:300] if errors else "",
            "artifacts": sum(len(t.artifacts) for t in turns),
            "input_tokens": input_tokens, "output_tokens": output_tokens,
            "cost_usd": ctx.prices.cost(cell.model, input_tokens, output_tokens),
            "response_chars": len(answer), "response_words": len(answer.split()),
            "answer": answer,
            "error_type": HARNESS_ERROR if harness else (turn_error.type if turn_error else ""),
            "error_message": harness or (turn_error.message if turn_error else ""),
            "seed": case.seed,
            "timestamp": datetime.now(UTC).isoformat(timespec="seconds"),
            "package_version": ctx.package_version, "git_commit": ctx.git_commit,
        }

