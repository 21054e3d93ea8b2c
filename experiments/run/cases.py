"""One case end to end: a worker's agent pointed at the case's own data dir, its turns, its
checks and grades, and the record (row and transcript) it leaves."""

from __future__ import annotations

import dataclasses
import shutil
import threading
from collections.abc import Sequence
from contextvars import ContextVar
from pathlib import Path
from typing import Any

from experiments.define.checks import CheckResult, Outcome, evaluate
from experiments.define.grid import Case, Cell, Grid
from experiments.define.prices import Prices
from experiments.define.schema import DEFAULT_STRATEGY
from experiments.run.case_record import HARNESS_ERROR, case_record
from experiments.run.grading import Judge, Verdict
from experiments.run.response_cache import CacheTally, ResponseCache
from experiments.run.response_cache import start_tally as start_cache_tally
from experiments.store.record import CaseRecord
from treadwise.agent import Agent
from treadwise.agent.request import TurnRequest
from treadwise.settings import Settings
from treadwise.tools import ToolContext

TOOLSETS = ("math", "business")
# The running case's data dir, per worker thread; tools read it through their ToolContext.
CASE_DIR: ContextVar[Path | None] = ContextVar("experiments_case_dir", default=None)


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


def tool_context(fallback_dir: Path, settings: Settings) -> ToolContext:
    """One tool context for the whole sweep, its data dir the running case's own, its math
    time limit the sweep's settings' (not whatever the process's math pool started with)."""
    return ToolContext(fallback_dir, case_dir=CASE_DIR, math_timeout_s=settings.math_timeout_s)


class ModelPool:
    """Builds each (model, temperature) once per sweep; workers take their own copies.

    Building a provider client costs tens of milliseconds of CPU (TLS contexts, HTTP clients),
    and binding tools to a new model object costs ~10 ms more; per case, under the GIL, that
    would serialise a threaded sweep. A copy shares the HTTP clients with the original.
    """

    def __init__(self, grid: Grid, settings: Settings, cache: ResponseCache | None = None, *,
                 rate_share: float = 1.0):
        self.grid = grid
        self.settings = settings
        self.cache = cache
        # Several processes running one sweep split each provider's rate limit between them.
        self.rate_share = rate_share
        self._models: dict[tuple[str, float], Any] = {}

    def build(self, spec: str, temperature: float) -> Any:
        from treadwise.models import ModelSettings, read_spec, resolve_model

        model = read_spec(spec)
        rate = self.grid.rate_limits.get(model.provider, 0.0) * self.rate_share
        runtime = dataclasses.replace(self.settings, rate_limit_rps=rate)
        return resolve_model(model, ModelSettings(temperature=temperature).reached_by(runtime))

    def prepare(self, specs: Sequence[str], temperatures: Sequence[float]) -> dict[str, str]:
        """Build every model; return {spec: reason} for those that cannot be used here."""
        from treadwise.errors import ModelConfigError

        skipped: dict[str, str] = {}
        for spec in specs:
            for temperature in temperatures:
                try:
                    self._models[(spec, temperature)] = self.build(spec, temperature)
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
        if self.grid.stream and "streaming" in fields:
            update["streaming"] = True
        if self.cache is not None:
            # LangChain's cache key leaves out a copy's token limit: the scope adds it.
            update["cache"] = self.cache.scoped(f"{cell.model}|{cell.variation.max_tokens}")
        return base.model_copy(update=update)


def with_seed(model: Any, seed: int) -> Any:
    """Set the case's seed on a worker's own model copy (read by the model at request time),
    and on its view of the response cache (repeats are separate requests)."""
    if "seed" in type(model).model_fields:
        model.seed = seed
    if isinstance(model.cache, ResponseCache):
        model.cache = model.cache.seeded(seed)
    return model


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


def case_agent(settings: Settings, tools: list, system_suffix: str = "") -> Agent:
    """An Agent one worker reuses case after case; each case injects its model by spec.

    Its memory is in RAM: a case's thread is deleted when the case ends, so cases write no
    conversation database and the graph is compiled once per worker, not once per case.
    """
    from langgraph.checkpoint.memory import InMemorySaver

    from treadwise.agent.prompts import build_system_prompt

    def prompt(persona: Any) -> str:
        return f"{build_system_prompt(persona)}\n\n{system_suffix}".strip()

    return Agent(settings, tools=tools, checkpointer=InMemorySaver(), models={},
                 system_prompt=prompt if system_suffix else None)


class _Worker:
    """What one worker thread reuses case after case: its agents and model copies."""

    def __init__(self, settings: Settings, tools: list, models: ModelPool):
        self.settings = settings
        self.tools = tools
        self.pool = models
        self.agents: dict[str, Agent] = {}
        self.models: dict[Cell, Any] = {}

    def agent(self, system_suffix: str) -> Agent:
        if system_suffix not in self.agents:
            self.agents[system_suffix] = case_agent(self.settings, self.tools, system_suffix)
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
    judge: Judge | None = None


@dataclasses.dataclass
class Conversation:
    """What one case's turns produced."""

    turns: list[Any] = dataclasses.field(default_factory=list)
    history: list[Any] = dataclasses.field(default_factory=list)
    harness_error: str | None = None


class CaseRunner:
    """Runs cases on worker threads, each worker with its own agents and model copies."""

    def __init__(self, context: RunContext):
        self.context = context
        self._local = threading.local()

    def _worker(self) -> _Worker:
        worker = getattr(self._local, "worker", None)
        if worker is None:
            ctx = self.context
            worker = self._local.worker = _Worker(ctx.settings, ctx.tools, ctx.models)
        return worker

    def run(self, case: Case) -> CaseRecord:
        """Run one case and return its record; never raises."""
        case_dir = self.context.cases_dir / case.key
        keep = self.context.grid.keep_cases
        if case_dir.exists():  # a case run again starts clean
            shutil.rmtree(case_dir, ignore_errors=True)
        cache = start_cache_tally()
        talk = Conversation()
        try:
            # Tools create the folder when they first write (a lead, a plot), so most cases
            # of a big sweep never touch the disk.
            if keep == "all":
                case_dir.mkdir(parents=True)
            self._converse(case, case_dir, talk)
            checks = evaluate(case.scenario.checks, Outcome(list(case.scenario.turns),
                                                            talk.turns, case_dir))
        except Exception as exc:  # noqa: BLE001 - one broken case is a row, not a dead sweep
            talk.harness_error = f"{type(exc).__name__}: {exc}"
            checks = [CheckResult(HARNESS_ERROR, False, talk.harness_error)]
        try:
            record = case_record(self.context, case, talk, checks, cache,
                                 self._grade(case, talk))
        except Exception as exc:  # noqa: BLE001 - a row that cannot be typed must not hang
            record = self.harness_error(case, f"its record could not be built: "
                                              f"{type(exc).__name__}: {exc}")
        if case_dir.exists() and (keep == "none" or (keep == "failed"
                                                     and record.row.status == "ok")):
            shutil.rmtree(case_dir, ignore_errors=True)
        return record

    def harness_error(self, case: Case, why: str) -> CaseRecord:
        """The record of a case the harness could not run or record: an error row."""
        talk = Conversation(harness_error=why)
        return case_record(self.context, case, talk, [CheckResult(HARNESS_ERROR, False, why)],
                           CacheTally(), None)

    def _grade(self, case: Case, talk: Conversation) -> Verdict | None:
        judge = self.context.judge
        if judge is None or talk.harness_error or any(t.error for t in talk.turns):
            return None
        from treadwise.personas import get_persona

        pairs = list(zip(case.scenario.turns, [t.answer for t in talk.turns], strict=False))
        return judge.grade(get_persona(case.cell.persona), pairs, seed=case.seed)

    def _converse(self, case: Case, case_dir: Path, talk: Conversation) -> None:
        worker, cell = self._worker(), case.cell
        CASE_DIR.set(case_dir)
        agent = worker.agent(cell.variation.system_suffix)
        agent.injected_models[cell.model] = worker.model(cell, case.seed)
        try:
            # The case's one request, checked once: a value that cannot be used is the
            # case's error row (run() records it), before any turn.
            request = TurnRequest.read(
                persona=cell.persona, model=cell.model, temperature=cell.temperature,
                seed=case.seed, max_tokens=cell.variation.max_tokens or None,
                strategy=cell.strategy or DEFAULT_STRATEGY, routing=cell.routing or None,
                thread_id=case.thread_id, personas_dir=agent.settings.personas_dir,
                models=(cell.model,))
            for message in case.scenario.turns:
                result = agent.run(message, request)
                talk.turns.append(result)
                if result.error is not None:
                    break
            talk.history = agent.history(case.thread_id)
        finally:
            agent.injected_models.pop(cell.model, None)
            agent.checkpointer.delete_thread(case.thread_id)
