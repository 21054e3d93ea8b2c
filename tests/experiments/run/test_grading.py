"""Persona grading: style measures per case, and a judge model scoring each persona's rubric."""

from __future__ import annotations

import json

import pytest

from experiments.analyse.report import write_report
from experiments.define.scenarios import DEFAULT_SCENARIOS
from experiments.run.grading import parse_verdict, style
from experiments.store.results_file import RESULTS_FILE, read_rows
from tests.experiments.run.test_runner import HOURS, openai_env, sweep, write_grid
from tests.support.loopback import OpenAIServer, Reply
from treadwise.personas import get_persona


def test_style_counts_hedges_questions_numbers_and_units():
    measures = style(["It might take about 45 minutes, and pressure is usually 35 psi.",
                      "Could you tell me your city? Or your e-mail?"])
    assert measures == {"hedges": 3, "questions": 2, "numbers": 2, "units": 2}
    assert style([""]) == {"hedges": 0, "questions": 0, "numbers": 0, "units": 0}


@pytest.mark.parametrize(("reply", "score"), [
    ('{"score": 4, "reason": "Warm throughout."}', 4),
    ('Sure! ```json\n{"score": 2, "reason": "Too terse"}\n```', 2),
    ("Score: 5. Very careful.", 5),
    ('{"score": 9, "reason": "off the scale"}', None),
    ("I cannot grade this.", None),
])
def test_judge_replies_are_read_leniently_but_never_invented(reply, score):
    got, reason = parse_verdict(reply)
    assert got == score and reason


def test_a_judge_over_loopback_scores_every_case_and_is_cached(tmp_path, monkeypatch):
    judged: list[dict] = []

    def judge(request: dict) -> Reply:
        system, prompt = (m["content"] for m in request["messages"][:2])
        assert "You grade how well" in system
        judged.append(request)
        score = 5 if "Cautious Helper" in prompt else 3
        return Reply(text=json.dumps({"score": score, "reason": f"graded {score}"}))

    with OpenAIServer(judge) as server:
        openai_env(monkeypatch, server)
        scenarios = {"file": str(DEFAULT_SCENARIOS), "ids": ["info_hours", "lead_two_turn"]}
        grid = write_grid(tmp_path, personas=["friendly", "cautious"], judge="openai:judge",
                          scenarios=scenarios)
        run_dir, lines = sweep(grid, tmp_path / "out")
        assert any("judge: openai:judge" in line for line in lines)
        assert len(judged) == 4
        again, _ = sweep(grid, tmp_path / "out")
        assert len(judged) == 4  # the same answers are not judged twice
    rubric = get_persona("cautious").rubric
    assert any(rubric.splitlines()[0] in r["messages"][1]["content"] for r in judged)
    lead = next(r for r in judged if "ana@fleetco.com" in r["messages"][1]["content"])
    assert "Customer: Sure, it's ana@fleetco.com" in lead["messages"][1]["content"]
    rows = read_rows(run_dir / RESULTS_FILE)
    assert {(r["persona"], r["judge_score"]) for r in rows} == {("friendly", "3"),
                                                                ("cautious", "5")}
    assert all(r["judge_reason"].startswith("graded") and r["judge_cached"] == "False"
               for r in rows)
    assert all(r["judge_cached"] == "True" for r in read_rows(again / RESULTS_FILE))
    text = write_report(run_dir, charts=False).read_text()
    assert "| judge score (1-5) | cautious | 2 | 2 | 5.00 | too few scenarios |" in text


def test_a_judge_that_fails_leaves_the_case_intact(tmp_path, monkeypatch):
    with OpenAIServer(lambda request: Reply(status=400)) as server:
        openai_env(monkeypatch, server)
        grid = write_grid(tmp_path, [HOURS], judge="openai:judge", max_retries=0)
        run_dir, _ = sweep(grid, tmp_path / "out")
    (row,) = read_rows(run_dir / RESULTS_FILE)
    assert row["status"] == "ok" and row["judge_score"] == ""
    assert row["judge_reason"].startswith("judge failed: The model provider refused")


@pytest.mark.thorough
def test_without_a_judge_the_personas_are_compared_on_style(tmp_path):
    scenarios = {"file": str(DEFAULT_SCENARIOS), "ids": ["info_hours", "tires_suv_snow",
                                                         "service_rotation_austin"]}
    grid = write_grid(tmp_path, personas=["friendly", "technical", "cautious"],
                      scenarios=scenarios)
    run_dir, _ = sweep(grid, tmp_path / "out")
    rows = read_rows(run_dir / RESULTS_FILE)
    assert all(r["judge_score"] == "" and r["hedges"].isdigit() for r in rows)
    text = write_report(run_dir, charts=False).read_text()
    assert "## Persona style" in text and "| hedging words | cautious |" in text
