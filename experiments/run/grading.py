"""Persona grading: deterministic style measures per case, and a model judging the persona's
rubric when the grid names `judge: SPEC` (its answers cached like any model response)."""

from __future__ import annotations

import json
import re
from contextvars import copy_context
from dataclasses import dataclass
from typing import Any

from experiments.define.checks import NUMBER_RE

HEDGES = ("might", "may", "perhaps", "possibly", "probably", "likely", "could", "seems",
          "appears", "generally", "typically", "usually", "approximately", "roughly",
          "i think", "i believe", "not sure", "it depends", "in most cases", "can vary",
          "may vary", "we recommend checking", "please double-check", "please verify")
HEDGE_RE = re.compile(r"\b(" + "|".join(re.escape(h) for h in HEDGES) + r")\b", re.IGNORECASE)
UNIT_RE = re.compile(
    r"(\$\s?\d[\d,]*(\.\d+)?|\d[\d,]*(\.\d+)?\s?(%|percent|psi|mm|cm|km/h|km|kph|mph|miles?|"
    r"inch(es)?|in\b|\"|°\s?[CF]?|degrees?|hours?|hrs?|minutes?|mins?|days?|weeks?|months?|"
    r"years?|lbs?|pounds?|kg|usd|dollars?|am\b|pm\b|sq\.?\s?units?|units?))",
    re.IGNORECASE)
STYLE_COLUMNS = ("hedges", "questions", "numbers", "units")
JUDGE_SYSTEM = (
    "You grade how well a customer-service assistant keeps to its persona. Read the persona, "
    "its rubric and the conversation, then reply with JSON only, exactly like "
    '{"score": 4, "reason": "one short sentence"}. The score is a whole number from 1 (ignores '
    "the persona) to 5 (the persona throughout). Judge tone and manner, not factual accuracy.")
SCORE_RE = re.compile(r"score\W{0,6}([1-5])\b", re.IGNORECASE)


def style(answers: list[str]) -> dict[str, int]:
    """Counts in the assistant's answers a reader notices when personas differ."""
    text = "\n".join(answers)
    return {"hedges": len(HEDGE_RE.findall(text)), "questions": text.count("?"),
            "numbers": len(NUMBER_RE.findall(text)), "units": len(UNIT_RE.findall(text))}


@dataclass(frozen=True)
class Verdict:
    score: int | None
    reason: str
    cached: bool = False


def judge_prompt(persona: Any, turns: list[tuple[str, str]]) -> str:
    rubric = persona.rubric or persona.style
    lines = [f"Persona: {persona.name} - {persona.description}", "", "Rubric:", rubric.strip(),
             "", "Conversation:"]
    for user, answer in turns:
        lines += [f"Customer: {user}", f"Assistant: {answer or '(no answer)'}"]
    return "\n".join(lines)


def parse_verdict(text: str) -> tuple[int | None, str]:
    """(score 1-5, reason) from the judge's reply; JSON first, then a "score: N" phrase."""
    match = re.search(r"\{.*\}", text, re.DOTALL)
    if match:
        try:
            data = json.loads(match.group(0))
            score = data.get("score")
            if isinstance(score, int | float) and 1 <= score <= 5 and float(score).is_integer():
                return int(score), " ".join(str(data.get("reason", "")).split())[:300]
        except (ValueError, AttributeError):
            pass
    if found := SCORE_RE.search(text):
        return int(found.group(1)), " ".join(text.split())[:300]
    return None, "the judge's reply had no score: " + " ".join(text.split())[:200]


class Judge:
    """A model that scores each case against its persona's rubric."""

    def __init__(self, spec: str, model: Any):
        self.spec = spec
        self.model = model

    def _ask(self, prompt: str) -> tuple[str, int]:
        from langchain_core.messages import HumanMessage, SystemMessage

        from experiments.run.response_cache import start_tally

        tally = start_tally()
        reply = self.model.invoke([SystemMessage(JUDGE_SYSTEM), HumanMessage(prompt)])
        return reply.text, tally.hits

    def grade(self, persona: Any, turns: list[tuple[str, str]]) -> Verdict:
        """Never raises: a judge that fails says so in the reason, with no score."""
        from treadwise.errors import classify

        prompt = judge_prompt(persona, turns)
        try:
            # Its own context: the judge's cache hits are not the case's.
            text, hits = copy_context().run(self._ask, prompt)
        except Exception as exc:  # noqa: BLE001 - a judge failure must not lose the case
            return Verdict(None, f"judge failed: {classify(exc).message}")
        score, reason = parse_verdict(text)
        return Verdict(score, reason, hits > 0)
