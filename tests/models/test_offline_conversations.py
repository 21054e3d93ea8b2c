"""The offline model's conversational test set, run against every persona through the agent."""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from tests.support.webapp import ROOMY_MATH_S
from treadwise.agent import Agent
from treadwise.datafiles import load_yaml
from treadwise.personas import load_personas
from treadwise.settings import Settings

CASES_FILE = Path(__file__).with_name("offline_conversations.yaml")
# Read as each worker collects the tests: with libyaml, as the product reads its data files.
CASES: list[dict[str, Any]] = load_yaml(CASES_FILE.read_text(encoding="utf-8"))["cases"]
PERSONAS = ("friendly", "technical", "cautious")
# Numbers as people write them in answers: 1,048,576 and 3.75 and 1/2.
NUMBER_RE = re.compile(r"-?\d{1,3}(?:,\d{3})+(?:\.\d+)?|-?\d+(?:\.\d+)?(?:e[-+]?\d+)?")


@dataclass
class Turn:
    spec: dict[str, Any]
    answer: str
    calls: list[Any]
    error: Any
    problems: list[str] = field(default_factory=list)


def numbers(text: str) -> list[float]:
    return [float(n.replace(",", "")) for n in NUMBER_RE.findall(text)]


def states_number(answer: str, value: float) -> bool:
    return any(abs(n - value) <= 1e-6 * max(1.0, abs(value)) for n in numbers(answer))


def check(spec: dict[str, Any], answer: str, calls: list[Any]) -> list[str]:
    """What this turn got wrong, in words (empty when it behaved as expected)."""
    names = [c.name for c in calls]
    problems = []
    if "tools" in spec and names != spec["tools"]:
        problems.append(f"tools {names} != {spec['tools']}")
    if "record_feedback" not in spec.get("tools", []) and "record_feedback" in names:
        problems.append("recorded feedback")
    for key, pattern in (spec.get("args") or {}).items():
        if not any(key in c.args and re.search(str(pattern), str(c.args[key]), re.I)
                   for c in calls):
            problems.append(f"no call with {key} ~ /{pattern}/ in {[c.args for c in calls]}")
    if "number" in spec and not states_number(answer, float(spec["number"])):
        problems.append(f"answer does not state {spec['number']}")
    if "answer" in spec and not re.search(spec["answer"], answer, re.I):
        problems.append(f"answer does not match /{spec['answer']}/")
    if "not_answer" in spec and re.search(spec["not_answer"], answer, re.I):
        problems.append(f"answer matches /{spec['not_answer']}/")
    if any(c.error for c in calls):
        problems.append(f"tool errors: {[c.error for c in calls if c.error]}")
    return problems


@pytest.fixture(scope="module")
def transcripts(tmp_path_factory: pytest.TempPathFactory) -> dict[tuple[str, str], list[Turn]]:
    """Every case under every persona, run once; each persona has its own data dir."""
    runs: dict[tuple[str, str], list[Turn]] = {}
    for persona in PERSONAS:
        # What the dialogue does is under test, not the math engine's 5 s limit (which
        # tests/safemath holds): plots and integrals get room on a busy machine.
        agent = Agent(Settings(data_dir=tmp_path_factory.mktemp(f"conversations-{persona}"),
                               math_timeout_s=ROOMY_MATH_S))
        for case in CASES:
            turns = []
            for spec in case["turns"]:
                result = agent.run(str(spec["say"]), persona=persona,
                                   thread_id=f"{persona}-{case['id']}")
                turn = Turn(spec, result.answer, result.tool_calls, result.error)
                turn.problems = check(spec, result.answer, result.tool_calls)
                if result.error is not None or not result.answer.strip():
                    turn.problems.append(f"no answer ({result.error})")
                turns.append(turn)
            runs[(persona, case["id"])] = turns
    return runs


def test_the_set_is_big_multi_turn_and_typed_like_people_type() -> None:
    assert len(CASES) >= 150
    assert sum(len(c["turns"]) > 1 for c in CASES) >= 40
    followups = [t for c in CASES for t in c["turns"] if t.get("followup")]
    assert len(followups) >= 20
    said = [str(t["say"]) for c in CASES for t in c["turns"]]
    assert sum(s == s.lower() for s in said) >= 80
    assert sum(not re.search(r"[.?!]$", s) for s in said) >= 80
    assert len({c["id"] for c in CASES}) == len(CASES)
    assert set(PERSONAS) <= set(load_personas())


@pytest.mark.parametrize("case", CASES, ids=[c["id"] for c in CASES])
def test_conversation(case: dict[str, Any], transcripts) -> None:
    failures = []
    for persona in PERSONAS:
        for n, turn in enumerate(transcripts[(persona, case["id"])], 1):
            if turn.problems:
                failures.append(f"{persona} turn {n} {turn.spec['say']!r}: "
                                f"{'; '.join(turn.problems)}\n    answer: {turn.answer[:300]!r}")
    assert not failures, "\n".join(failures)


def test_no_wrong_numeric_answer(transcripts) -> None:
    """An answer may say it cannot; it may never state a different result."""
    wrong = []
    for (persona, case_id), turns in transcripts.items():
        for turn in turns:
            if "number" not in turn.spec:
                continue
            expected = float(turn.spec["number"])
            stated = turn.answer.rsplit("=", 1)[-1] if "=" in turn.answer else ""
            if numbers(stated) and not states_number(turn.answer, expected):
                wrong.append(f"{persona}/{case_id}: {turn.answer[:120]!r}")
    assert not wrong, wrong


def test_the_pending_question_is_answered_in_follow_ups(transcripts) -> None:
    followups = [turn for turns in transcripts.values() for turn in turns
                 if turn.spec.get("followup")]
    answered = [turn for turn in followups if not turn.problems]
    assert len(followups) >= 60
    assert len(answered) / len(followups) >= 0.95, [
        (t.spec["say"], t.problems) for t in followups if t.problems]


def test_small_talk_logs_nothing(transcripts) -> None:
    small = [(key, turn) for key, turns in transcripts.items() for turn in turns
             if next(c for c in CASES if c["id"] == key[1])["category"] == "smalltalk"
             and turn.spec.get("tools") == []]
    assert len(small) >= 60
    assert not [key for key, turn in small if turn.calls]
