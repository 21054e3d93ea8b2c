"""Agent.stream's promise: a failed or stopped turn leaves the thread's memory as it was."""

from __future__ import annotations

import threading

import pytest
from langchain_core.messages import AIMessage

from tests.agent.test_graph import call, make_agent
from treadwise.agent import Agent, TextDelta, ToolStarted, TurnFinished
from treadwise.testing.fakes import ScriptedModel


def timeout(messages, kwargs) -> AIMessage:
    raise TimeoutError("read timed out")


@pytest.fixture
def agent(data_dir) -> tuple[Agent, ScriptedModel]:
    model = ScriptedModel(script=[AIMessage("First answer.")])
    agent = make_agent(data_dir, model)
    agent.run("Keep me", thread_id="T", model="scripted")
    return agent, model


def memory(agent: Agent, thread: str = "T") -> list[tuple[str, str]]:
    return [(m.type, str(m.content)) for m in agent.history(thread)]


def test_a_turn_read_to_its_end_is_kept(agent):
    agent, model = agent
    model.script[:] = [AIMessage("Second answer.")]
    events = list(agent.stream("Keep me too", agent.request(thread_id="T", model="scripted")))
    assert events[-1].result.error is None
    assert memory(agent)[-2:] == [("human", "Keep me too"), ("ai", "Second answer.")]


def test_a_failed_turn_leaves_memory_as_it_was(agent):
    agent, model = agent
    before = agent.history("T")
    model.script[:] = [call("lookup", term="tread"), timeout]
    result = agent.run("This one fails after a tool call", thread_id="T", model="scripted")
    assert result.error is not None and result.error.type == "timeout"
    assert [m.id for m in agent.history("T")] == [m.id for m in before]
    model.script[:] = [AIMessage("Back again.")]
    assert agent.run("Still there?", thread_id="T", model="scripted").answer == "Back again."
    assert memory(agent) == [("human", "Keep me"), ("ai", "First answer."),
                             ("human", "Still there?"), ("ai", "Back again.")]


def test_a_failed_first_turn_leaves_no_thread(data_dir):
    agent = make_agent(data_dir, ScriptedModel(script=[timeout]))
    assert agent.run("Hello?", thread_id="new", model="scripted").error is not None
    assert agent.history("new") == []


@pytest.mark.parametrize("stop_at", [ToolStarted, TurnFinished])
def test_closing_the_stream_early_is_a_stop_that_leaves_memory_as_it_was(agent, stop_at):
    agent, model = agent
    before = memory(agent)
    model.script[:] = [call("lookup", term="tread"), AIMessage("Tread is the rubber.")]
    stream = agent.stream("Stop me", agent.request(thread_id="T", model="scripted"))
    for event in stream:
        if isinstance(event, stop_at):
            break
    stream.close()
    assert memory(agent) == before
    model.script[:] = [AIMessage("Fresh start.")]
    assert agent.run("Next question", thread_id="T", model="scripted").answer == "Fresh start."
    assert memory(agent)[:2] == before and len(memory(agent)) == 4


def test_a_stop_while_the_model_is_still_answering_takes_effect_when_it_returns(agent):
    """The web worker closes the stream only between events: the model call in flight ends
    first, and then nothing of the turn stays."""
    agent, model = agent
    before = memory(agent)
    entered, release = threading.Event(), threading.Event()

    def slow(messages, kwargs) -> AIMessage:
        entered.set()
        assert release.wait(30)
        return AIMessage("Too late.")

    model.script[:] = [slow]
    stream = agent.stream("Slow one", agent.request(thread_id="T", model="scripted"))
    seen: list[object] = []
    worker = threading.Thread(target=lambda: seen.append(next(stream)))
    worker.start()
    assert entered.wait(30)
    release.set()
    worker.join(30)
    assert isinstance(seen[0], TextDelta | TurnFinished)
    stream.close()
    assert memory(agent) == before
