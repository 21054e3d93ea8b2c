"""The agent loop: the cap, malformed and unknown tool calls, tool failures, memory."""

from __future__ import annotations

from langchain_core.messages import AIMessage, ToolMessage
from langchain_core.tools import ToolException, tool

from treadwise.agent import Agent, TextDelta, ToolFinished, ToolStarted, TurnFinished
from treadwise.settings import MAX_ITERATIONS, Settings
from treadwise.testing.fakes import ScriptedModel


@tool
def lookup(term: str) -> str:
    """Look a term up in the glossary."""
    return f"{term} means a thing"


@tool
def explode(term: str) -> str:
    """A tool that always fails."""
    raise RuntimeError("the glossary service is down")


@tool
def refuse(term: str) -> str:
    """A tool that rejects its input with a message for the model."""
    raise ToolException(f"{term!r} is not a glossary term")


def make_agent(data_dir, model, tools=(lookup, explode, refuse)) -> Agent:
    return Agent(Settings(data_dir=data_dir), tools=list(tools), models={"scripted": model})


def call(name: str, **args) -> AIMessage:
    return AIMessage("", tool_calls=[{"name": name, "args": args, "id": f"c-{name}",
                                      "type": "tool_call"}])


def tool_results(model: ScriptedModel, index: int) -> list[ToolMessage]:
    return [m for m in model.calls[index][0] if isinstance(m, ToolMessage)]


def test_model_that_always_wants_a_tool_is_stopped_after_five_calls(data_dir):
    model = ScriptedModel(script=[call("lookup", term="tread")])
    result = make_agent(data_dir, model).run("loop forever", model="scripted")
    assert len(model.calls) == MAX_ITERATIONS == 5
    assert result.llm_calls == 5
    assert result.stopped_by_cap is True
    assert result.answer.strip(), "the capped turn must still answer"
    assert "tread means a thing" in result.answer
    assert result.error is None
    # The fifth call is made with tools disabled; the first four may call tools.
    assert model.calls[-1][1].get("tool_choice") == "none"
    assert all(kwargs.get("tool_choice") is None for _, kwargs in model.calls[:-1])
    assert len(result.tool_calls) == 4


def test_a_normal_turn_is_not_marked_as_capped(data_dir):
    model = ScriptedModel(script=[call("lookup", term="rim"), AIMessage("A rim holds the tire.")])
    result = make_agent(data_dir, model).run("what is a rim", model="scripted")
    assert result.answer == "A rim holds the tire."
    assert result.stopped_by_cap is False
    assert (result.llm_calls, result.iterations) == (2, 2)
    assert result.tool_calls[0].public() == {"name": "lookup", "args": {"term": "rim"},
                                             "result": "rim means a thing", "error": None,
                                             "artifact": None}


def test_arguments_that_are_not_json_reach_the_model_as_an_error(data_dir):
    broken = AIMessage("", invalid_tool_calls=[{
        "name": "lookup", "args": '{"term": "tre', "id": "bad-1", "error": "not JSON",
        "type": "invalid_tool_call"}])

    def recover(messages, kwargs):
        seen = [m for m in messages if isinstance(m, ToolMessage)]
        return AIMessage(f"Recovered after: {seen[-1].content[:60]}")

    model = ScriptedModel(script=[broken, recover])
    result = make_agent(data_dir, model).run("define tread", model="scripted")
    errors = tool_results(model, 1)
    assert errors and errors[0].status == "error" and errors[0].tool_call_id == "bad-1"
    assert "could not be read" in errors[0].content
    assert result.answer.startswith("Recovered after: Error: the call to lookup")


def test_unknown_tool_name_reaches_the_model_as_an_error(data_dir):
    def recover(messages, kwargs):
        return AIMessage("Sorry, I used the wrong tool; here is my answer anyway.")

    model = ScriptedModel(script=[call("no_such_tool", x=1), recover])
    result = make_agent(data_dir, model).run("hello", model="scripted")
    seen = tool_results(model, 1)
    assert "no_such_tool is not a valid tool" in seen[0].content
    assert seen[0].status == "error"
    assert result.answer and result.tool_calls[0].error


def test_tool_exceptions_become_error_messages_not_crashes(data_dir):
    model = ScriptedModel(script=[
        AIMessage("", tool_calls=[
            {"name": "explode", "args": {"term": "a"}, "id": "e1", "type": "tool_call"},
            {"name": "refuse", "args": {"term": "b"}, "id": "r1", "type": "tool_call"},
            {"name": "lookup", "args": {"wrong_arg": 1}, "id": "l1", "type": "tool_call"},
        ]),
        AIMessage("Two tools failed and one was called wrongly."),
    ])
    result = make_agent(data_dir, model).run("go", model="scripted")
    by_id = {m.tool_call_id: m for m in tool_results(model, 1)}
    assert "RuntimeError: the glossary service is down" in by_id["e1"].content
    assert "'b' is not a glossary term" in by_id["r1"].content
    assert "term" in by_id["l1"].content and by_id["l1"].status == "error"
    assert result.answer == "Two tools failed and one was called wrongly."
    assert all(step.error for step in result.tool_calls)


def test_empty_replies_get_a_nudge_and_never_end_blank(data_dir):
    model = ScriptedModel(script=[AIMessage(""), AIMessage("Here is a real answer.")])
    result = make_agent(data_dir, model).run("hi", model="scripted")
    assert result.answer == "Here is a real answer."
    assert "previous reply was empty" in model.calls[1][0][-1].content

    always_empty = ScriptedModel(script=[AIMessage("")])
    result = make_agent(data_dir / "b", always_empty).run("hi", model="scripted")
    assert len(always_empty.calls) == MAX_ITERATIONS
    assert result.answer.strip() and result.error is None


def test_memory_is_kept_per_thread(data_dir):
    def echo_history(messages, kwargs):
        said = [m.content for m in messages if m.type == "human"]
        return AIMessage(" | ".join(said))

    model = ScriptedModel(script=[echo_history])
    agent = make_agent(data_dir, model)
    agent.run("first in A", thread_id="A", model="scripted")
    agent.run("first in B", thread_id="B", model="scripted")
    second = agent.run("second in A", thread_id="A", model="scripted")
    assert second.answer == "first in A | second in A"
    assert len(agent.history("B")) == 2


def test_iterations_reset_with_each_user_turn(data_dir):
    model = ScriptedModel(script=[call("lookup", term="x"), AIMessage("done")])
    agent = make_agent(data_dir, model)
    for _ in range(3):
        model.script[:] = [call("lookup", term="x"), AIMessage("done")]
        result = agent.run("again", thread_id="T", model="scripted")
        assert result.llm_calls == 2 and not result.stopped_by_cap


def test_undo_removes_the_last_turn(data_dir):
    model = ScriptedModel(script=[AIMessage("ok")])
    agent = make_agent(data_dir, model)
    agent.run("keep me", thread_id="U", model="scripted")
    agent.run("drop me", thread_id="U", model="scripted")
    assert agent.undo("U") == "drop me"
    assert [m.content for m in agent.history("U")] == ["keep me", "ok"]
    agent.run("after undo", thread_id="U", model="scripted")
    assert len(agent.history("U")) == 4


def test_stream_yields_tool_steps_then_the_result(data_dir):
    model = ScriptedModel(script=[call("lookup", term="tread"), AIMessage("Tread grips.")])
    agent = make_agent(data_dir, model)
    events = list(agent.stream("define", agent.request(model="scripted")))
    kinds = [type(e) for e in events]
    assert kinds.index(ToolStarted) < kinds.index(ToolFinished) < kinds.index(TurnFinished)
    finished = next(e for e in events if isinstance(e, ToolFinished)).step
    assert finished.name == "lookup" and finished.duration_s is not None
    assert any(isinstance(e, TextDelta) for e in events) or events[-1].result.answer
    assert events[-1].result.answer == "Tread grips."


def test_input_over_the_limit_is_refused_before_any_model_call(data_dir):
    model = ScriptedModel(script=[AIMessage("should not be called")])
    agent = Agent(Settings(data_dir=data_dir, max_input_chars=100), tools=[lookup],
                  models={"scripted": model})
    result = agent.run("x" * 101, model="scripted")
    assert result.error.type == "input_rejected" and "limit is 100" in result.error.message
    assert model.calls == []


def test_a_provider_exception_is_one_friendly_error_and_the_thread_survives(data_dir):
    def fail(messages, kwargs):
        raise TimeoutError("read timed out")

    model = ScriptedModel(script=[fail])
    agent = make_agent(data_dir, model)
    result = agent.run("hello", thread_id="F", model="scripted")
    assert result.error.type == "timeout" and "Traceback" not in result.error.message
    model.script[:] = [AIMessage("back again")]
    assert agent.run("still there?", thread_id="F", model="scripted").answer == "back again"
