"""Strategies through their graphs: stages in order, the budget held however the model
misbehaves, a non-empty answer, and every strategy on the offline model."""

from __future__ import annotations

import json
import re

import pytest
from langchain_core.messages import AIMessage, SystemMessage
from langchain_core.tools import ToolException, tool

from tests.conftest import REPO
from tests.support.cli import treadwise
from tests.support.webapp import loopback_client
from treadwise.agent import Agent, StageFinished, TextDelta
from treadwise.agent.strategies import get_strategy, strategy_names
from treadwise.settings import Settings
from treadwise.testing.fakes import ScriptedModel

STAGES = {"Stage: plan.": "plan", "Stage: act.": "act", "Stage: validate.": "validate",
          "Stage: write.": "write", "Stage: think.": "think",
          "Stage: attempt (tools).": "attempt-react",
          "Stage: attempt (step by step).": "attempt-steps",
          "Stage: attempt (program).": "attempt-program",
          "Stage: self-correction.": "correct"}


@tool
def lookup(term: str) -> str:
    """Look a term up in the glossary."""
    return f"{term} means 81"


def stage_of(messages) -> str:
    system = next(m.text for m in messages if isinstance(m, SystemMessage))
    return next((name for marker, name in STAGES.items() if marker in system), "react")


def by_stage(**replies):
    """A scripted model answering each stage from its own queue (the last reply repeats)."""
    queues = {stage: list(items) for stage, items in replies.items()}

    def answer(messages, kwargs):
        queue = queues[stage_of(messages).replace("-", "_")]
        item = queue.pop(0) if len(queue) > 1 else queue[0]
        return item(messages) if callable(item) else item

    return ScriptedModel(script=[answer])


def seen(model: ScriptedModel) -> list[str]:
    """The stage of every call the model received, in order."""
    return [stage_of(messages) for messages, _ in model.calls]


def call(name: str = "lookup", **args) -> AIMessage:
    return AIMessage("", tool_calls=[{"name": name, "args": args or {"term": "tread"},
                                      "id": f"c-{name}", "type": "tool_call"}])


BROKEN = AIMessage("", invalid_tool_calls=[{"name": "lookup", "args": '{"term": "tr',
                                            "id": None, "error": "not JSON",
                                            "type": "invalid_tool_call"}])
EMPTY = AIMessage("")


def run(data_dir, model, strategy: str, tools=(lookup,), message="What does tread mean?",
        **settings):
    agent = Agent(Settings(data_dir=data_dir, **settings), tools=list(tools),
                  models={"scripted": model})
    return agent.run(message, model="scripted", strategy=strategy)


def stage_names(result) -> list[str]:
    return [stage["name"] for stage in result.strategy["stages"]]


def assert_budget_held(result, model, strategy: str, budget: int | None = None) -> None:
    budget = budget or get_strategy(strategy).budget
    assert len(model.calls) <= budget and result.llm_calls == len(model.calls)
    assert result.error is None and result.answer.strip()
    # A hosted model never receives the offline model's stage keyword.
    assert all("stage" not in kwargs for _, kwargs in model.calls)


def test_the_strategies_are_registered_with_their_budgets():
    # The default first, then by name: the same from a checkout and once installed.
    assert strategy_names()[:4] == ["react", "plan-verify", "self-consistency", "think-write"]
    assert [get_strategy(n).budget for n in strategy_names()[:4]] == [5, 8, 10, 5]
    with pytest.raises(ValueError, match="unknown strategy"):
        get_strategy("tree-of-thought")


def test_plan_verify_runs_its_stages_in_order(data_dir):
    model = by_stage(plan=[AIMessage("Problem type: other\nPlan: lookup(term=tread)")],
                     act=[call(), AIMessage("Tread means 81.")],
                     validate=[AIMessage("VERDICT: OK")],
                     write=[AIMessage("Tread is the part of the tire that means 81.")])
    result = run(data_dir, model, "plan-verify")
    assert seen(model) == ["plan", "act", "act", "validate", "write"]
    assert stage_names(result) == ["plan", "act", "validate", "write"]
    assert result.answer == "Tread is the part of the tire that means 81."
    assert [step.name for step in result.tool_calls] == ["lookup"]
    assert result.llm_calls == 5 and not result.stopped_by_cap
    assert result.strategy["budget"] == 8


def test_plan_verify_sends_a_wrong_draft_back_once(data_dir):
    model = by_stage(plan=[AIMessage("Plan: lookup")], act=[AIMessage("Tread means 80.")],
                     validate=[AIMessage("VERDICT: REVISE the tool said 81")],
                     write=[AIMessage("Tread means 81.")])
    result = run(data_dir, model, "plan-verify")
    assert stage_names(result) == ["plan", "act", "validate", "act", "validate", "write"]
    revise = [m for m in model.calls[3][0] if "found a problem" in m.text]
    assert revise and "the tool said 81" in revise[0].text
    assert result.answer == "Tread means 81."


def test_plan_verify_holds_its_budget_when_every_stage_misbehaves(data_dir):
    model = by_stage(plan=[EMPTY], act=[BROKEN, call(), EMPTY, call()],
                     validate=[AIMessage("I think so? maybe")], write=[EMPTY])
    result = run(data_dir, model, "plan-verify")
    assert_budget_held(result, model, "plan-verify")
    assert len(model.calls) == 8 and result.stopped_by_cap
    assert "tread means 81" in result.answer  # the fallback reports what the tools found


def test_think_write_thinks_with_tools_then_writes(data_dir):
    model = by_stage(think=[AIMessage("I should look tread up.", tool_calls=call().tool_calls),
                            AIMessage("The glossary says 81; enough to answer.")],
                     write=[AIMessage("Tread means 81, says our glossary.")])
    result = run(data_dir, model, "think-write")
    assert seen(model) == ["think", "think", "write"]
    assert stage_names(result) == ["think", "think", "write"]
    assert result.strategy["stages"][0]["tools"] == ["lookup"]
    assert result.answer == "Tread means 81, says our glossary."
    # The writer sees the thoughts as private notes; memory keeps no thought.
    notes = model.calls[2][0][-1].text
    assert "I should look tread up." in notes and "enough to answer" in notes
    agent_messages = [m.text for m in model.calls[2][0] if m.type == "ai"]
    assert all("look tread up" not in text for text in agent_messages)


def test_think_write_holds_its_budget_when_every_stage_misbehaves(data_dir):
    model = by_stage(think=[call(), BROKEN, EMPTY], write=[EMPTY])
    result = run(data_dir, model, "think-write")
    assert_budget_held(result, model, "think-write")
    assert len(model.calls) == 5 and result.stopped_by_cap


PROGRAM = AIMessage("```python\na = 5 + 4\nb = a**2\nb\n```")
# A program's numbers must be the customer's (the grounding guard refuses invented ones).
CHAINED = "What does tread mean, and what is 5 + 4, squared?"


def test_self_consistency_attempts_vote_and_write(data_dir):
    model = by_stage(plan=[AIMessage("Problem type: arithmetic\nPlan: add, square\n"
                                     "Approach: program")],
                     attempt_react=[call(), AIMessage("It means 81.\nFinal answer: 81")],
                     attempt_steps=[AIMessage("Step 1: 5 + 4 = 9\nStep 2: 81\nFinal answer: 81")],
                     attempt_program=[PROGRAM],
                     write=[AIMessage("The answer is 81.")])
    result = run(data_dir, model, "self-consistency", message=CHAINED)
    # The planner's favourite approach goes first.
    assert seen(model) == ["plan", "attempt-program", "attempt-react", "attempt-react",
                          "attempt-steps", "write"]
    assert stage_names(result) == ["plan", "attempt", "attempt", "attempt", "vote", "write"]
    attempts = result.strategy["attempts"]
    # Only answers a tool or a program produced count: the step-by-step one is kept aside.
    assert [(a["approach"], a["answer"]) for a in attempts] == [
        ("program", "81"), ("react", "81"), ("steps", None)]
    assert attempts[2]["unbacked"] == "81"
    assert result.strategy["vote"] == {"counts": {"81": 2}, "winner": "81", "majority": True,
                                       "attempts": 3}
    program = next(step for step in result.tool_calls if step.name == "run_program")
    assert program.result.endswith("Result: 81")  # run in the real math sandbox
    # Attempts are independent: the steps attempt saw no other attempt's work.
    steps_prompt = model.calls[4][0]
    assert not [m for m in steps_prompt if m.type in ("tool", "ai")]
    assert result.answer == "The answer is 81."


def test_self_consistency_corrects_once_without_a_majority(data_dir):
    model = by_stage(plan=[AIMessage("Problem type: arithmetic")],
                     attempt_react=[call(), AIMessage("It means 81.\nFinal answer: 81")],
                     attempt_steps=[AIMessage("Final answer: 79")],
                     attempt_program=[AIMessage("```python\na = 5 * 4 * 4\na\n```")],
                     correct=[AIMessage("The glossary attempt is right.\nFinal answer: 81")],
                     write=[AIMessage("It is 81.")])
    result = run(data_dir, model, "self-consistency", message=CHAINED)
    assert stage_names(result) == ["plan", "attempt", "attempt", "attempt", "vote", "correct",
                                   "write"]
    vote = result.strategy["vote"]
    assert vote["counts"] == {"81": 1, "80": 1} and vote["majority"] is False
    assert vote["corrected"] == "81"
    listing = model.calls[5][0][-1].text
    assert "Attempt 1 (react): answer 81" in listing and "Attempt 3 (program): answer 80" in listing
    assert "Attempt 2 (steps): answer none\n(It stated 79" in listing
    assert result.answer == "It is 81."


@tool
def calculate(expression: str) -> str:
    """Evaluate an expression."""
    raise ToolException("the number is too large to compute: it would have more than 10^488 "
                        "digits (the limit is 10,000 digits); try a smaller number")


def test_a_vote_counts_no_number_read_from_an_error_or_a_correction(data_dir):
    """Issue 27: `Calculate 2^3^4^5` got the vote "10000", from "the limit is 10,000 digits"."""
    model = by_stage(plan=[AIMessage("Problem type: arithmetic\nApproach: react")],
                     attempt_react=[call("calculate", expression="2^3^4^5"),
                                    AIMessage("The number is too large: the limit is 10,000 "
                                              "digits.")],
                     attempt_steps=[AIMessage("Step 1: it is huge.\nFinal answer: 10000")],
                     attempt_program=[AIMessage("```python\nimport math\n```")],
                     correct=[AIMessage("The tool attempt points to 10000.\n"
                                        "Final answer: 10000")],
                     write=[AIMessage("That number is too large to compute.")])
    result = run(data_dir, model, "self-consistency", tools=(calculate,))
    vote = result.strategy["vote"]
    assert vote["counts"] == {} and vote["winner"] is None and vote["corrected"] is None
    assert [a["answer"] for a in result.strategy["attempts"]] == [None, None, None]
    assert result.strategy["attempts"][0]["unbacked"] == "10000"


def test_the_offline_model_refuses_a_number_too_large_under_self_consistency(data_dir):
    agent = Agent(Settings(data_dir=data_dir), toolsets=("math", "business"))
    result = agent.run("Calculate 2^3^4^5", strategy="self-consistency")
    assert result.strategy["vote"]["counts"] == {}
    assert "10000" not in json.dumps(result.strategy["vote"])
    assert "too large to compute" in result.answer and "10,000 digits" in result.answer


def test_self_consistency_holds_its_budget_when_every_stage_misbehaves(data_dir):
    model = by_stage(plan=[AIMessage("asdf qwerty")], attempt_react=[call(), BROKEN, EMPTY],
                     attempt_steps=[EMPTY], attempt_program=[AIMessage("rm -rf /")],
                     correct=[AIMessage("no idea")], write=[EMPTY])
    result = run(data_dir, model, "self-consistency")
    assert_budget_held(result, model, "self-consistency")
    assert result.strategy["vote"]["majority"] is False


def test_self_consistency_k_approaches_and_budget_are_settings(data_dir):
    model = by_stage(plan=[AIMessage("Problem type: arithmetic")],
                     attempt_program=[PROGRAM], write=[AIMessage("81.")])
    result = run(data_dir, model, "self-consistency", message=CHAINED, consistency_k=5,
                 consistency_approaches=("program",), consistency_budget=5)
    # plan + 2 attempts leave the two reserved calls (correction, write) untouched
    assert [a["approach"] for a in result.strategy["attempts"]] == ["program", "program"]
    assert_budget_held(result, model, "self-consistency", budget=5)
    assert result.strategy["budget"] == 5


@pytest.mark.parametrize("strategy", ["react", "plan-verify", "think-write", "self-consistency"])
def test_every_strategy_runs_on_the_offline_model(data_dir, strategy):
    agent = Agent(Settings(data_dir=data_dir), toolsets=("math", "business"))
    asked = agent.request(model="offline", strategy=strategy, persona="technical")
    events = list(agent.stream("Add 5 and 4, then square the result", asked))
    result = events[-1].result
    assert result.error is None and "81" in result.answer
    assert result.llm_calls <= get_strategy(strategy).budget
    streamed = "".join(e.text for e in events if isinstance(e, TextDelta))
    assert streamed.strip() == result.answer.strip()
    stages = [e.stage for e in events if isinstance(e, StageFinished)]
    if strategy == "react":
        assert result.strategy is None and not stages
    else:
        assert stages == result.strategy["stages"]
    if strategy == "think-write":
        # Thoughts are shown as stages, never mixed into the answer.
        thoughts = [s["text"] for s in stages if s["name"] == "think"]
        assert len(thoughts) == 3 and "Next I call add" in thoughts[0]
        assert all(text not in result.answer for text in thoughts)


def test_memory_carries_across_strategies(data_dir):
    agent = Agent(Settings(data_dir=data_dir), toolsets=("business",))
    agent.run("I'm interested in fleet services, please contact me", thread_id="M",
              strategy="think-write")
    second = agent.run("Sure, it's ana@fleetco.com", thread_id="M", strategy="plan-verify")
    lead = next(s for s in second.tool_calls if s.name == "record_customer_interest")
    assert "fleet" in lead.args["message"] and lead.error is None
    assert [m.type for m in agent.history("M")].count("human") == 2


def test_self_consistency_from_the_command_line(data_dir):
    done = treadwise("chat", "--strategy", "self-consistency", "--json",
                     "Add 5 and 4, then square the result")
    assert done.returncode == 0, done.stderr
    data = json.loads(done.stdout)
    assert "81" in data["answer"] and data["error"] is None
    strategy = data["strategy"]
    # The step-by-step answer is stated but does not count: no tool or program produced it.
    assert [(a["answer"], a.get("unbacked")) for a in strategy["attempts"]] == [
        ("81", None), (None, "81"), ("81", None)]
    assert {a["approach"] for a in strategy["attempts"]} == {"react", "steps", "program"}
    assert strategy["vote"]["winner"] == "81" and strategy["vote"]["majority"] is True
    assert data["llm_calls"] <= strategy["budget"]


def test_the_chat_tab_runs_the_picked_strategy_and_shows_its_stages(data_dir):

    from tests.support.webapp import chat_text, serve_in_process

    settings = Settings(data_dir=data_dir)
    with serve_in_process(settings) as url:
        client = loopback_client(url)
        chatbot, *_ = client.predict("Add 5 and 4, then square the result", "technical",
                                     "offline", "", 0.0, "think-write", api_name="/send")
    titles = [(m.get("metadata") or {}).get("title") or "" for m in chatbot]
    thoughts = [t for t in titles if t.startswith("Thought (private")]
    assert len(thoughts) == 3 and "Tool: add \u00b7 = 9" in titles and "Stage: write" in titles
    # The thoughts come before the tool they led to, and the answer comes last.
    assert titles.index(thoughts[0]) < titles.index("Tool: add \u00b7 = 9")
    answer = chat_text(chatbot[-1:])
    assert "81" in answer and "The customer asks" not in answer


def test_the_docs_show_each_strategy_graph_as_compiled(data_dir):
    blocks = re.findall(r"```mermaid\n(.*?)```", (REPO / "docs" / "agent.md").read_text(), re.S)
    agent = Agent(Settings(data_dir=data_dir), tools=[lookup])
    names = ["react", "plan-verify", "think-write", "self-consistency"]
    assert len(blocks) == len(names)
    for name, block in zip(names, blocks, strict=True):
        shown = {(a, b, arrow == "-.->")
                 for a, arrow, b in re.findall(r"(\w+) (-->|-\.->) (\w+);", block)}
        compiled = {(e.source, e.target, e.conditional)
                    for e in agent.graph_for(name).get_graph().edges}
        assert shown == compiled, name


@pytest.mark.parametrize("strategy", ["plan-verify", "think-write", "self-consistency"])
def test_a_provider_failure_in_any_stage_is_one_friendly_error(data_dir, strategy):
    def fail(messages, kwargs):
        if stage_of(messages) != "plan":
            raise TimeoutError("read timed out")
        return AIMessage("Problem type: arithmetic")

    model = ScriptedModel(script=[fail])
    agent = Agent(Settings(data_dir=data_dir), tools=[lookup], models={"scripted": model})
    result = agent.run("hello", thread_id="F", model="scripted", strategy=strategy)
    assert result.error.type == "timeout" and not result.answer
    model.script[:] = [AIMessage("Final answer: back again")]
    again = agent.run("still there?", thread_id="F", model="scripted", strategy=strategy)
    assert again.error is None and "back again" in again.answer


def test_an_unknown_strategy_is_a_clear_error_before_any_model_call(data_dir):
    model = ScriptedModel(script=[AIMessage("never")])
    result = run(data_dir, model, "tree-of-thought")
    assert result.error.type == "config" and "no strategy 'tree-of-thought'" in result.error.message
    assert model.calls == []


def test_the_offline_model_runs_a_strategy_deterministically(data_dir):
    agent = Agent(Settings(data_dir=data_dir), toolsets=("math",))
    first, second = (agent.run("What is 12 times 7, then add 6?", strategy="self-consistency")
                     for _ in range(2))
    assert first.answer == second.answer and "90" in first.answer
    assert first.strategy["attempts"] == second.strategy["attempts"]


@pytest.mark.thorough
def test_a_hosted_model_never_receives_the_stage_keyword(data_dir, monkeypatch):
    from tests.support.loopback import OpenAIServer, Reply, scripted

    with OpenAIServer(scripted(Reply(text="VERDICT: OK. Final answer: 81"))) as server:
        monkeypatch.setenv("OPENAI_BASE_URL", server.url + "/v1")
        monkeypatch.setenv("OPENAI_API_KEY", "sk-loopback-strategies")
        agent = Agent(Settings(data_dir=data_dir, timeout_s=5), tools=[lookup])
        result = agent.run("What does tread mean?", model="openai:gpt-4o-mini",
                           strategy="plan-verify")
    assert result.error is None and result.answer
    assert len(server.requests) == result.llm_calls == 4
    assert all("stage" not in body for body in server.requests)


def test_a_question_that_is_not_math_gets_one_attempt_and_a_real_answer(data_dir):
    agent = Agent(Settings(data_dir=data_dir), toolsets=("business",))
    result = agent.run("Do you sell motorcycle tires?", strategy="self-consistency")
    assert [a["approach"] for a in result.strategy["attempts"]] == ["react"]
    assert "skipped" in result.strategy["vote"] and "correct" not in stage_names(result)
    assert "passed it on" in result.answer and "couldn't work" not in result.answer
    checked = agent.run("Do you sell motorcycle tires?", strategy="plan-verify")
    assert stage_names(checked).count("validate") == 1 and checked.llm_calls == 5
