"""Tool arguments held to the conversation: each argument of a known tool has a kind, and a
value of that kind must appear in the conversation or follow from it by a declared rule.

`KINDS` declares the built-in tools' arguments (a plugin's tool registers its own with
`declare`; a tool nobody declared is not held, its arguments are its own business).
`unfounded(tool, args, evidence)` lists what a call invented; `choices(kind, evidence)` is
what a grammar may let a model write for an argument of that kind.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from treadwise import profile
from treadwise.evidence import expressions, numbers
from treadwise.evidence.conversation import DEFAULT_USAGE, Evidence

_MATH = {"expression": "expression", "variable": "variable"}
KINDS: dict[str, dict[str, str]] = {
    **{name: {"a": "number", "b": "number"}
       for name in ("add", "subtract", "multiply", "divide")},
    "power": {"base": "number", "exponent": "exponent"},
    "square": {"x": "number"},
    "square_root": {"x": "number"},
    "calculate": {"expression": "expression"},
    "integrate": {**_MATH, "lower": "bound", "upper": "bound"},
    "differentiate": {**_MATH, "order": "order"},
    "solve_equation": {"equation": "expression", "variable": "variable"},
    "analyze_function": dict(_MATH),
    "limit": {**_MATH, "point": "bound"},
    "plot_area": {**_MATH, "lower": "bound", "upper": "bound"},
    "run_program": {"program": "program"},
    "get_business_info": {"topic": "topic"},
    "get_tire_recommendation": {"vehicle_type": "vehicle", "usage": "usage"},
    "check_service_availability": {"location": "place", "service_type": "service"},
    "record_customer_interest": {"email": "email", "name": "name", "message": "request",
                                 "replaces": "earlier_email"},
    "record_feedback": {"question": "words"},
}
# How each kind is named to people when a value of it cannot be found.
DESCRIBED = {"number": "the number", "exponent": "the exponent", "bound": "the bound",
             "order": "the order",
             "expression": "the expression", "variable": "the variable",
             "program": "the program", "topic": "the topic", "vehicle": "the vehicle",
             "usage": "the kind of driving", "place": "the city", "service": "the service",
             "email": "the e-mail address", "earlier_email": "the earlier e-mail address",
             "name": "the name", "request": "the detail", "words": "the question"}
# Marks a tool result the grounding guard wrote instead of running the tool.
REFUSAL_KEY = "treadwise_grounding"
# A grammar lists at most this many values of one argument (numbers derived by the rules).
MAX_HELD = 48
# The lead request's facts: quantities, vehicles, places and services must be the customer's.
_WORD = re.compile(r"[0-9a-z]+")


def declare(tool: str, **kinds: str) -> None:
    """Hold a (plugin's) tool's arguments to the conversation:
    ``declare("quote", qty="number")``."""
    KINDS[tool] = dict(kinds)


@dataclass(frozen=True)
class Unfounded:
    """One argument value the conversation does not hold."""

    argument: str
    kind: str
    value: str  # what the call wrote (or the part of it that is invented)

    def describe(self) -> str:
        """"the city 'Tulsa'", "the number 2.5"."""
        return f"{DESCRIBED.get(self.kind, 'the value')} {self.value!r}" \
            if self.kind not in ("number", "exponent", "bound", "order") else \
            f"{DESCRIBED[self.kind]} {self.value}"


def unfounded(tool: str, args: Mapping[str, Any], evidence: Evidence) -> list[Unfounded]:
    """The values of this call that neither appear in the conversation nor follow from it by a
    declared rule (numbers.py); empty for a grounded call or an undeclared tool."""
    kinds = KINDS.get(tool, {})
    missing: list[Unfounded] = []
    for argument, value in args.items():
        kind = kinds.get(argument)
        if kind is None:
            continue
        missing += [Unfounded(argument, kind, part) for part in _invented(kind, value, evidence)]
    return missing


def _invented(kind: str, value: Any, evidence: Evidence) -> list[str]:
    """The parts of one value that are not grounded (empty when all of it is)."""
    if value is None or value == "" and kind in ("name", "earlier_email", "bound"):
        return []
    if kind in ("number", "exponent", "bound", "order"):
        return _invented_number(kind, value, evidence)
    text = str(value)
    if kind in ("expression", "program"):
        return expressions.missing_symbols(text, evidence) if kind == "expression" \
            else [t for t in _numbers_in(text) if not evidence.holds_number(float(t))]
    check = {"variable": lambda: text in (*expressions.variables(evidence), "x"),
             "place": lambda: evidence.holds_place(text),
             "service": lambda: evidence.holds_service(text),
             "vehicle": lambda: evidence.holds_vehicle(text),
             "usage": lambda: evidence.holds_usage(text),
             "email": lambda: evidence.holds_email(text),
             "earlier_email": lambda: evidence.holds_email(text),
             "name": lambda: evidence.says(text),
             "topic": lambda: _topic_ok(text, evidence),
             "words": lambda: bool(_WORD.findall(text.casefold())),
             "request": lambda: True}.get(kind)
    if kind == "request":
        return request_facts(text, evidence)
    return [] if check is None or check() else [text]


def _numbers_in(text: str) -> list[str]:
    # Digits inside a name (r1, x2) are part of the name, not a number.
    return re.findall(r"(?<![\w.])\d+(?:\.\d+)?", text)


def _invented_number(kind: str, value: Any, evidence: Evidence) -> list[str]:
    found = numbers.number_of(value)
    if found is None:
        if kind == "bound" and isinstance(value, str):
            return expressions.missing_symbols(value, evidence)
        return [] if kind == "order" and value is None else [str(value)]
    if kind == "order":
        return [] if found in numbers.orders(evidence.text) else [_shown(found)]
    held = evidence.holds_operand if kind == "number" else evidence.holds_number
    return [] if held(found) else [_shown(found)]


def _shown(value: float) -> str:
    return str(numbers.as_json(value))


def _topic_ok(topic: str, evidence: Evidence) -> bool:
    """A business topic in the customer's words, or the profile section their words ask about."""
    if evidence.says(topic) or any(w in _WORD.findall(evidence.text.casefold())
                                   for w in _WORD.findall(topic.casefold()) if len(w) > 3):
        return True
    business = profile.load_business_profile()
    asked, looked_up = business.find_section(evidence.latest), business.find_section(topic)
    if looked_up is None:
        return False
    # "Is hello@treadwise.example the right address?" is about the section that holds it.
    shown = looked_up.render().casefold()
    return looked_up == asked or any(e.casefold() in shown for e in evidence.emails)


def request_facts(text: str, evidence: Evidence) -> list[str]:
    """The facts of a lead's request the customer never gave: its numbers, vehicles, places and
    services must all be theirs (the wording may be the model's)."""
    invented = [t for t in _numbers_in(text) if not evidence.holds_number(float(t))]
    catalogue, coverage = profile.load_tire_catalogue(), profile.load_coverage()
    cleaned = profile.clean_text(text)
    invented += [cleaned[start:end] for vocabulary, known in (
        (catalogue.vehicles, evidence.vehicles), (coverage.services, evidence.services),
        (coverage.places, evidence.places), (coverage.other_places, evidence.places))
        for name, _, start, end in vocabulary.find_spans(text) if name not in known]
    return list(dict.fromkeys(invented))


def choices(kind: str, evidence: Evidence) -> list[Any] | None:
    """The values a grammar lets a model write for an argument of this kind (a list), or None
    when the kind is held by a pattern (`pattern`) instead; [] means none can be grounded."""
    grounded = [numbers.as_json(v) for v in evidence.numbers]
    listed: dict[str, Any] = {
        "number": [numbers.as_json(v) for v in evidence.operands],
        "exponent": grounded,
        "order": sorted(numbers.orders(evidence.text)),
        "bound": [None, *grounded, *(n for n in expressions.names(evidence)
                                     if n in ("pi", "oo", "e"))],
        "variable": list(dict.fromkeys([*expressions.variables(evidence), "x"])),
        "place": list(evidence.places),
        "service": [*evidence.service_labels(), "any"],
        "vehicle": list(evidence.vehicles),
        "usage": list(dict.fromkeys([*evidence.usages, DEFAULT_USAGE])),
        "email": list(evidence.emails),
        "earlier_email": ["", *evidence.emails],
        "name": ["", *evidence.names],
    }
    return listed.get(kind)


def held_values(tool: str, evidence: Evidence) -> dict[str, list[Any]]:
    """For each argument of a declared tool whose kind lists its values, the grounded values
    a grammar may let a model write (none listed: the argument is left to the guard)."""
    held: dict[str, list[Any]] = {}
    for argument, kind in KINDS.get(tool, {}).items():
        listed = choices(kind, evidence)
        # No name given is a grounded name too: the empty one.
        if listed and (kind in ("name", "earlier_email") or any(v not in (None, "")
                                                                for v in listed)):
            held[argument] = listed[:MAX_HELD]
    return held


def pattern(kind: str, evidence: Evidence) -> str | None:
    """A regular expression holding a free-text argument to the conversation's own symbols
    (expressions) or words (topics, questions, a lead's request); None for other kinds."""
    if kind == "expression":
        return expressions.grammar_pattern(evidence)
    if kind in ("topic", "words", "request"):
        words = [w for w in evidence.words() if '"' not in w and "\\" not in w]
        if not words:
            return None
        most = {"topic": 5, "words": 30, "request": 16}[kind]
        word = "(?:" + "|".join(re.escape(w) for w in sorted(words, key=len, reverse=True)) + ")"
        return f"^{word}(?: {word}){{0,{most}}}$"
    return None
