"""Persona grading: deterministic style measures per case, and a model judging the persona's
rubric when the grid names `judge: SPEC` (k samples, counted, priced and kept in the open)."""

from __future__ import annotations

import json
import re
import statistics
from contextvars import copy_context
from dataclasses import asdict, dataclass
from itertools import combinations
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
class JudgeSample:
    """One judge request: the raw reply, the score read from it, what it cost."""

    reply: str
    score: int | None
    reason: str
    cached: bool = False
    input_tokens: int = 0
    output_tokens: int = 0
    cost_usd: float | None = None
    error: str | None = None  # the failure's type, or "no_score"


@dataclass(frozen=True)
class Verdict:
    """A case's judgement: every sample, and what the judge was shown."""

    samples: tuple[JudgeSample, ...]
    prompt: str = ""
    rubric: str = ""

    @property
    def scored(self) -> list[int]:
        return [s.score for s in self.samples if s.score is not None]

    @property
    def status(self) -> str:
        return "judge_error" if any(s.error for s in self.samples) else "ok"

    @property
    def score(self) -> int | None:
        """The samples' median (the lower middle one of an even count)."""
        return statistics.median_low(self.scored) if self.scored else None

    @property
    def reason(self) -> str:
        chosen = next((s for s in self.samples if s.score == self.score and s.score is not None),
                      None)
        return (chosen or next((s for s in self.samples if s.error), self.samples[0])).reason

    @property
    def cached(self) -> bool:
        return all(s.cached for s in self.samples)

    @property
    def agreement(self) -> float | None:
        """Share of pairs of scored samples that gave the same score (None below two)."""
        pairs = list(combinations(self.scored, 2))
        return round(sum(a == b for a, b in pairs) / len(pairs), 4) if pairs else None

    @property
    def calls(self) -> int:
        """Judge model calls made (answers from the cache cost nothing)."""
        return sum(not s.cached for s in self.samples)

    @property
    def cost_usd(self) -> float | None:
        costs = [s.cost_usd for s in self.samples if s.cost_usd is not None]
        return round(sum(costs), 8) if costs else None

    def columns(self) -> dict[str, Any]:
        """The judge's fields of a case's row."""
        return {"judge_score": self.score, "judge_reason": self.reason,
                "judge_cached": self.cached, "judge_status": self.status,
                "judge_scores": [s.score for s in self.samples],
                "judge_agreement": self.agreement, "judge_calls": self.calls,
                "judge_input_tokens": sum(s.input_tokens for s in self.samples if not s.cached),
                "judge_output_tokens": sum(s.output_tokens for s in self.samples
                                           if not s.cached),
                "judge_cost_usd": self.cost_usd}

    def record(self, model: str | None) -> dict[str, Any]:
        """The judge's part of a transcript: what it was shown and every raw reply."""
        return {"model": model, "status": self.status, "score": self.score,
                "reason": self.reason, "cached": self.cached, "agreement": self.agreement,
                "calls": self.calls, "cost_usd": self.cost_usd, "system": JUDGE_SYSTEM,
                "rubric": self.rubric, "prompt": self.prompt,
                "samples": [asdict(s) for s in self.samples]}


def reply_tokens(prompt: list[Any], reply: Any) -> tuple[int, int]:
    """A reply's token counts; estimated from the text when the provider sent none."""
    from treadwise.models.offline import estimate_tokens

    usage = getattr(reply, "usage_metadata", None)
    if usage:
        return int(usage.get("input_tokens", 0)), int(usage.get("output_tokens", 0))
    return sum(estimate_tokens(m.text) for m in prompt), estimate_tokens(reply.text)


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
    """A model that scores each case against its persona's rubric, `samples` times; every
    request it makes is counted and priced (judging is part of what a sweep costs)."""

    def __init__(self, spec: str, model: Any, *, prices: Any = None, samples: int = 1,
                 cache: Any = None):
        self.spec = spec
        self.model = model
        self.prices = prices
        self.samples = samples
        # The response cache the judge's answers go through (None: every sample is asked).
        self.cache = cache

    def _model(self, seed: int) -> Any:
        """The judge for one sample: its own seed, and its own slot in the cache (so k
        samples are k requests, and identical answers in other cases reuse them)."""
        update: dict[str, Any] = {"cache": self.cache.seeded(seed) if self.cache else False}
        if "seed" in type(self.model).model_fields:
            update["seed"] = seed
        return self.model.model_copy(update=update)

    def _ask(self, prompt: str, seed: int) -> JudgeSample:
        from langchain_core.messages import HumanMessage, SystemMessage

        from experiments.run.response_cache import start_tally
        from treadwise.errors import classify

        tally = start_tally()
        messages = [SystemMessage(JUDGE_SYSTEM), HumanMessage(prompt)]
        try:
            reply = self._model(seed).invoke(messages)
        except Exception as exc:  # noqa: BLE001 - a judge failure is recorded, not raised
            return JudgeSample("", None, f"judge failed: {classify(exc).message}",
                               error=classify(exc).type)
        tokens_in, tokens_out = reply_tokens(messages, reply)
        cached = tally.hits > 0
        score, reason = parse_verdict(reply.text)
        cost = None if self.prices is None else (
            0.0 if cached else self.prices.cost(self.spec, tokens_in, tokens_out))
        return JudgeSample(reply.text, score, reason, cached, tokens_in, tokens_out, cost,
                           None if score is not None else "no_score")

    def grade(self, persona: Any, turns: list[tuple[str, str]], seed: int = 0) -> Verdict:
        """Never raises: a judge that fails, or replies without a score, makes a verdict
        whose status is judge_error (the case's checks stand; --retry-errors judges again)."""
        prompt = judge_prompt(persona, turns)
        # Its own context: the judge's cache hits and requests are not the case's.
        samples = tuple(copy_context().run(self._ask, prompt, seed + i)
                        for i in range(self.samples))
        return Verdict(samples, prompt, persona.rubric or persona.style)
