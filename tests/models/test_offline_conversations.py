"""The offline model's conversational test set, run against every persona through the agent.

The quick run meets every case once, under one persona in turn (each persona gets a third of
the cases and some of every category); the whole suite also runs each case under the other
two personas, with the same checks. What the persona changes is the voice of an answer, so the
quick third catches a broken case or category, and the rest catches a persona's own slip."""

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


def persona_of(index: int) -> str:
    """The persona the quick run asks the case at this index under."""
    return PERSONAS[index % len(PERSONAS)]


# (persona, case) pairs: each case under its persona in turn, then under the other two.
ROTATED = [(persona_of(i), case) for i, case in enumerate(CASES)]
OTHERS = [(persona, case) for i, case in enumerate(CASES) for persona in PERSONAS
          if persona != persona_of(i)]


def run_cases(pairs: list[tuple[str, dict[str, Any]]], folder: pytest.TempPathFactory,
              label: str) -> dict[tuple[str, str], list[Turn]]:
    """Every pair run once, a thread each; each persona has its own data dir."""
    agents: dict[str, Agent] = {}
    runs: dict[tuple[str, str], list[Turn]] = {}
    for persona, case in pairs:
        if persona not in agents:
            # What the dialogue does is under test, not the math engine's 5 s limit (which
            # tests/safemath holds): plots and integrals get room on a busy machine.
            agents[persona] = Agent(Settings(
                data_dir=folder.mktemp(f"conversations-{label}-{persona}"),
                math_timeout_s=ROOMY_MATH_S))
        turns = []
        for spec in case["turns"]:
            result = agents[persona].run(str(spec["say"]), persona=persona,
                                         thread_id=f"{persona}-{case['id']}")
            turn = Turn(spec, result.answer, result.tool_calls, result.error)
            turn.problems = check(spec, result.answer, result.tool_calls)
            if result.error is not None or not result.answer.strip():
                turn.problems.append(f"no answer ({result.error})")
            turns.append(turn)
        runs[(persona, case["id"])] = turns
    return runs


@pytest.fixture(scope="module")
def rotated(tmp_path_factory: pytest.TempPathFactory) -> dict[tuple[str, str], list[Turn]]:
    return run_cases(ROTATED, tmp_path_factory, "rotated")


@pytest.fixture(scope="module")
def others(tmp_path_factory: pytest.TempPathFactory) -> dict[tuple[str, str], list[Turn]]:
    return run_cases(OTHERS, tmp_path_factory, "others")


def failures(runs: dict[tuple[str, str], list[Turn]]) -> list[str]:
    return [f"{persona} turn {n} {turn.spec['say']!r}: {'; '.join(turn.problems)}\n"
            f"    answer: {turn.answer[:300]!r}"
            for (persona, _), turns in runs.items()
            for n, turn in enumerate(turns, 1) if turn.problems]


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


def test_the_quick_third_gives_every_persona_every_category_and_the_rest_completes_it() -> None:
    categories = {case["category"] for case in CASES}
    for persona in PERSONAS:
        assert {case["category"] for p, case in ROTATED if p == persona} == categories, persona
    asked = sorted((persona, case["id"]) for persona, case in ROTATED + OTHERS)
    assert asked == sorted((persona, case["id"]) for case in CASES for persona in PERSONAS)


@pytest.mark.parametrize("case", CASES, ids=[c["id"] for c in CASES])
def test_conversation(case: dict[str, Any], rotated) -> None:
    persona = persona_of(CASES.index(case))
    problems = failures({(persona, case["id"]): rotated[(persona, case["id"])]})
    assert not problems, "\n".join(problems)


def wrong_numbers(transcripts: dict[tuple[str, str], list[Turn]]) -> list[str]:
    """Answers stating a result other than the case's (an answer may say it cannot)."""
    wrong = []
    for (persona, case_id), turns in transcripts.items():
        for turn in turns:
            if "number" not in turn.spec:
                continue
            expected = float(turn.spec["number"])
            stated = turn.answer.rsplit("=", 1)[-1] if "=" in turn.answer else ""
            if numbers(stated) and not states_number(turn.answer, expected):
                wrong.append(f"{persona}/{case_id}: {turn.answer[:120]!r}")
    return wrong


def follow_ups_answered(transcripts: dict[tuple[str, str], list[Turn]], at_least: int) -> None:
    followups = [turn for turns in transcripts.values() for turn in turns
                 if turn.spec.get("followup")]
    answered = [turn for turn in followups if not turn.problems]
    assert len(followups) >= at_least
    assert len(answered) / len(followups) >= 0.95, [
        (t.spec["say"], t.problems) for t in followups if t.problems]


def small_talk_logs_nothing(transcripts: dict[tuple[str, str], list[Turn]],
                            at_least: int) -> None:
    small = [(key, turn) for key, turns in transcripts.items() for turn in turns
             if next(c for c in CASES if c["id"] == key[1])["category"] == "smalltalk"
             and turn.spec.get("tools") == []]
    assert len(small) >= at_least
    assert not [key for key, turn in small if turn.calls]


def test_no_wrong_numeric_answer(rotated) -> None:
    """An answer may say it cannot; it may never state a different result."""
    wrong = wrong_numbers(rotated)
    assert not wrong, wrong


def test_the_pending_question_is_answered_in_follow_ups(rotated) -> None:
    follow_ups_answered(rotated, 20)


def test_small_talk_logs_nothing(rotated) -> None:
    small_talk_logs_nothing(rotated, 20)


@pytest.mark.slow
def test_every_conversation_under_the_other_two_personas(others) -> None:
    """Every case under the two personas the quick run did not ask it under: each turn's
    checks, no wrong number, follow-ups answered and small talk logging nothing."""
    assert len(others) == len(OTHERS)
    problems = failures(others)
    assert not problems, "\n".join(problems)
    wrong = wrong_numbers(others)
    assert not wrong, wrong
    follow_ups_answered(others, 40)
    small_talk_logs_nothing(others, 40)
