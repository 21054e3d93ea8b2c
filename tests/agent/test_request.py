"""The turn request: checked once where it is made, then taken as it is down to the provider."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.support.loopback import OpenAIServer, tool_then_answer
from treadwise.agent import Agent
from treadwise.agent.request import InvalidRequest, TurnRequest
from treadwise.models import ModelSettings
from treadwise.personas import _load_all
from treadwise.settings import Settings

HOURS = tool_then_answer("get_business_info", {"topic": "opening hours"})


@pytest.mark.parametrize(("values", "said"), [
    ({"persona": "pirate"}, "There is no persona 'pirate'; pick one of friendly, technical"),
    ({"temperature": 5.0}, "The temperature must be a number from 0 to 2 (got 5.0)."),
    ({"temperature": float("nan")}, "The temperature must be a number from 0 to 2"),
    ({"temperature": "hot"}, "The temperature must be a number from 0 to 2 (got 'hot')."),
    ({"temperature": True}, "The temperature must be a number"),
    ({"model": "openai:gpt<b>"}, "may hold only letters"),
    ({"model": "nonsense"}, "must be 'offline' or look like provider:model"),
    ({"strategy": "tree-of-thought"}, "There is no strategy 'tree-of-thought'; pick one of"),
    ({"routing": "maybe"}, "Routing must be one of on, compact, off (got 'maybe')."),
    ({"seed": "lucky"}, "Seed: input should be a valid integer"),
    ({"max_tokens": 0}, "Max tokens: input should be greater than 0."),
    ({"thread_id": ""}, "Thread id: string should have at least 1 character."),
])
def test_a_bad_value_is_one_clear_line(values, said):
    with pytest.raises(InvalidRequest) as refused:
        TurnRequest.read(**values)
    assert said in str(refused.value) and "\n" not in str(refused.value)
    assert "pydantic" not in str(refused.value) and "errors.pydantic.dev" not in str(refused.value)


def test_every_bad_value_is_named_at_once_and_a_pasted_key_never_repeated():
    key = "sk-proj-AbCdEf0123456789xyz"
    with pytest.raises(InvalidRequest) as refused:
        TurnRequest.read(persona=key, temperature=3, model=f"openai:{key}")
    said = str(refused.value)
    assert "There is no persona" in said and "temperature" in said and "API key" in said
    assert key not in said


def test_an_edge_may_offer_a_narrower_temperature_range():
    assert TurnRequest.read(temperature=1.5).settings.temperature == 1.5
    with pytest.raises(InvalidRequest, match=r"from 0 to 1 \(got 1.5\)"):
        TurnRequest.read(temperature=1.5, temperatures=(0.0, 1.0))


def test_the_persona_is_looked_up_once_where_the_request_is_made(tmp_path, data_dir):
    folder = tmp_path / "personas"
    folder.mkdir()
    (folder / "coach.yaml").write_text(
        "key: coach\nname: Road Coach\ndescription: Upbeat driving coach.\n"
        "style: You coach drivers.\nvoice:\n  opener: ['Coach here!']\n  closer: ['Drive safe!']\n")
    agent = Agent(Settings(data_dir=data_dir, personas_dir=folder))
    asked = agent.request(persona="coach", thread_id="c")
    # Nothing behind the edge looks the persona up again: with its file gone, the turn still
    # speaks as the coach.
    (folder / "coach.yaml").unlink()
    _load_all.cache_clear()
    result = agent.run("What are your opening hours?", asked)
    assert result.error is None and result.persona == "coach"
    assert result.answer.startswith("Coach here!") and result.answer.endswith("Drive safe!")
    assert "no persona 'coach'" in agent.run("Hours?", persona="coach").error.message


@pytest.mark.thorough
def test_the_requests_settings_reach_the_openai_client(data_dir, monkeypatch):
    with OpenAIServer(HOURS) as server:
        monkeypatch.setenv("OPENAI_BASE_URL", server.url + "/v1")
        monkeypatch.setenv("OPENAI_API_KEY", "sk-loopback-test-key")
        agent = Agent(Settings(data_dir=data_dir, timeout_s=10), toolsets=("business",))
        asked = agent.request(model="openai:gpt-4o-mini", temperature=0.7, seed=11,
                              max_tokens=64)
        result = agent.run("Opening hours?", asked)
        sent = list(server.requests)
    assert result.error is None and result.temperature == 0.7
    assert [(r["temperature"], r["seed"]) for r in sent] == [(0.7, 11), (0.7, 11)]
    assert {r.get("max_completion_tokens", r.get("max_tokens")) for r in sent} == {64}


def test_the_request_is_what_the_cli_json_reports(data_dir):
    request = TurnRequest.read(persona="technical", temperature=0.4, thread_id="cli-1")
    result = Agent(Settings(data_dir=data_dir)).run("What is 2 plus 2?", request)
    data = json.loads(json.dumps(result.to_json()))
    assert (data["persona"], data["temperature"], data["thread_id"]) == ("technical", 0.4,
                                                                        "cli-1")
    assert data["model"] == "offline (rule-based, not an LLM)"


def test_model_settings_are_values(tmp_path: Path):
    runtime = Settings(data_dir=tmp_path, timeout_s=3)
    asked = ModelSettings(temperature=0.2, seed=1)
    assert asked.reached_by(runtime).process is runtime
    assert asked == ModelSettings(temperature=0.2, seed=1)
    assert len({asked, ModelSettings(temperature=0.2, seed=1)}) == 1
    assert "runtime" not in asked.model_dump()
