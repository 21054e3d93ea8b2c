"""The offline model's answers to strategy stages (plan, act, validate, think, write, attempts,
self-correction), worked out from its own rule-based reading of the question, deterministically."""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass
from fractions import Fraction
from typing import Any, Protocol

from langchain_core.messages import AIMessage, BaseMessage, ToolMessage

from treadwise.conversation import current_turn, stage_of
from treadwise.rules.dialogue import result_of
from treadwise.rules.next_step import read_turn
from treadwise.rules.plan import PREVIOUS, Call, Plan
from treadwise.tools.artifacts import words_of


class Answerer(Protocol):
    """What the stages need of the offline model: its ordinary turn step, its replies, its voice."""

    def respond_turn(self, messages: list[BaseMessage], tools: list[dict],
                     tool_choice: str | None) -> AIMessage: ...

    def message(self, messages: list[BaseMessage], text: str, calls: list[Call]) -> AIMessage: ...

    def voice(self, human: str, position: int) -> Any: ...

CALCULUS = {"integral", "derivative", "equation", "analysis", "plot", "limit"}
BUSINESS = {"business", "tires", "service", "lead", "privacy", "secret"}
# Exact arithmetic the rule-based model can do "in its head" for step-by-step attempts.
MENTAL: dict[str, tuple[str, Callable[..., Fraction]]] = {
    "add": ("{a} + {b}", lambda a, b: a + b),
    "subtract": ("{a} - {b}", lambda a, b: a - b),
    "multiply": ("{a} × {b}", lambda a, b: a * b),
    "divide": ("{a} ÷ {b}", lambda a, b: a / b),
    "square": ("{x}²", lambda x: x * x),
}
PROGRAM = {"add": "{a} + {b}", "subtract": "{a} - {b}", "multiply": "{a} * {b}",
           "divide": "{a} / {b}", "power": "{base} ** {exponent}", "square": "{x} ** 2",
           "square_root": "sqrt({x})"}
ATTEMPT_LINE_RE = re.compile(r"^Attempt \d+ \((\w+)\): answer (.+)$", re.MULTILINE)
AGREED_RE = re.compile(r"Agreed answer:\s*\n(.+)", re.IGNORECASE)
DRAFT_RE = re.compile(r"Draft answer:\s*\n(.*?)(?:\n\n[A-Z][\w ]*:\n|\Z)", re.DOTALL)


@dataclass
class Reading:
    """What the model understands of a stage prompt: the question, its plan, this turn's work."""

    model: Answerer
    messages: list[BaseMessage]  # the prompt without the stage's material
    material: str
    plan: Plan
    human: str

    @property
    def results(self) -> list[ToolMessage]:
        return [m for m in current_turn(self.messages) if isinstance(m, ToolMessage)]

    def voice(self) -> Any:
        return self.model.voice(self.human, 0)


def read(model: Answerer, messages: list[BaseMessage]) -> Reading:
    material = "\n\n".join(m.text for m in messages if stage_of(m))
    own = [m for m in messages if not stage_of(m)]
    human, _, plan = read_turn(own)
    return Reading(model, own, material, plan, human)


def respond(model: Answerer, stage: str, messages: list[BaseMessage], tools: list[dict],
            tool_choice: str | None) -> AIMessage:
    """The reply to one stage prompt, as an AIMessage from the model."""
    reading = read(model, messages)
    handler = STAGES.get(stage)
    if handler is None:  # act, attempt-react: the model's usual tool-using turn
        return model.respond_turn(reading.messages, tools, tool_choice)
    reply = handler(reading, tools, tool_choice)
    return reply if isinstance(reply, AIMessage) else model.message(messages, reply, [])


def problem_type(plan: Plan) -> str:
    if plan.intent == "arithmetic":
        return "arithmetic"
    if plan.intent in CALCULUS:
        return "calculus"
    return "business" if plan.intent in BUSINESS else "other"


def describe(call: Call) -> str:
    args = ", ".join(f"{k}={'the previous result' if v == PREVIOUS else v!r}"
                     for k, v in call.args.items())
    return f"{call.tool}({args})"


def _plan(reading: Reading, tools: list[dict], tool_choice: str | None) -> str:
    steps = [" and ".join(describe(c) for c in step) for step in reading.plan.steps]
    kind = problem_type(reading.plan)
    return (f"Problem type: {kind}\n"
            f"Plan: {', then '.join(steps) if steps else 'answer directly, no tool needed'}\n"
            f"Approach: {'react' if steps else 'steps'}\n"
            "Check: the answer states what the last tool returned")


def _validate(reading: Reading, tools: list[dict], tool_choice: str | None) -> str:
    good = [m for m in reading.results if m.status != "error"]
    if not good:
        return "VERDICT: OK - no tool result to check the draft against."
    if problem_type(reading.plan) not in ("arithmetic", "calculus"):
        return "VERDICT: OK - the draft reports what the tools returned."
    expected = result_of(good[-1])
    match = DRAFT_RE.search(reading.material)
    draft = (match.group(1) if match else reading.material).replace(",", "")
    if expected is None or re.search(rf"(?<![\d.]){re.escape(expected)}(?![\d])", draft):
        return f"VERDICT: OK - the draft states the tool's result {expected or ''}".rstrip()
    return f"VERDICT: REVISE - the draft does not state the tool's result {expected}."


def _think(reading: Reading, tools: list[dict], tool_choice: str | None) -> AIMessage | str:
    step = reading.model.respond_turn(reading.messages, tools, tool_choice)
    done = [words_of(m) for m in reading.results]
    if step.tool_calls:
        calls = ", ".join(describe(Call(c["name"], c["args"])) for c in step.tool_calls)
        seen = f" So far: {'; '.join(done)}." if done else ""
        kind = problem_type(reading.plan)
        thought = (f"The customer asks: \"{reading.human.strip()[:200]}\". This is "
                   f"{'an' if kind[0] in 'aeiou' else 'a'} {kind} question.{seen} "
                   f"Next I call {calls}.")
        return step.model_copy(update={"content": thought})
    if done:
        return f"I have what I need: {'; '.join(done)}. Time to write the reply."
    return "No tool is needed for this; I can answer directly."


def _write(reading: Reading, tools: list[dict], tool_choice: str | None) -> AIMessage | str:
    agreed = AGREED_RE.search(reading.material)
    programs = any(m.name == "run_program" for m in reading.results)
    if agreed is None or (reading.results and not programs):
        return reading.model.respond_turn(reading.messages, tools, "none")
    voice = reading.voice()
    value = agreed.group(1).split(" (")[0].strip()
    body = ("I couldn't work this out reliably: my independent tries did not agree."
            if value.startswith("none") else f"The answer is {value}.")
    return " ".join(p for p in (voice.pick("opener"), body, voice.pick("closer")) if p)


def _mental(steps: list[list[Call]]) -> list[tuple[str, Fraction]] | None:
    lines: list[tuple[str, Fraction]] = []
    for step in steps:
        if len(step) != 1 or step[0].tool not in MENTAL:
            return None
        shape, compute = MENTAL[step[0].tool]
        try:
            args = {k: lines[-1][1] if v == PREVIOUS else Fraction(str(v))
                    for k, v in step[0].args.items()}
            value = compute(**args)
        except (IndexError, ValueError, ZeroDivisionError, TypeError):
            return None
        lines.append((f"{shape.format(**{k: _show(v) for k, v in args.items()})} = "
                      f"{_show(value)}", value))
    return lines or None


def _show(value: Fraction) -> str:
    return str(value.numerator) if value.denominator == 1 else f"{float(value):.10g}"


def _steps(reading: Reading, tools: list[dict], tool_choice: str | None) -> str:
    lines = _mental(reading.plan.steps) if reading.plan.intent == "arithmetic" else None
    if not lines:
        return ("This needs a tool: I can't work it out reliably step by step.\n"
                "Final answer: none")
    steps = "\n".join(f"Step {i}: {text}." for i, (text, _) in enumerate(lines, 1))
    return f"{steps}\nFinal answer: {_show(lines[-1][1])}"


def _program(reading: Reading, tools: list[dict], tool_choice: str | None) -> str:
    lines: list[str] = []
    for i, step in enumerate(reading.plan.steps, 1):
        if len(step) != 1 or step[0].tool not in PROGRAM or reading.plan.intent != "arithmetic":
            return "I can't write a short program for this.\nFinal answer: none"
        args = {k: f"r{i - 1}" if v == PREVIOUS else v for k, v in step[0].args.items()}
        lines.append(f"r{i} = {PROGRAM[step[0].tool].format(**args)}")
    if not lines:
        return "There is nothing to compute here.\nFinal answer: none"
    return "```python\n" + "\n".join([*lines, f"r{len(lines)}"]) + "\n```"


def _correct(reading: Reading, tools: list[dict], tool_choice: str | None) -> str:
    found = ATTEMPT_LINE_RE.findall(reading.material)
    # Answers backed by a tool or the sandbox are trusted over mental arithmetic.
    backed = [a for kind, a in found if kind in ("react", "program") and a != "none"]
    other = [a for _, a in found if a != "none"]
    pool = backed or other
    if not pool:
        return "None of the attempts reached an answer, and I can't find one.\nFinal answer: none"
    answer = Counter(pool).most_common(1)[0][0]
    return (f"The attempts that used a tool or the sandbox point to {answer}; I trust those.\n"
            f"Final answer: {answer}")


STAGES: dict[str, Callable[[Reading, list[dict], str | None], AIMessage | str]] = {
    "plan": _plan,
    "validate": _validate,
    "think": _think,
    "write": _write,
    "attempt-steps": _steps,
    "attempt-program": _program,
    "correct": _correct,
}
