"""Tools reworded, nothing else changes: the offline model and the checks read what the tools
found (their typed artifacts), never the words the tools gave the model."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from experiments.define.checks import Outcome, evaluate
from experiments.define.scenarios import load_scenarios
from tests.support.webapp import ROOMY_MATH_S
from treadwise.agent import Agent
from treadwise.settings import Settings
from treadwise.tools import artifacts
from treadwise.tools.artifacts import ToolArtifact

PERSONAS = ("friendly", "technical")


def reworded(artifact: ToolArtifact) -> str:
    """Another wording of every result: its data as key=value, no sentence of the default's."""
    data = artifact.model_dump(mode="json", exclude={"statement"})
    return f"RESULT[{artifact.kind}] " + "; ".join(f"{k}={json.dumps(v)}"
                                                 for k, v in sorted(data.items()))


def sweep(root: Path) -> tuple[dict[str, list[str]], dict[str, list[tuple[str, bool]]], list]:
    """Every default scenario in two personas: the answers, the check verdicts, the steps."""
    answers, verdicts, steps = {}, {}, []
    for scenario in load_scenarios():
        for persona in PERSONAS:
            key = f"{scenario.id}/{persona}"
            case_dir = root / key
            agent = Agent(Settings(data_dir=case_dir, math_timeout_s=ROOMY_MATH_S))
            turns = [agent.run(message, thread_id="case", persona=persona)
                     for message in scenario.turns]
            answers[key] = [turn.answer for turn in turns]
            found = evaluate(scenario.checks, Outcome(list(scenario.turns), turns, case_dir))
            verdicts[key] = [(check.id, check.passed) for check in found]
            steps += [step for turn in turns for step in turn.tool_calls]
    return answers, verdicts, steps


@pytest.mark.slow  # every default scenario, twice: about a minute here
def test_rewording_the_tools_changes_no_offline_answer_and_no_check_verdict(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    answers, verdicts, plain = sweep(tmp_path / "plain")
    monkeypatch.setattr(artifacts, "for_model", reworded)
    answers_now, verdicts_now, steps = sweep(tmp_path / "reworded")
    typed = [s for s in steps if s.artifact is not None]
    # The models were given other words: every typed result reads RESULT[...], none as before.
    assert len(typed) >= 20 and all(s.result.startswith("RESULT[") for s in typed)
    assert {s.name for s in typed} >= {"add", "square", "integrate", "plot_area",
                                       "get_tire_recommendation", "check_service_availability",
                                       "record_customer_interest", "record_feedback"}
    assert answers_now == answers
    assert verdicts_now == verdicts
    assert sum(passed for found in verdicts.values() for _, passed in found) > 100
    assert not any("RESULT[" in a for found in answers_now.values() for a in found)
    # And the tools found the same things (a plot's file name is new each time).
    assert [data(s) for s in plain] == [data(s) for s in steps]


def data(step: object) -> dict | None:
    found = getattr(step, "artifact", None)
    return found.model_dump(exclude={"file"}) if found is not None else None
