"""Runs chat turns in worker threads, so Stop ends one at once and memory keeps whole turns."""

from __future__ import annotations

import logging
import queue
import threading
import time
from collections.abc import Generator, Iterator
from contextlib import closing, contextmanager
from typing import TYPE_CHECKING, Any

from treadwise.errors import FriendlyError, classify

if TYPE_CHECKING:
    from treadwise.agent import Agent, Event
    from treadwise.agent.request import TurnRequest
    from treadwise.settings import Settings
    from treadwise.web.session import Turn

POLL_S = 0.1
_DONE = object()
log = logging.getLogger(__name__)


class LazyAgent:
    """The one shared Agent, built on first use or in the background after the server is up.

    Building it imports LangGraph and the tools; doing that lazily keeps the page's cold start
    close to a bare Gradio app's.
    """

    def __init__(self, settings: Settings, agent: Agent | None = None):
        self.settings = settings
        self._agent = agent
        self._lock = threading.Lock()

    def get(self) -> Agent:
        if self._agent is None:
            with self._lock:
                if self._agent is None:
                    from treadwise.agent import Agent

                    self._agent = Agent(self.settings)
        return self._agent

    def injected_models(self) -> frozenset[str]:
        """Names of the models an embedding app gave its Agent (they are not specs); an agent
        built here from the settings has none, and is not built to say so."""
        return frozenset(self._agent.injected_models) if self._agent is not None else frozenset()

    def warm_up(self) -> threading.Thread:
        def build() -> None:
            try:
                self.get()
            except Exception:
                log.exception("building the agent in the background failed")

        thread = threading.Thread(target=build, name="treadwise-agent-warm-up", daemon=True)
        thread.start()
        return thread


class ThreadLocks:
    """One lock per conversation thread, dropped when nobody holds or waits for it."""

    def __init__(self) -> None:
        self._guard = threading.Lock()
        self._locks: dict[str, list[Any]] = {}

    @contextmanager
    def hold(self, key: str) -> Iterator[None]:
        with self._guard:
            entry = self._locks.setdefault(key, [threading.Lock(), 0])
            entry[1] += 1
        try:
            with entry[0]:
                yield
        finally:
            with self._guard:
                entry[1] -= 1
                if not entry[1]:
                    del self._locks[key]

    def __len__(self) -> int:
        return len(self._locks)


class TurnRunner:
    """Streams one turn's events, with None as a heartbeat every POLL_S while nothing happens;
    a turn asked to stop ends for the page within POLL_S.

    The worker finishes the call in flight on its own and then closes the agent's stream, and
    the agent leaves a stopped or failed turn out of memory. Turns of one thread never overlap:
    they queue on the thread's lock.
    """

    def __init__(self, agent: LazyAgent):
        self.agent = agent
        self.locks = ThreadLocks()

    def stream(self, turn: Turn,
               request: TurnRequest) -> Generator[Event | FriendlyError | None, None, None]:
        """The events of `turn` (its message) as `request` asks it to be answered."""
        events: queue.SimpleQueue[Any] = queue.SimpleQueue()
        worker = threading.Thread(target=self._work, args=(turn, request, events),
                                  name=f"turn-{turn.id}", daemon=True)
        worker.start()
        while not turn.stop_requested:
            try:
                item = events.get(timeout=POLL_S)
            except queue.Empty:
                yield None
                continue
            if item is _DONE:
                return
            yield item

    def _work(self, turn: Turn, request: TurnRequest, events: queue.SimpleQueue[Any]) -> None:
        try:
            with self.locks.hold(request.thread_id):
                self._run(turn, request, events)
        except Exception as exc:
            log.exception("chat turn failed")
            events.put(classify(exc))
        finally:
            events.put(_DONE)

    def _run(self, turn: Turn, request: TurnRequest, events: queue.SimpleQueue[Any]) -> None:
        from treadwise.agent import TextDelta, TurnFinished

        if turn.stop_requested:
            return  # stopped while waiting for the thread's previous turn
        agent = self.agent.get()
        turn.began = time.time()
        stream = agent.stream(turn.user, request)
        with closing(stream):  # closing it early is how the agent learns the turn stopped
            for event in stream:
                if isinstance(event, TurnFinished) and not turn.settle():
                    return
                if turn.stop_requested:
                    return
                if isinstance(event, TextDelta) and turn.first_token_s is None:
                    turn.first_token_s = time.time() - turn.began  # timed as the agent times
                events.put(event)

    def undo(self, turn: Turn, thread_id: str) -> None:
        """Take a finished turn out of memory, if memory holds it."""
        with self.locks.hold(thread_id):
            if turn.remembered:
                self.agent.get().undo(thread_id)
