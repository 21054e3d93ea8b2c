"""The command line contract: JSON fields, exit codes, threads across processes, defaults."""

from __future__ import annotations

import csv
import io
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import REPO
from tests.support.cli import treadwise
from tests.support.webapp import ROOMY_MATH_S

FIELDS = {"answer", "persona", "model", "temperature", "thread_id", "iterations", "llm_calls",
          "tool_calls", "artifacts", "latency_s", "usage", "stopped_by_cap", "error", "routing",
          "calls", "erased"}


def cli(*args: str, env: dict[str, str] | None = None,
        process: bool = False) -> subprocess.CompletedProcess:
    """`python -m treadwise ARGS`: in this process (tests/support/cli.py), or as a real
    process where one process handing over to another is what the test is about."""
    if not process:
        return treadwise(*args, env=env)
    return subprocess.run([sys.executable, "-m", "treadwise", *args], cwd=REPO,
                          capture_output=True, text=True, timeout=120,
                          env={**os.environ, **(env or {})})


def chat_json(*args: str, env: dict[str, str] | None = None, process: bool = False) -> dict:
    done = cli("chat", "--json", *args, env=env, process=process)
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)


def test_integral_through_the_cli(data_dir):
    data = chat_json("--model", "offline", "Calculate the integral of x² from 0 to 3",
                     env={"TREADWISE_MATH_TIMEOUT_S": str(ROOMY_MATH_S)})
    assert set(data) == FIELDS
    assert "9" in data["answer"]
    names = [call["name"] for call in data["tool_calls"]]
    assert "integrate" in names and "plot_area" in names
    assert all(set(call) == {"name", "args", "result", "error", "artifact"}
               for call in data["tool_calls"])
    found = next(call["artifact"] for call in data["tool_calls"] if call["name"] == "integrate")
    assert (found["operation"], found["exact"], found["operands"]["upper"]) == ("integrate", "9",
                                                                               "3")
    png = Path(data["artifacts"][0])
    assert png.is_file() and png.read_bytes()[:4] == b"\x89PNG"
    assert png.resolve().is_relative_to(data_dir.resolve())
    assert data["error"] is None and data["stopped_by_cap"] is False
    assert data["usage"]["input_tokens"] > 0 and data["latency_s"] > 0


def test_routing_is_a_flag_and_every_model_call_is_in_the_json():
    data = chat_json("--routing", "off", "Calculate the integral of x² from 0 to 3")
    assert data["routing"] == {"mode": "off", "toolsets": None}
    routed = chat_json("Calculate the integral of x² from 0 to 3")
    assert routed["routing"] == {"mode": "on", "toolsets": ["calculus"]}
    for turn in (data, routed):
        assert len(turn["calls"]) == turn["llm_calls"] == 2
        assert sum(c["input_tokens"] for c in turn["calls"]) == turn["usage"]["input_tokens"]
    assert routed["calls"][0]["input_tokens"] < data["calls"][0]["input_tokens"] / 3
    assert routed["calls"][0]["tools"] < data["calls"][0]["tools"]


def test_chained_arithmetic_through_the_cli():
    data = chat_json("Add 5 and 4, then give me the square of the result")
    assert "81" in data["answer"]
    assert [c["name"] for c in data["tool_calls"]] == ["add", "square"]
    assert data["iterations"] >= 2 and data["llm_calls"] >= 2


@pytest.mark.slow
def test_a_second_process_sees_the_first_turn_of_its_thread(data_dir):
    chat_json("--thread", "T1", "I'm interested in fleet services for my 12 vans, contact me",
              process=True)
    second = chat_json("--thread", "T1", "Sure, it's ana@fleetco.com", process=True)
    lead = next(c for c in second["tool_calls"] if c["name"] == "record_customer_interest")
    assert "fleet services" in lead["args"]["message"]
    # Another thread knows nothing of that request: an address alone is confirmed first.
    other = chat_json("--thread", "T2", "Sure, it's bo@fleetco.com")
    assert other["tool_calls"] == [] and "bo@fleetco.com" in other["answer"]


def test_with_no_key_the_default_model_is_offline_and_labelled():
    data = chat_json("Hello")
    assert data["model"].startswith("offline") and "rule-based" in data["model"]
    assert data["persona"] == "friendly" and data["temperature"] == 0.0


def test_a_real_provider_without_its_key_is_one_line_without_traceback():
    done = cli("chat", "--model", "openai:gpt-4o-mini", "hello")
    assert done.returncode != 0
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and "OPENAI_API_KEY" in lines[0]
    assert "Traceback" not in done.stderr + done.stdout
    as_json = cli("chat", "--json", "--model", "openai:gpt-4o-mini", "hello")
    assert as_json.returncode != 0
    assert "OPENAI_API_KEY" in json.loads(as_json.stdout)["error"]["message"]


@pytest.mark.thorough
def test_a_provider_failure_exits_1_with_json_and_no_traceback(tmp_path):
    env = {"OPENAI_API_KEY": "sk-test-unreachable", "OPENAI_BASE_URL": "http://127.0.0.1:9/v1",
           "TREADWISE_MAX_RETRIES": "0"}
    done = cli("chat", "--json", "--model", "openai:gpt-4o-mini", "hello", env=env)
    assert done.returncode == 1, done.stderr
    data = json.loads(done.stdout)
    assert data["error"]["type"] == "connection" and data["answer"] == ""
    assert "Traceback" not in done.stderr


def test_bad_arguments_exit_2():
    assert cli("chat", "--persona", "grumpy", "hi").returncode == 2
    assert cli("chat", "--temperature", "hot", "hi").returncode == 2
    assert cli("chat", "--model", "nonsense", "hi").returncode == 2
    assert cli("chat").returncode == 2


@pytest.mark.parametrize(("args", "said"), [
    (("--temperature", "5"), "The temperature must be a number from 0 to 2 (got 5.0)."),
    (("--strategy", "tree-of-thought"), "There is no strategy 'tree-of-thought'"),
    (("--routing", "maybe"), "Routing must be one of on, compact, off (got 'maybe')."),
    (("--persona", "grumpy"), "There is no persona 'grumpy'; pick one of friendly"),
])
def test_a_value_the_turn_cannot_use_is_one_line_and_exit_2(args, said):
    plain = cli("chat", *args, "hi")
    assert plain.returncode == 2 and said in plain.stderr
    assert len(plain.stderr.strip().splitlines()) == 1 and "Traceback" not in plain.stderr
    as_json = cli("chat", "--json", *args, "hi")
    assert as_json.returncode == 2 and "Traceback" not in as_json.stderr
    data = json.loads(as_json.stdout)
    assert set(data) == FIELDS and said in data["error"]["message"]


def test_input_over_the_limit_is_refused(data_dir):
    done = cli("chat", "--json", "x" * 50, env={"TREADWISE_MAX_INPUT_CHARS": "10"})
    assert done.returncode == 2
    assert json.loads(done.stdout)["error"]["type"] == "input_rejected"


def test_leads_export_neutralises_formulas(data_dir):
    chat_json("Please contact me at eve@example.com, my name is Eve, about =HYPERLINK(1)")
    done = cli("leads", "export", "--format", "csv")
    assert done.returncode == 0, done.stderr
    rows = list(csv.DictReader(io.StringIO(done.stdout)))
    assert rows and rows[0]["email"] == "eve@example.com"
    out = data_dir.parent / "leads.jsonl"
    assert cli("leads", "export", "--format", "jsonl", "--out", str(out)).returncode == 0
    assert json.loads(out.read_text().splitlines()[0])["email"] == "eve@example.com"


def test_personas_and_models_are_listed():
    personas = cli("personas").stdout
    assert "Friendly Advisor" in personas and "Cautious Helper" in personas
    models = cli("models").stdout
    assert "rule-based" in models and "openai" not in models


def test_a_fourth_persona_is_one_file(tmp_path):
    extra = tmp_path / "personas"
    extra.mkdir()
    (extra / "coach.yaml").write_text(
        "key: coach\nname: Road Coach\ndescription: Upbeat driving coach.\n"
        "style: You coach drivers with short, energetic tips.\n"
        "voice:\n  opener: ['Coach here, listen up!']\n  closer: ['Drive safe, champ!']\n")
    env = {"TREADWISE_PERSONAS_DIR": str(extra)}
    assert "Road Coach" in cli("personas", env=env).stdout
    data = chat_json("--persona", "coach", "What are your opening hours?", env=env)
    assert data["answer"].startswith("Coach here, listen up!")
    assert data["answer"].endswith("Drive safe, champ!")


def test_a_key_pasted_into_the_model_spec_is_refused_and_never_printed():
    key = "sk-pasted-into-spec-0123456789abcdef"
    done = cli("chat", "--json", "--model", f"openai:{key}", "hello",
               env={"OPENAI_API_KEY": "sk-the-real-key-0123456789"})
    assert done.returncode == 2
    assert key not in done.stdout + done.stderr and key[:12] not in done.stdout + done.stderr
    data = json.loads(done.stdout)
    assert data["model"] == "openai:[redacted]"
    assert data["error"]["type"] == "config" and "API key" in data["error"]["message"]
    plain = cli("chat", "--model", f"openai:{key}", "hello")
    assert plain.returncode == 2 and key not in plain.stdout + plain.stderr


def test_an_over_long_or_odd_model_spec_is_refused_in_one_line():
    done = cli("chat", "--json", "--model", "openai:" + "g" * 5000, "hello")
    assert done.returncode == 2
    data = json.loads(done.stdout)
    assert "5,007 characters long; the limit is 200" in data["error"]["message"]
    assert len(data["model"]) <= 60 and len(done.stdout) < 2000
    odd = json.loads(cli("chat", "--json", "--model", "openai:gpt<b>\x1b[31m", "hi").stdout)
    assert "may hold only letters" in odd["error"]["message"]
    assert "<b>" in odd["model"] and "\x1b" not in odd["model"]
