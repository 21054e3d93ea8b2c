"""Typed tool artifacts: what each tool found, kept through memory, redacted, read by type."""

from __future__ import annotations

from pathlib import Path
from typing import Literal

from langchain_core.messages import AIMessage, ToolMessage
from langchain_core.tools import StructuredTool

from tests.support.webapp import ROOMY_MATH_S
from treadwise.agent import Agent
from treadwise.settings import Settings
from treadwise.testing.fakes import ScriptedModel
from treadwise.tools.artifacts import ToolArtifact, artifact_of, files_of, worded
from treadwise.tools.business_results import (
    ErasureResult,
    InterestResult,
    ServiceAvailability,
    TireRecommendation,
)
from treadwise.tools.math_results import MathResult, PlotResult
from treadwise.web.resume import restored_turns

SECRET = "sk-proj-AbCdEf0123456789xyz"


class Note(ToolArtifact):
    """An artifact of a test tool, holding text a secret may hide in."""

    kind: Literal["test_note"] = "test_note"
    text: str

    def words(self) -> str:
        return "noted"


def leak() -> tuple[str, Note]:
    """A tool whose artifact repeats a secret it read somewhere."""
    return worded(Note(text=f"the key is {SECRET}"))


def call(name: str, **args: object) -> AIMessage:
    return AIMessage("", tool_calls=[{"name": name, "args": args, "id": f"c-{name}",
                                      "type": "tool_call"}])


def stored_results(agent: Agent, thread: str) -> list[ToolMessage]:
    return [m for m in agent.history(thread) if isinstance(m, ToolMessage)]


def chat(agent: Agent, thread: str, *messages: str) -> list:
    return [agent.run(m, thread_id=thread) for m in messages]


def test_a_chained_answer_and_its_artifacts_come_back_typed_from_sqlite_memory(data_dir):
    first = Agent(Settings(data_dir=data_dir))
    result, = chat(first, "t", "Add 5 and 4, then square the result")
    assert [s.artifact.exact for s in result.tool_calls] == ["9", "81"]
    # A new process reading the same memory: the artifacts come back as data, not text.
    again = Agent(Settings(data_dir=data_dir))
    added, squared = (artifact_of(m) for m in stored_results(again, "t"))
    assert isinstance(added, MathResult) and added.operands == {"a": 5, "b": 4}
    assert (squared.operation, squared.operands, squared.approx) == ("square", {"x": 9}, 81.0)
    product, = chat(again, "t", "now multiply that by 3")
    assert product.tool_calls[0].args == {"a": 81, "b": 3} and "243" in product.answer


def test_artifacts_survive_postgresql_memory(data_dir, database_url):
    # Room for the exact area on a busy machine (the 5 s default is about hostile input).
    settings = Settings(data_dir=data_dir, database_url=database_url, math_timeout_s=ROOMY_MATH_S)
    result, = chat(Agent(settings), "pg", "Calculate the integral of x² from 0 to 3")
    plot = next(s.artifact for s in result.tool_calls if s.name == "plot_area")
    stored = [artifact_of(m) for m in stored_results(Agent(settings), "pg")]
    assert stored[-1] == plot and isinstance(plot, PlotResult)
    assert plot.exact == "9" and Path(plot.file).is_file()


def test_a_reopened_conversation_shows_steps_with_their_artifacts_and_plots(data_dir):
    # Its subject is the plot kept with the step, not the 5 s limit: six workers on two cores
    # once starved the plot past it.
    agent = Agent(Settings(data_dir=data_dir, math_timeout_s=ROOMY_MATH_S))
    chat(agent, "r", "Calculate the integral of x² from 0 to 3",
         "Do you offer mobile tire installation in Austin?")
    steps = [step for turn in restored_turns(agent.history("r")) for step in turn.steps]
    plot = next(s for s in steps if s.name == "plot_area")
    assert plot.artifacts == [plot.artifact.file] and plot.artifact.brief() == "= 9"
    service = steps[-1].artifact
    assert isinstance(service, ServiceAvailability)
    assert (service.outcome, service.city, service.available) == ("available", "Austin", True)


def test_what_a_tool_found_is_redacted_before_memory_keeps_it(data_dir):
    tool = StructuredTool.from_function(leak, response_format="content_and_artifact")
    model = ScriptedModel(script=[call("leak"), AIMessage("done")])
    agent = Agent(Settings(data_dir=data_dir), tools=[tool], models={"scripted": model})
    result = agent.run("go", model="scripted", thread_id="s")
    kept = artifact_of(stored_results(agent, "s")[0])
    assert isinstance(kept, Note) and SECRET not in kept.text and "the key is" in kept.text
    assert SECRET not in result.tool_calls[0].artifact.text
    assert SECRET not in str(result.to_json())


def test_business_outcomes_are_named_not_worded(data_dir):
    agent = Agent(Settings(data_dir=data_dir))
    tires, lead, again, erased = chat(
        agent, "b", "Which tires do you recommend for an SUV I mostly drive on the highway?",
        "I'd like a fleet quote. Please contact me at ana@fleetco.com",
        "I'd like a fleet quote. Please contact me at ana@fleetco.com",
        "Please delete my data")
    found = tires.tool_calls[0].artifact
    assert isinstance(found, TireRecommendation) and found.outcome == "recommended"
    assert (found.vehicle, found.use) == ("SUV", "highway") and found.tires
    assert [s.artifact.outcome for s in lead.tool_calls] == ["saved"]
    assert isinstance(lead.tool_calls[0].artifact, InterestResult)
    assert [s.artifact.outcome for s in again.tool_calls] == ["already_on_file"]
    gone = erased.tool_calls[-1].artifact
    assert isinstance(gone, ErasureResult) and gone.emails == ["ana@fleetco.com"]
    assert "ana@fleetco.com" in erased.answer


def test_the_cli_json_carries_each_steps_artifact(data_dir):
    result = Agent(Settings(data_dir=data_dir)).run("What is 1 divided by 3?")
    step, = result.to_json()["tool_calls"]
    assert step["artifact"]["exact"] == "1/3" and step["artifact"]["operation"] == "divide"
    assert step["result"] == "1 ÷ 3 = 1/3 ≈ 0.333333333"


def test_text_only_results_and_old_plot_paths_have_no_typed_artifact():
    plain = ToolMessage("web results", tool_call_id="1", name="web_search")
    old_plot = ToolMessage("a plot", tool_call_id="2", name="plot_area", artifact="/p/a.png")
    unknown = ToolMessage("x", tool_call_id="3", name="x", artifact={"kind": "nobody's"})
    assert artifact_of(plain) is None and files_of(plain) == []
    assert artifact_of(old_plot) is None and files_of(old_plot) == ["/p/a.png"]
    assert artifact_of(unknown) is None
