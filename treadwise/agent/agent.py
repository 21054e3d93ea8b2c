"""One user turn end to end: the graph run as a stream of events and a final TurnResult."""

from __future__ import annotations

import contextvars
import logging
import time
import uuid
from collections.abc import Generator, Iterator
from contextlib import closing
from dataclasses import replace
from typing import Any

from langchain_core.messages import (
    AIMessage,
    AIMessageChunk,
    AnyMessage,
    HumanMessage,
    RemoveMessage,
    ToolMessage,
)

from treadwise.agent.calls import CallStats, FirstToken, estimate_usage, start_calls, within
from treadwise.agent.echo_guard import EchoWatch, private_answer
from treadwise.agent.policy import for_customer
from treadwise.agent.privacy_turn import privacy_answer
from treadwise.agent.request import InvalidRequest, TurnRequest
from treadwise.agent.routing import check_mode, group_of, last_user_text, route_turn
from treadwise.agent.state import TurnContext, turn_input
from treadwise.agent.strategies import DEFAULT_STRATEGY, get_strategy, recursion_limit
from treadwise.agent.turn_events import (
    Event,
    StageFinished,
    TextDelta,
    ToolFinished,
    ToolStarted,
    ToolStep,
    TurnFinished,
    TurnResult,
    record_tool_result,
    refused,
)
from treadwise.conversation import current_turn
from treadwise.errors import InputRejected, ModelConfigError, classify, redact
from treadwise.models import resolve_model
from treadwise.models.tally import start_tally
from treadwise.personas import DEFAULT_PERSONA
from treadwise.settings import MAX_ITERATIONS, PROVIDER_VARIABLES, Settings

log = logging.getLogger(__name__)
__all__ = ["Agent", "Event", "StageFinished", "TextDelta", "ToolFinished", "ToolStarted",
           "ToolStep", "TurnFinished", "TurnRequest", "TurnResult", "record_tool_result"]


class Agent:
    """The compiled graph plus its memory and tools; safe to share between threads."""

    def __init__(self, settings: Settings | None = None, *, tools: list | None = None,
                 checkpointer: Any = None, toolsets: tuple[str, ...] = ("math", "business"),
                 models: dict[str, Any] | None = None,
                 system_prompt: Any = None):
        from treadwise.storage.memory import open_checkpointer
        from treadwise.storage.retention import apply_retention
        from treadwise.tools import ToolContext, get_tools
        from treadwise.tools.web import web_search_enabled

        self.settings = settings or Settings.from_env()
        self.context: ToolContext | None = None
        if tools is None:
            self.context = context = ToolContext.of(self.settings)
            names = toolsets + (("mcp",) if self.settings.mcp_config else ()) \
                + (("web",) if web_search_enabled(self.settings.environment) else ())
            tools = get_tools(*names, context=context)
        self.tools = tools
        self.tool_groups = group_of(tool.name for tool in tools)
        self.checkpointer = checkpointer or open_checkpointer(self.settings.data_dir,
                                                              self.settings.database_url)
        if self.context is not None:
            self.context.memory = self.checkpointer
        apply_retention(self.settings, self.checkpointer)
        self.system_prompt = system_prompt
        self._graphs: dict[str, Any] = {}
        self.graph = self.graph_for(DEFAULT_STRATEGY)
        self._models: dict[tuple, Any] = {}
        # Pre-built models by name (tests, embedding apps); they bypass spec resolution.
        self.injected_models = dict(models or {})

    def model(self, request: TurnRequest) -> Any:
        """The chat model a request names: an injected one, else built from its spec and
        settings (once per spec, settings and provider keys)."""
        if request.model in self.injected_models:
            return self.injected_models[request.model]
        # Endpoints and keys are part of the key so a changed environment gets a fresh client.
        env = self.settings.environment
        key = (request.model, request.settings, *(env.get(v, "") for v in PROVIDER_VARIABLES))
        if key not in self._models:
            self._models[key] = resolve_model(request.spec,
                                              request.settings.reached_by(self.settings))
        return self._models[key]

    def request(self, *, thread_id: str | None = None, persona: str = DEFAULT_PERSONA,
                model: str = "offline", temperature: float = 0.0, seed: int | None = None,
                max_tokens: int | None = None, strategy: str = DEFAULT_STRATEGY,
                routing: str | None = None) -> TurnRequest:
        """A turn request from plain values, checked once (the Python edge): personas from
        this agent's folder, and its injected models' names taken as specs."""
        return TurnRequest.read(persona=persona, model=model, temperature=temperature,
                                seed=seed, max_tokens=max_tokens, strategy=strategy,
                                routing=routing, thread_id=thread_id,
                                personas_dir=self.settings.personas_dir,
                                models=frozenset(self.injected_models))

    def graph_for(self, strategy: str) -> Any:
        """The compiled graph of a strategy, built on first use; all share one memory."""
        if strategy not in self._graphs:
            from treadwise.agent.graph import Kit  # langgraph loads with the first graph

            chosen = get_strategy(strategy)
            kit = Kit(self.tools, chosen.budget_for(self.settings), self.checkpointer,
                      self.system_prompt, self.settings)
            self._graphs[strategy] = chosen.build(kit)
        return self._graphs[strategy]

    def _config(self, thread_id: str, strategy: str = DEFAULT_STRATEGY) -> dict[str, Any]:
        chosen = get_strategy(strategy)
        limit = (2 * MAX_ITERATIONS + 1 if strategy == DEFAULT_STRATEGY
                 else recursion_limit(chosen.budget_for(self.settings)))
        return {"configurable": {"thread_id": thread_id}, "recursion_limit": limit}

    def check_input(self, message: str) -> None:
        if not message.strip():
            raise InputRejected("Please type a message first.")
        limit = self.settings.max_input_chars
        if len(message) > limit:
            raise InputRejected(f"Your message is {len(message):,} characters long; the limit is "
                                f"{limit:,}. Please shorten it and send it again.")

    def stream(self, message: str, request: TurnRequest, *,
               tokens: bool = True) -> Generator[Event, None, None]:
        """Run one user turn as `request` asks, yielding tool steps, the final result and
        (with ``tokens``) text as the provider streams it; without ``tokens`` models are called
        plainly. The request's routing (on, compact, off; default the settings') says which
        tools and prompt the calls carry.

        Memory keeps the turn only when it succeeds and the stream is read to its end: a failed
        turn, or one whose stream is closed early (a Stop), leaves the thread as it was."""
        thread_id, strategy = request.thread_id, request.strategy
        started = time.perf_counter()
        shown = request.model if request.model in self.injected_models else request.shown
        result = TurnResult(answer="", persona=request.persona.key, model=shown,
                            temperature=request.settings.temperature, thread_id=thread_id)
        steps: list[ToolStep] = []
        stages: list[dict[str, Any]] = []
        try:
            self.check_input(message)
            mode = check_mode(request.routing or self.settings.routing)
            model = self.model(request)
            # A model may turn grounding off (local:smollm2?grounding=off, a study's baseline).
            context = TurnContext(persona=request.persona, model=model,
                                  model_spec=request.model,
                                  grounding=getattr(model, "grounding", "on") != "off")
            graph, answer_nodes = self.graph_for(strategy), get_strategy(strategy).answer_nodes
        except ValueError as exc:
            known = isinstance(exc, InputRejected | ModelConfigError)
            result.error = classify(exc if known else ModelConfigError(str(exc)))
            result.latency_s = round(time.perf_counter() - started, 4)
            yield TurnFinished(result)
            return
        before = self._head(thread_id)
        history = before.checkpoint["channel_values"].get("messages", []) if before else []
        route = route_turn(mode, message, last_user_text(history), self.tool_groups)
        context, result.routing = replace(context, route=route), route.record()
        settled = False  # memory holds the finished turn, or is back as it was
        # The turn runs in its own context: the request tally it starts is seen by every
        # model call, whichever thread resumes this generator.
        turn_context = contextvars.copy_context()
        tally, first_token = turn_context.run(start_tally), FirstToken()
        per_call = turn_context.run(start_calls)
        try:
            modes = ["messages", "updates"] if tokens else ["updates"]
            config = {**self._config(thread_id, strategy), "callbacks": [first_token]}
            # Checkpoints are written once, as the run ends, not after every step: fewer
            # writes per turn, and nothing half-done for a rollback to undo in between.
            chunks = within(turn_context, graph.stream(
                turn_input(message, last_user_text(history) or None), config,
                context=context, stream_mode=modes,
                durability="exit"))
            # Streamed words stop once they repeat the instructions; the answer is replaced.
            watch = EchoWatch(self.settings.personas_dir)
            yield from self._graph_events(chunks, result, steps, stages, answer_nodes, watch)
            result.calls = CallStats(tally.attempts, round(tally.retry_wait_s, 4),
                                     first_token.seconds, per_call=per_call)
            self._summarise(result, thread_id, steps, strategy, context.persona, message)
            if result.erased:
                self._forget_memory(thread_id, result, context.persona)
            if result.error is not None:
                self._restore(graph, thread_id, before)
                settled = True
            result.latency_s = round(time.perf_counter() - started, 4)
            yield TurnFinished(result)
            settled = True
        finally:
            if not settled:
                self._restore(graph, thread_id, before)

    def _graph_events(self, chunks: Generator[Any, None, None], result: TurnResult,
                      *track: Any) -> Iterator[Event]:
        try:
            with closing(chunks):  # closed early, the run stops writing
                for mode, data in chunks:
                    yield from self._events(mode, data, *track)
        except Exception as exc:  # noqa: BLE001 - any provider failure becomes one friendly line
            result.error = classify(exc, self.settings.timeout_s)

    def _head(self, thread_id: str) -> Any:
        """The thread's latest checkpoint (None for a new thread)."""
        return self.checkpointer.get_tuple(self._config(thread_id))

    def _restore(self, graph: Any, thread_id: str, before: Any) -> None:
        """Put the thread back to the checkpoint it had before a failed or stopped turn."""
        try:
            head = self._head(thread_id)
            if head is None or (before is not None and head.config == before.config):
                return
            if before is None:
                self.checkpointer.delete_thread(thread_id)
            else:
                # A copy of the old checkpoint becomes the newest one: exactly the old state.
                graph.update_state(before.config, None, as_node="__copy__")
        except Exception:  # a storage failure must not hide the turn's outcome
            log.warning("could not take a failed or stopped turn out of memory (thread %s)",
                        thread_id, exc_info=True)

    def run(self, message: str, request: TurnRequest | None = None, *,
            thread_id: str | None = None, persona: str = DEFAULT_PERSONA,
            model: str = "offline", temperature: float = 0.0, seed: int | None = None,
            max_tokens: int | None = None, strategy: str = DEFAULT_STRATEGY,
            routing: str | None = None) -> TurnResult:
        """Run one user turn and return its result: `request` as an edge made it, or else
        the request these keywords make (see `request`); a value that cannot be used is the
        result's error, like any other failed turn."""
        if request is None:
            try:
                request = self.request(thread_id=thread_id, persona=persona, model=model,
                                       temperature=temperature, seed=seed,
                                       max_tokens=max_tokens, strategy=strategy,
                                       routing=routing)
            except InvalidRequest as exc:
                return refused(exc, persona=str(persona), model=model,
                               thread_id=thread_id or uuid.uuid4().hex)
        result = None
        for event in self.stream(message, request, tokens=False):  # read to the end: kept
            if isinstance(event, TurnFinished):
                result = event.result
        if result is None:
            raise RuntimeError("turn ended without a result")
        return result

    def _events(self, mode: str, data: Any, steps: list[ToolStep], stages: list[dict[str, Any]],
                answer_nodes: frozenset[str], watch: EchoWatch) -> Iterator[Event]:
        if mode == "messages":
            chunk, meta = data
            if meta.get("langgraph_node") in answer_nodes and isinstance(chunk, AIMessageChunk):
                if (text := chunk.text) and not watch.feed(text):
                    yield TextDelta(text)
            return
        for update in (data or {}).values():
            if isinstance(update, dict):
                for stage in (update.get("trace") or {}).get("stages", [])[len(stages):]:
                    stages.append(stage)
                    yield StageFinished(stage)
                yield from self._tool_events(update.get("messages", []), steps)

    def _tool_events(self, messages: list[Any], steps: list[ToolStep]) -> Iterator[Event]:
        for msg in messages:
            if isinstance(msg, AIMessage):
                for call in [*msg.tool_calls, *msg.invalid_tool_calls]:
                    args = call.get("args")  # an invalid call's args are the raw text
                    step = ToolStep(id=call.get("id") or "", name=call.get("name") or "?",
                                    args=args if isinstance(args, dict) else {})
                    steps.append(step)
                    yield ToolStarted(step)
            elif isinstance(msg, ToolMessage):
                yield ToolFinished(record_tool_result(steps, msg))

    @staticmethod
    def _reported_usage(result: TurnResult, messages: list[Any], reply: AIMessage,
                        persona: Any) -> dict[str, Any]:
        """A reply's token counts; estimated (and flagged) when the provider sent none."""
        if reply.usage_metadata:
            return dict(reply.usage_metadata)
        result.calls.usage_missing = True
        return estimate_usage(messages, messages.index(reply), persona)

    def _summarise(self, result: TurnResult, thread_id: str, steps: list[ToolStep],
                   strategy: str = DEFAULT_STRATEGY, persona: Any = None,
                   raw: str | None = None) -> None:
        """Fill the result from what the checkpoint holds for this turn."""
        try:
            state = self.graph_for(strategy).get_state(self._config(thread_id, strategy)).values
        except Exception:  # noqa: BLE001 - a broken checkpoint must not hide the answer
            state = {}
        messages = state.get("messages", [])
        turn = current_turn(messages)
        ai = [m for m in turn if isinstance(m, AIMessage)]
        result.iterations = len(ai)
        result.llm_calls = int(state.get("iterations", 0)) if turn else 0
        trace = dict(state.get("trace") or {}) if turn else {}
        # Stage calls whose reply is not kept in memory (plans, checks, thoughts) count too.
        usages = [self._reported_usage(result, messages, m, persona) for m in ai]
        for usage in [*usages, trace.pop("usage", {})]:
            result.usage["input_tokens"] += int(usage.get("input_tokens", 0))
            result.usage["output_tokens"] += int(usage.get("output_tokens", 0))
        if strategy != DEFAULT_STRATEGY:
            chosen = get_strategy(strategy)
            result.strategy = {"name": strategy, "budget": chosen.budget_for(self.settings),
                               **trace}
        if not steps:
            for m in turn:
                if isinstance(m, ToolMessage):
                    record_tool_result(steps, m)
        result.tool_calls = steps
        result.artifacts = [a for s in result.tool_calls for a in s.artifacts]
        if ai and result.error is None:
            last = ai[-1]
            answer = private_answer(for_customer(redact(last.text), turn), persona,
                                    self.settings.personas_dir)
            outcome = privacy_answer(
                answer, messages, thread_id=thread_id,
                tools=self.tools, persona=persona, store=lambda: self.store,
                memory=self.checkpointer,
                raw=raw)
            result.answer, result.erased = outcome.answer.strip(), outcome.erased
            result.stopped_by_cap = bool(last.response_metadata.get("stopped_by_cap"))

    @property
    def store(self) -> Any:
        """The lead and question store the business tools write to."""
        if self.context is not None:
            return self.context.store
        from treadwise.storage import open_store

        return open_store(self.settings.data_dir, self.settings.database_url)

    def _forget_memory(self, thread_id: str, result: TurnResult, persona: Any) -> None:
        """After an erasure turn: the conversation's memory goes too, this turn included, so
        what the answer says about the erasure is not stored again."""
        from treadwise.agent.privacy_turn import say
        from treadwise.privacy.erasure import after_erasure, erase_memory

        try:
            held = erase_memory(thread_id, self.checkpointer) - 1
        except Exception:
            log.warning("could not erase a conversation's memory", exc_info=True)
            result.answer += " " + say("memory_not_erased", persona)
            result.erased = False
            return
        after_erasure(thread_id)
        if held > 0:
            result.answer += " " + say("memory_erased", persona)

    def forget(self, thread_id: str) -> Any:
        """Erase everything a conversation holds ("Forget me"); the ErasureReport says what."""
        from treadwise.privacy.erasure import erase_conversation

        return erase_conversation(thread_id, store=self.store, memory=self.checkpointer)

    def holdings(self, thread_id: str) -> Any:
        """What a conversation holds about the customer (nothing is changed)."""
        from treadwise.privacy.erasure import holdings

        return holdings(thread_id, store=self.store, memory=self.checkpointer)

    def history(self, thread_id: str) -> list[AnyMessage]:
        return list(self.graph.get_state(self._config(thread_id)).values.get("messages", []))

    def undo(self, thread_id: str) -> str | None:
        """Forget the last user turn (message, tool steps, answer); return the message's text."""
        messages = self.history(thread_id)
        starts = [i for i, m in enumerate(messages) if isinstance(m, HumanMessage)]
        if not starts:
            return None
        removed = messages[starts[-1]:]
        self.graph.update_state(self._config(thread_id),
                                # add_messages gave every stored message an id
                                {"messages": [RemoveMessage(id=m.id) for m in removed
                                              if m.id is not None]},
                                as_node="reason")
        return removed[0].text
