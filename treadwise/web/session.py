"""What one browser session holds: its conversation thread and the turns shown on the page."""

from __future__ import annotations

import threading
import time
import uuid
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Literal

from treadwise.privacy.redaction import Redactions

if TYPE_CHECKING:
    from treadwise.agent import ToolStep, TurnResult
    from treadwise.errors import FriendlyError
    from treadwise.web.server_secret import ServerSecret

Status = Literal["running", "done", "error", "stopped"]


@dataclass
class Turn:
    """One user message, what the page shows while its reply runs, and the agent's result."""

    user: str
    persona: str
    persona_name: str
    spec: str
    model: str
    temperature: float
    id: str = field(default_factory=lambda: uuid.uuid4().hex[:12])
    started: float = field(default_factory=time.time)
    status: Status = "running"
    answer: str = ""  # what is shown: the streamed text so far (redacted), then the final answer
    streamed: str = ""
    steps: list[ToolStep] = field(default_factory=list)
    step_started: dict[str, float] = field(default_factory=dict)  # step id -> time.time()
    # Strategy stages (plan, thought, check, attempt), each with how many tool steps preceded it.
    stages: list[tuple[int, dict]] = field(default_factory=list)
    plots: dict[str, list[str]] = field(default_factory=dict)  # step id -> cached PNG paths
    began: float | None = None  # when the agent started on it (after any queueing)
    # When the reply's words began to show, from `began` (as the result's latency is timed);
    # the result's `calls.ttft_s` is the provider's first output of any call (a tool call too).
    first_token_s: float | None = None
    result: TurnResult | None = None
    # Why the turn failed when the agent could not even produce a result (or it was refused).
    failure: FriendlyError | None = None
    stop_requested: bool = False
    arm: tuple[str, str, str] | None = None  # (live experiment, arm, visitor), once done
    # The thumb stored for it, on which of its replies (assistant messages, from 0) it was
    # given: (reply, "Like" or "Dislike"); the page draws it again from this (render.py).
    thumb: tuple[int, str] | None = None
    _settle: threading.Lock = field(default_factory=threading.Lock, repr=False)
    _settled: bool = False

    @property
    def running(self) -> bool:
        return self.status == "running"

    @property
    def error(self) -> FriendlyError | None:
        return self.failure or (self.result.error if self.result else None)

    @property
    def remembered(self) -> bool:
        """Memory keeps a turn exactly when it finished well: the agent rolls back the rest."""
        return self.status == "done"

    def request_stop(self) -> bool:
        """Ask the turn to stop, unless its result is already being kept (then it finishes)."""
        with self._settle:
            if not self._settled:
                self.stop_requested = True
            return self.stop_requested

    def settle(self) -> bool:
        """Called with the result in hand: True to keep it, False when a stop came first."""
        with self._settle:
            self._settled = not self.stop_requested
            return self._settled


@dataclass
class ChatSession:
    """Per-session state: its own memory thread, so sessions never see each other's history."""

    thread_id: str = field(default_factory=lambda: uuid.uuid4().hex)
    turns: list[Turn] = field(default_factory=list)
    key: str = field(default_factory=lambda: uuid.uuid4().hex)  # for the rate limit
    visitor: str = ""  # the browser's id (localStorage), for a live experiment's arm
    user: str | None = None  # the signed-in user, when the page has a login
    owner: str | None = None  # whose exports these are (see owners.Owners)
    exports: list[str] = field(default_factory=list)  # files written for it ("Forget me")
    # The page may show thumbs from the turns' `thumb`: its chatbot is then sent with them.
    thumbs_shown: bool = False
    # Its exports' parts and their redactions, so each export reads only the new turn.
    redactions: Redactions = field(default_factory=Redactions, repr=False, compare=False)

    @property
    def running(self) -> bool:
        return any(turn.running for turn in self.turns)

    def stop(self) -> bool:
        """Ask every running turn to stop; True when one will."""
        return any([turn.request_stop() for turn in self.turns if turn.running])

    def reset(self) -> None:
        """Start a new conversation in place, so a turn still winding down renders nothing."""
        self.stop()
        self.thread_id = uuid.uuid4().hex
        self.turns = []
        self.redactions.clear()


def visitor_key(session: ChatSession, secret: ServerSecret) -> str:
    """How a visitor is named in the experiment tables: an HMAC, under the server's secret, of
    who the server knows them as (a signed-in user, a visitor cookie), else of the browser's id
    or the session's own key (one API session, one visitor). A client cannot work out which
    name, so which arm, any id it sends would get."""
    return secret.sign("visitor-key", session.visitor or session.key)


def new_session() -> ChatSession:
    return ChatSession()
