"""What one browser session holds: its conversation thread and the turns shown on the page."""

from __future__ import annotations

import time
import uuid
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Literal

if TYPE_CHECKING:
    from treadwise.agent import ToolStep

Status = Literal["running", "done", "error", "stopped"]


@dataclass
class Turn:
    """One user message and everything the page shows for its reply."""

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
    # Strategy stages (plan, thought, check, attempt), each with how many tool steps preceded it.
    stages: list[tuple[int, dict]] = field(default_factory=list)
    plots: dict[str, list[str]] = field(default_factory=dict)  # step id -> cached PNG paths
    error_type: str | None = None
    error: str | None = None
    latency_s: float | None = None
    usage: dict[str, int] = field(default_factory=dict)
    stopped_by_cap: bool = False
    # Whether the agent's memory holds this turn; failed and stopped turns are taken out of it,
    # so undo and retry must not remove an earlier turn in their place.
    in_memory: bool = False
    stop_requested: bool = False

    @property
    def running(self) -> bool:
        return self.status == "running"


@dataclass
class ChatSession:
    """Per-session state: its own memory thread, so sessions never see each other's history."""

    thread_id: str = field(default_factory=lambda: uuid.uuid4().hex)
    turns: list[Turn] = field(default_factory=list)

    @property
    def running(self) -> bool:
        return any(turn.running for turn in self.turns)

    def stop(self) -> bool:
        """Ask every running turn to stop; True when there was one."""
        running = [turn for turn in self.turns if turn.running]
        for turn in running:
            turn.stop_requested = True
        return bool(running)

    def reset(self) -> None:
        """Start a new conversation in place, so a turn still winding down renders nothing."""
        self.stop()
        self.thread_id = uuid.uuid4().hex
        self.turns = []


def new_session() -> ChatSession:
    return ChatSession()
