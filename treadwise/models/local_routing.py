"""What a small local model is shown for a turn: the tools it may need and examples to copy."""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import Any

from treadwise.models.tool_grammar import function_of

EXAMPLES_FILE = Path(__file__).with_name("local_examples.yaml")
BUSINESS = frozenset({"get_business_info", "get_tire_recommendation",
                      "check_service_availability", "record_customer_interest",
                      "record_feedback"})
# Words that make a message a maths question; anything else that is not small talk goes to
# the business tools, whose record_feedback takes what nothing else answers.
_MATH_WORDS = re.compile(
    r"\b(plus|minus|times|multipl\w*|divid\w*|sum|add|subtract\w*|product|quotient|squared?|"
    r"roots?|sqrt|powers?|cubed?|exponent|integra\w*|derivative\w*|differentiat\w*|solve|"
    r"equation|limit|calculat\w*|compute|percent|simplify|maxima|minima|maximum|minimum|"
    r"factorial|log|ln|sin|cos|tan|plot|area under|function)\b", re.I)
_MATH_SIGNS = re.compile(r"\d\s*[-+*/^x×÷%]\s*\d|\d\s*%|[a-z]\^\d|[=√²³]", re.I)
_SMALL_TALK = re.compile(
    r"^\W*(hi|hello|hey|thanks?( you)?|thank you|bye|goodbye|ok(ay)?|good (morning|afternoon|"
    r"evening)|how are you)\b[\w\s,!.?']{0,20}$", re.I)
_STOP = frozenset("a an the is are of what whats what's do does you your i my me to for and in "
                  "on can could would please it this that with be".split())


def toolsets_for(message: str) -> frozenset[str]:
    """The toolsets a message can need: {"math"}, {"business"}, both, or none (small talk)."""
    if _SMALL_TALK.match(message.strip()):
        return frozenset()
    math = bool(_MATH_WORDS.search(message) or _MATH_SIGNS.search(message))
    business = not math or bool(re.search(r"\b(tires?|tyres?|services?|price|cost|hours?|"
                                          r"open|install\w*|locations?|city)\b", message, re.I))
    return frozenset({"math"} if math else set()) | ({"business"} if business else set())


def routed(tools: Sequence[Mapping[str, Any]], message: str) -> list[Mapping[str, Any]]:
    """The tools of the toolsets the message needs; tools from other toolsets (web, MCP) stay."""
    sets = toolsets_for(message)

    def wanted(tool: Mapping[str, Any]) -> bool:
        business = function_of(tool)["name"] in BUSINESS
        return ("business" in sets) if business else ("math" in sets or not _is_math(tool))

    return [t for t in tools if wanted(t)]


def _is_math(tool: Mapping[str, Any]) -> bool:
    from treadwise.tools.math import PLAIN_TOOLS

    return function_of(tool)["name"] in {*PLAIN_TOOLS, "plot_area"}


@dataclass(frozen=True)
class Example:
    ask: str
    tool: str
    args: dict[str, Any]


@lru_cache(maxsize=1)
def examples() -> tuple[Example, ...]:
    from treadwise.datafiles import read_yaml_mapping

    data = read_yaml_mapping(EXAMPLES_FILE, ValueError, "examples file")
    return tuple(Example(e["ask"], e["tool"], dict(e["args"])) for e in data["examples"])


def _words(text: str) -> frozenset[str]:
    """The message's words cut to a rough stem (tires ~ tire, installation ~ install);
    numbers are left out, they say nothing about which tool is wanted."""
    return frozenset(w[:4] for w in re.findall(r"[a-z]+", text.lower())
                     if w not in _STOP)


def closest(message: str, tool_names: Sequence[str], count: int = 3) -> list[Example]:
    """At most ``count`` examples of these tools sharing words with the message, the closest
    last: a small model copies what it read last, and unrelated examples only distract it."""
    words = _words(message)
    names = set(tool_names)
    scored = [(shared, -i, e) for i, e in enumerate(examples())
              if e.tool in names and (shared := len(words & _words(e.ask)))]
    return [e for *_, e in sorted(scored, key=lambda s: s[:2])[-count:]] if count > 0 else []
