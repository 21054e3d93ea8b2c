"""The persona's voice: phrases chosen by the kind of reply, around what the tools found.

What the tools found is read from their artifacts (tools/artifacts.py): their values, outcomes
and own words, never the text the tools gave the model.
"""

from __future__ import annotations

import random
import re
import string
from collections.abc import Sequence
from fractions import Fraction

from langchain_core.messages import ToolMessage

from treadwise.personas import DEFAULT_PERSONA, Persona, get_persona
from treadwise.privacy.consent import customer_ask
from treadwise.rules.plan import Plan
from treadwise.rules.privacy_replies import fallback
from treadwise.tools.artifacts import artifact_of, words_of
from treadwise.tools.business_results import ErasureResult, InterestResult
from treadwise.tools.math_results import Calculation, calculation_of

# Each reply kind: the voice parts around the body, in order; the first part of a tuple that
# the persona has is used. Kinds not listed get no opener or closer.
FRAMES: dict[str, tuple[tuple[str, ...], tuple[str, ...]]] = {
    "math": (("math_opener", "opener"), ("math_closer",)),
    "info": (("info_opener", "opener"), ("info_closer", "closer")),
    "recommendation": (("recommendation_opener", "opener"), ("recommendation_closer", "closer")),
    "availability": (("availability_opener", "opener"), ("availability_closer", "closer")),
}
LEAD_OUTCOMES = {"updated": "lead_updated", "already_on_file": "lead_duplicate",
                 "saved": "lead_saved"}
# Topics where a careful persona adds its safety note.
SAFETY_TOPICS = {"tire_pressure", "maintenance", "punctures"}
PRONOUNS = {"my": "your", "our": "your", "me": "you", "i": "you", "us": "you", "we": "you",
            "mine": "yours", "i'm": "you're", "we're": "you're", "i've": "you've"}


# What a customer hears instead of an internal failure (a tool's name, an exception).
CANNOT_HERE = "that isn't something I can do in this chat"
SOMETHING_WRONG = "something went wrong on my side"
# An exception's name, the word tool, a call or a snake_case name ("get_business_info").
INTERNAL_RE = re.compile(r"Traceback|\b\w+(?:Error|Exception)\b|\btools?\b|\b\w+_\w+\("
                         r"|\b[a-z]{2,}(?:_[a-z]{2,})+\b")


class _Blank(dict):
    def __missing__(self, key: str) -> str:
        return ""


class Voice:
    """Words a turn's reply in one persona's voice; temperature widens the choice of phrasing."""

    def __init__(self, persona: Persona, rng: random.Random, temperature: float):
        self.persona = persona
        self.rng = rng
        self.temperature = temperature
        self.fallback = get_persona(DEFAULT_PERSONA)

    def pick(self, *parts: str, **values: str) -> str:
        """A phrase for the first part this persona (else the default persona) has."""
        options = next((o for p in parts if (o := self.persona.phrases(p))), None) or next(
            (o for p in parts if (o := self.fallback.phrases(p))), None) or next(
            (o for p in parts if (o := fallback(p, self.persona.key))), [])
        if not options:
            return ""
        choice = options[0]
        if self.temperature > 0 and len(options) > 1 and self.rng.random() < self.temperature:
            choice = self.rng.choice(options)
        return string.Formatter().vformat(choice, (), _Blank(values)) if values else choice

    def has(self, part: str) -> bool:
        return bool(self.persona.phrases(part))

    def answer(self, plan: Plan, results: Sequence[ToolMessage], tool_names: set[str],
               capped: bool) -> str:
        if plan.reply:
            return self._reply(plan)
        errors = [m.text for m in results if m.status == "error"]
        planned = {c.tool for s in plan.steps for c in s}
        if errors:
            # A guard's refusal explains itself to models; people get its plain ask.
            problem = plain_problem(_first_sentence(errors[-1]))
            return customer_ask(errors[-1]) or self.pick("tool_failed",
                                                         problem=problem.rstrip(". "))
        if not results:
            # Customers hear what could not be done, never which tool was missing.
            if "record_feedback" in planned - tool_names:
                return self.pick("cannot_record")
            return self.pick("tool_failed", problem=CANNOT_HERE)
        if capped and len(results) < sum(len(s) for s in plan.steps):
            return self.pick("cap", summary=" ".join(words_of(m) for m in results))
        return self._compose(plan, results)

    def _reply(self, plan: Plan) -> str:
        language = plan.values.get("language")
        parts = (f"{plan.reply}.{language}", plan.reply) if language else (plan.reply or "",)
        return self.pick(*parts, **plan.values)

    def _compose(self, plan: Plan, results: Sequence[ToolMessage]) -> str:
        if plan.kind == "feedback":
            return self.pick("feedback")
        if plan.kind == "lead":
            return self._lead(plan, artifact_of(results[-1]))
        if plan.kind == "erase":
            return self._erased(artifact_of(results[-1]))
        openers, closers = FRAMES.get(plan.kind, ((), ()))
        body = self._math_body(plan, results) if plan.kind == "math" else \
            " ".join(_sentence(words_of(m)) for m in results)
        parts = [self.pick(*openers), body]
        if plan.note:
            parts.append(self.pick(plan.note))
        if plan.kind == "recommendation" or plan.remember.get("topic") in SAFETY_TOPICS:
            parts.append(self.pick("safety_note") if self.has("safety_note") else "")
        parts.append(self.pick(*closers))
        parts = [p for p in parts if p]
        # Lists from the tools read as lists; the persona's lines get their own paragraphs.
        return "\n\n".join(parts) if any("\n" in p for p in parts) else " ".join(parts)

    def _lead(self, plan: Plan, result: object) -> str:
        outcome = result.outcome if isinstance(result, InterestResult) else "saved"
        part = LEAD_OUTCOMES[outcome]
        values = {**plan.values, "topic": your(plan.values.get("topic", ""))}
        said = self.pick(part, **values)
        note = self.pick("lead_note") if self.has("lead_note") else ""
        return f"{said} {note}".strip()

    def _erased(self, result: object) -> str:
        if not isinstance(result, ErasureResult) or result.outcome != "deleted":
            return self.pick("nothing_erased")
        return self.pick("data_erased", deleted=result.deleted.rstrip("."))

    def _math_body(self, plan: Plan, results: Sequence[ToolMessage]) -> str:
        worked = [m for m in results if m.name != "plot_area"]
        plots = [m for m in results if m.name == "plot_area"]
        lines = [_math_line(m) for m in worked]
        shown = lines or [words_of(m) for m in plots]
        if self.persona.show_method:
            steps = ("; ".join(f"step {i}: {t}" for i, t in enumerate(shown, 1))
                     if len(shown) > 1 else shown[0])
            body = f"{_sentence(steps)} {self.pick('method_label')} {_sentence(plan.method)}"
        elif len(shown) > 1:
            words = ["First,", *["Then"] * (len(shown) - 2), "Finally,"]
            body = " ".join(_sentence(f"{w} {t}") for w, t in zip(words, shown, strict=True))
            body += f" So the final answer is {_final((worked or plots)[-1])}."
        else:
            body = _sentence(shown[0])
        if plots and lines:
            body = f"{body} {self.pick('plot_note')}"
        caveat = self.pick("math_caveat") if self.has("math_caveat") else ""
        return f"{body} {caveat}".strip()


def _math_line(message: ToolMessage) -> str:
    found = calculation_of(message)
    return exact_line(found) if found is not None else words_of(message)


def exact_line(found: Calculation) -> str:
    """A result over fractions shown as a fraction with its decimal: 1/3 + 1/6 = 1/2 (= 0.5)."""
    asked, value = found.asked, found.shown
    if asked and re.search(r"[/\u00f7]", asked) and re.fullmatch(r"-?\d+\.\d+", value):
        fraction = Fraction(value)
        return f"{asked} = {fraction.numerator}/{fraction.denominator} (= {value})"
    return found.statement


def your(topic: str) -> str:
    """The customer's words read back to them: "new tires for my SUV" -> "... for your SUV"."""
    return re.sub(r"\b(?:my|our|me|i|us|we|mine|i'm|we're|i've)\b",
                  lambda m: PRONOUNS[m.group(0).lower()], topic, flags=re.I)


def _final(message: ToolMessage) -> str:
    """The value a worked answer ends on: the last result as shown, else its words."""
    found = calculation_of(message)
    return found.shown if found is not None and found.shown else words_of(message)


def _sentence(text: str) -> str:
    text = text.strip()
    return text if not text or text[-1] in ".!?:" else text + "."


def plain_problem(problem: str) -> str:
    """A tool's complaint as a customer may read it: its own words ("cannot divide by zero"),
    unless they name a tool ("record_feedback") or an internal failure."""
    return SOMETHING_WRONG if INTERNAL_RE.search(problem) else problem


def _first_sentence(text: str) -> str:
    text = text.strip().removeprefix("Error:").strip()
    return text if len(text) <= 300 else text[:297] + "..."
