"""Lean requests: routed tools, the compact prompt, and the per-call records of a turn."""

from __future__ import annotations

import pytest
from langchain_core.messages import AIMessage, SystemMessage

from tests.support.loopback import OpenAIServer, Reply, scripted
from tests.support.webapp import ROOMY_MATH_S
from treadwise.agent import Agent
from treadwise.agent.prompts import build_system_prompt
from treadwise.agent.routing import GROUPS, route_turn
from treadwise.agent.strategies import strategy_names
from treadwise.personas import get_persona
from treadwise.settings import Settings
from treadwise.testing.fakes import ScriptedModel

ARITHMETIC = set(GROUPS["arithmetic"])
BUSINESS = set(GROUPS["business"])
EVERY_TOOL = ARITHMETIC | BUSINESS | set(GROUPS["calculus"])


def call(name: str, **args) -> AIMessage:
    return AIMessage("", tool_calls=[{"name": name, "args": args, "id": f"c-{name}",
                                      "type": "tool_call"}])


def bound(model: ScriptedModel, index: int) -> set[str]:
    return {tool["function"]["name"] for tool in model.calls[index][1].get("tools") or []}


def system_text(model: ScriptedModel, index: int) -> str:
    return next(m.text for m in model.calls[index][0] if isinstance(m, SystemMessage))


@pytest.fixture
def agent(data_dir) -> Agent:
    # Answers are under test here, not the math engine's 5 s limit (tests/safemath holds it):
    # with six workers on two cores an integral and its plot were starved past it.
    return Agent(Settings(data_dir=data_dir, math_timeout_s=ROOMY_MATH_S))


def test_a_sum_binds_the_arithmetic_tools_and_a_tire_question_the_business_ones(agent):
    model = ScriptedModel(script=[AIMessage("Noted.")])
    agent.injected_models["scripted"] = model
    math = agent.run("What is 7 times 8?", model="scripted")
    agent.run("Which tires suit an SUV in the snow?", model="scripted")
    assert bound(model, 0) == ARITHMETIC
    assert bound(model, 1) == BUSINESS
    assert math.routing == {"mode": "on", "toolsets": ["arithmetic"]}


class UngroundedModel(ScriptedModel):
    """A model that turns the grounding guard off, as a study's baseline arm does."""

    grounding: str = "off"


def test_a_tool_outside_the_bound_ones_still_runs_and_widens_the_next_call(agent):
    # Numbers nobody typed would be refused by the grounding guard (tests/agent/
    # test_argument_grounding.py); this test is about routing, so the guard is off.
    model = UngroundedModel(script=[call("add", a=2, b=3), AIMessage("It is 5.")])
    agent.injected_models["scripted"] = model
    result = agent.run("What are your opening hours?", model="scripted")
    assert bound(model, 0) == BUSINESS
    assert result.tool_calls[0].name == "add" and result.tool_calls[0].error is None
    assert "5" in result.tool_calls[0].result
    assert bound(model, 1) == BUSINESS | ARITHMETIC
    assert [c.toolsets for c in result.calls.per_call] == [["business"],
                                                           ["arithmetic", "business"]]
    # The first call is told which tools it was not given, so it can still ask for one.
    assert "multiply" in system_text(model, 0) and "get_business_info" not in \
        system_text(model, 0).rpartition("call one by name")[2]


def test_a_short_reply_keeps_the_tools_of_the_message_before(agent):
    model = ScriptedModel(script=[AIMessage("Which city are you in?")])
    agent.injected_models["scripted"] = model
    agent.run("Add 5 and 4", model="scripted", thread_id="t")
    agent.run("yes please", model="scripted", thread_id="t")
    assert bound(model, 1) == ARITHMETIC


def test_routing_off_binds_every_tool_and_puts_the_business_profile_in_the_prompt(agent):
    model = ScriptedModel(script=[AIMessage("Noted.")])
    agent.injected_models["scripted"] = model
    off = agent.run("What is 7 times 8?", model="scripted", routing="off")
    agent.run("What is 7 times 8?", model="scripted", routing="compact")
    agent.run("What is 7 times 8?", model="scripted", routing="on")
    assert bound(model, 0) == bound(model, 1) == EVERY_TOOL
    assert "$25 per tire" in system_text(model, 0)
    assert "$25 per tire" not in system_text(model, 1)
    assert len(system_text(model, 2)) < len(system_text(model, 0)) / 3
    assert off.routing == {"mode": "off", "toolsets": None}
    assert off.calls.per_call[0].toolsets is None and off.calls.per_call[0].tools == 20


def test_an_unknown_routing_mode_is_a_clear_error_not_a_crash(agent):
    result = agent.run("hi", routing="sideways")
    assert result.error is not None and "on, compact, off" in result.error.message


def test_the_compact_prompt_keeps_the_voice_and_rules_and_leaves_the_facts_to_the_tools():
    friendly, technical = (build_system_prompt(get_persona(k)) for k in ("friendly", "technical"))
    assert "get_business_info" in friendly and "I can't take card details here" in friendly
    assert "Founded in 2016" not in friendly and "7:00-19:00" not in friendly
    assert "Opening hours" in friendly  # the topics the tool answers are named
    assert get_persona("friendly").style.split("\n")[0] in friendly
    # Stable first: everything up to the persona is the same for every persona.
    shared = friendly.split("You are the Friendly Advisor")[0]
    assert len(shared) > 1000 and technical.startswith(shared)


def test_a_fourth_persona_file_gets_the_compact_prompt_without_code(tmp_path, monkeypatch):
    (tmp_path / "coach.yaml").write_text("name: Tire Coach\ndescription: Brisk.\n"
                                         "style: You talk like a sports coach.\n")
    monkeypatch.setenv("TREADWISE_PERSONAS_DIR", str(tmp_path))
    prompt = build_system_prompt(get_persona("coach"))
    assert "You are the Tire Coach. You talk like a sports coach." in prompt


def test_follow_ups_and_formulas_route_where_the_offline_model_would_go():
    assert route_turn("on", "Denver", "Do you offer tire rotation?").groups == {"business"}
    assert route_turn("on", "what about from 0 to 6?",
                      "integrate x^2 from 0 to 3").groups >= {"calculus"}
    assert route_turn("on", "x + 3 = 10").groups == {"calculus"}
    assert route_turn("on", "hi").groups == {"business"}
    assert route_turn("off", "What is 7 times 8?").groups is None


def test_every_call_is_recorded_with_its_tokens_and_the_bytes_it_sent(data_dir, monkeypatch):
    usage = {"prompt_tokens": 321, "completion_tokens": 12, "total_tokens": 333}
    brain = scripted(Reply(tool_calls=[{"name": "get_business_info", "args": {"topic": "hours"}}],
                           usage=usage),
                     Reply(text="We open at 8.", usage=usage))
    agent = Agent(Settings(data_dir=data_dir, timeout_s=10))
    with OpenAIServer(brain) as server:
        monkeypatch.setenv("OPENAI_BASE_URL", server.url + "/v1")
        monkeypatch.setenv("OPENAI_API_KEY", "sk-loopback-test-key")
        result = agent.run("When do you open on Saturday?", model="openai:gpt-4o-mini")
        off = agent.run("When do you open on Saturday?", model="openai:gpt-4o-mini",
                        routing="off")
    records = result.calls.per_call
    assert [r.request_bytes for r in records + off.calls.per_call] == server.sizes
    assert [(r.input_tokens, r.output_tokens) for r in records] == [(321, 12), (321, 12)]
    assert not any(r.usage_estimated for r in records)
    assert max(server.sizes[:2]) < min(server.sizes[2:]) / 2.5
    calls = result.to_json()["calls"]
    assert calls[0] == {"stage": "reason", "toolsets": ["business"], "tools": 6,
                        "input_tokens": 321, "output_tokens": 12,
                        "request_bytes": server.sizes[0], "usage_estimated": False}


@pytest.mark.parametrize("strategy", strategy_names())
def test_every_strategy_answers_with_routed_tools(agent, strategy):
    result = agent.run("Calculate the integral of x² from 0 to 3", strategy=strategy)
    assert result.error is None and "9" in result.answer
    assert "integrate" in [step.name for step in result.tool_calls]
    assert len(result.calls.per_call) == result.llm_calls
    assert all(r.toolsets == ["calculus"] and r.tools == len(GROUPS["calculus"])
               for r in result.calls.per_call)


def test_groups_without_tools_here_are_not_claimed_and_none_left_binds_everything(data_dir):
    model = ScriptedModel(script=[AIMessage("Noted.")])
    agent = Agent(Settings(data_dir=data_dir), toolsets=("math",), models={"scripted": model})
    web = agent.run("Search the web for the latest news on 7 times 8", model="scripted")
    hours = agent.run("What are your opening hours?", model="scripted")
    assert web.routing["toolsets"] == ["arithmetic"]
    assert hours.routing["toolsets"] is None and bound(model, 1) == EVERY_TOOL - BUSINESS
