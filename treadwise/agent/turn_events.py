"""What a turn reports: its tool steps, its streamed events and the final TurnResult."""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any

from langchain_core.messages import ToolMessage

from treadwise.agent.calls import CallStats
from treadwise.errors import FriendlyError, classify, redact
from treadwise.tools.artifacts import ToolArtifact, artifact_of, files_of


@dataclass
class ToolStep:
    id: str
    name: str
    args: dict[str, Any]
    result: str | None = None
    error: str | None = None
    duration_s: float | None = None
    artifacts: list[str] = field(default_factory=list)  # files the tool made (a plot's PNG)
    # What the tool found as data (tools/artifacts.py); None for text-only tools and errors.
    artifact: ToolArtifact | None = None

    def public(self) -> dict[str, Any]:
        """The CLI's record of a step; `artifact` is the typed result as JSON (or null)."""
        return {"name": self.name, "args": self.args, "result": self.result, "error": self.error,
                "artifact": self.artifact.model_dump(mode="json") if self.artifact else None}


@dataclass
class TurnResult:
    answer: str
    persona: str
    model: str
    temperature: float
    thread_id: str
    iterations: int = 0
    llm_calls: int = 0
    tool_calls: list[ToolStep] = field(default_factory=list)
    artifacts: list[str] = field(default_factory=list)
    latency_s: float = 0.0
    usage: dict[str, int] = field(default_factory=lambda: {"input_tokens": 0,
                                                          "output_tokens": 0})
    stopped_by_cap: bool = False
    error: FriendlyError | None = None
    # A strategy's own record (stages, attempts, vote); None for the default, react.
    strategy: dict[str, Any] | None = None
    # The routing mode and the tool groups the turn started with (see agent/routing.py).
    routing: dict[str, Any] | None = None
    calls: CallStats = field(default_factory=CallStats)
    # The customer asked for their data to go and this conversation was erased with this turn
    # (its memory too): nothing of it is kept, the answer included.
    erased: bool = False

    def to_json(self) -> dict[str, Any]:
        """The fields of the CLI contract, `routing`, `calls` (one record per model call), and
        `strategy` when one other than react ran."""
        data = asdict(self)
        data["calls"] = data["calls"]["per_call"]
        data["tool_calls"] = [step.public() for step in self.tool_calls]
        data["error"] = self.error.to_dict() if self.error else None
        if self.strategy is None:
            del data["strategy"]
        return data


@dataclass
class TextDelta:
    text: str


@dataclass
class ToolStarted:
    step: ToolStep


@dataclass
class ToolFinished:
    step: ToolStep


@dataclass
class StageFinished:
    """A strategy stage done (a plan, a thought, a check, an attempt): shown as a step."""

    stage: dict[str, Any]


@dataclass
class TurnFinished:
    result: TurnResult


Event = TextDelta | ToolStarted | ToolFinished | StageFinished | TurnFinished


def _open_step(steps: list[ToolStep], message: ToolMessage) -> ToolStep:
    """The unfinished step this tool result answers (ids may repeat across iterations)."""
    for step in steps:
        if step.id == message.tool_call_id and step.result is None and step.error is None:
            return step
    step = ToolStep(message.tool_call_id, message.name or "?", {})
    steps.append(step)
    return step


def record_tool_result(steps: list[ToolStep], message: ToolMessage) -> ToolStep:
    """Fill the step a tool message answers (its result or error, duration, artifacts)."""
    step = _open_step(steps, message)
    text = redact(message.text)
    if message.status == "error":
        step.error = text
    else:
        step.result = text
    step.duration_s = message.response_metadata.get("duration_s")
    step.artifact = artifact_of(message)
    step.artifacts = files_of(message)
    return step


def refused(error: Exception, *, persona: str, model: str, thread_id: str) -> TurnResult:
    """The result of a turn whose request could not be made: only its error (the CLI prints
    it as JSON like any other failure); the model is shown as people may see it."""
    from treadwise.models.registry import display_name

    return TurnResult(answer="", persona=persona, model=display_name(model), temperature=0.0,
                      thread_id=thread_id, error=classify(error))
