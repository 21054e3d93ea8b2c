"""Tool routing: the tool groups a turn binds, read from the user's words before the first call."""

# A group is a handful of tools and the words that call for them; business words come from the
# business profile's vocabulary (vehicles, usages, places, services, topics), so a new city or
# FAQ section routes without code. A turn binds the groups its message names, plus those of the
# previous user message when it names none or leans on it ("Denver", "what about from 0 to 6?"),
# else the business group, home of a TreadWise assistant. Tools outside every group (MCP
# servers, plugins) are always bound: routing cannot judge what it does not know. A call to a
# known tool outside the bound groups still runs (the tool node holds every tool) and widens the
# turn's groups from the next call on.

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from functools import lru_cache
from typing import Any

from treadwise.conversation import EMPTY_REPLY_NUDGE as EMPTY_REPLY_NUDGE  # graph.py reads it here
from treadwise.conversation import MORE_TOOLS, STAGE_KEY
from treadwise.settings import ROUTING_MODES

DEFAULT_ROUTING = ROUTING_MODES[0]
HOME = "business"

GROUPS: dict[str, tuple[str, ...]] = {
    "arithmetic": ("add", "subtract", "multiply", "divide", "power", "square", "square_root",
                   "calculate"),
    "calculus": ("integrate", "differentiate", "solve_equation", "analyze_function", "limit",
                 "plot_area", "calculate"),
    "business": ("get_business_info", "get_tire_recommendation", "check_service_availability",
                 "record_customer_interest", "record_feedback", "delete_customer_data"),
    "program": ("run_program",),
    "web": ("web_search",),
}

# Words that name a group outright.
_WORDS = {
    "arithmetic": (r"\b(?:add|adds|adding|addition|plus|sum|total|subtract\w*|minus|difference"
                   r"|multipl\w*|times|product|divid\w*|quotient|half|double|triple|power"
                   r"|squared?|cubed?|roots?|sqrt|percent\w*|percentage|arithmetic|average|mean"
                   r"|fraction|exponent|factorial\w*)\b|\d\s*[%!]"),
    "calculus": (r"\b(?:integra\w*|antiderivative\w*|area under|derivative\w*|differentiat\w*"
                 r"|d/d[a-z]|slope|tangent|solve\w*|equations?|roots? of|zeros? of|limit\w*"
                 r"|approach\w*|tends? to|plot\w*|graph\w*|curve|functions?|domain|extrem\w*"
                 r"|maxim\w*|minim\w*|critical points?|inflection|asymptot\w*|sin|cos|tan|ln"
                 r"|log|exp|calculus|f\(x\))\b|∫|→"),
    "business": (r"@|\b(?:tires?|tyres?|wheels?|treadwise|smart ?tread|sensors?|fleet\w*"
                 r"|rotat\w*|balanc\w*|puncture\w*|flats?|install\w*|recycl\w*|warrant\w*"
                 r"|prices?|pricing|costs?|quotes?|book\w*|appointment\w*|hours|open\w*"
                 r"|close\w*|contact\w*|e-?mail|phone|call me|reach me|address|location\w*"
                 r"|cities|city|near me|service\w*|van|vans|car|cars|truck\w*|drive|driving"
                 r"|pressure|tread|payment|pay|card|refund\w*|discount\w*|help|company"
                 r"|business|order\w*|deliver\w*|bitcoin|feedback|complain\w*|manager)\b"),
    "program": r"\b(?:program\w*|python|code|script|simulat\w*)\b",
    "web": r"\b(?:search\w*|web|online|internet|news|latest|google|look (?:it )?up)\b",
}
# A formula with a variable in it (x^2, 2x, y = ...): calculus, and arithmetic too unless
# calculus words are there ("7 x 8 = ?" reads as both).
_FORMULA = (r"\b[a-z]\s*(?:\^|\*\*|²|³)|\d[a-z]\b|\b[a-z]\b[^=\n]{0,40}=|=\s*[a-z]\b")
# A bare sum, or words that ask for a number without saying how: arithmetic, unless calculus
# words are there too (a formula has operators in it).
_RECKON = (r"\d\s*(?:[-+*/^×÷x]|\*\*)\s*[-(\d.]|\d\s*[²³]|√|\d\s+[a-z]{1,8}\s+-?\d"
           r"|\b(?:calculat\w*|comput\w*|evaluat\w*|how much is|work out|what is \d|what's \d)\b")
# A message that leans on the one before ("what about from 0 to 6?", "now multiply that").
_FOLLOW_UP = (r"^\W*(?:and|or|but|so|then|now|also|ok(?:ay)?|yes|yeah|no|sure|instead)\b"
              r"|\b(?:what|how) about\b|\b(?:that|it|this|the result|same|again|instead)\b")


@dataclass(frozen=True)
class Route:
    """One turn's routing: the mode, and the groups bound at its first call (None: all)."""

    mode: str = DEFAULT_ROUTING
    groups: frozenset[str] | None = None

    @property
    def full_prompt(self) -> bool:
        """The business profile rides in the system prompt (routing off)."""
        return self.mode == "off"

    def record(self) -> dict[str, Any]:
        """What the turn's JSON shows of the routing."""
        return {"mode": self.mode,
                "toolsets": None if self.groups is None else sorted(self.groups)}


def check_mode(mode: str) -> str:
    """The routing mode, or a clear error naming the known ones."""
    name = (mode or DEFAULT_ROUTING).strip().lower()
    if name not in ROUTING_MODES:
        raise ValueError(f"unknown routing {mode!r}; choose one of {', '.join(ROUTING_MODES)}")
    return name


@lru_cache(maxsize=8)
def _business_words(phrases: tuple[str, ...]) -> re.Pattern[str]:
    """One pattern for every phrase of the business vocabulary (whole words, plurals too)."""
    ordered = sorted(phrases, key=len, reverse=True)
    body = "|".join(re.escape(p) for p in ordered)
    return re.compile(rf"(?<![0-9a-z])(?:{body})(?:e?s)?(?![0-9a-z])")


def _compiled(pattern: str) -> re.Pattern[str]:
    return re.compile(pattern, re.IGNORECASE)


_PATTERNS = {group: _compiled(words) for group, words in _WORDS.items()}
_FORMULA_RE, _RECKON_RE, _FOLLOW_UP_RE = map(_compiled, (_FORMULA, _RECKON, _FOLLOW_UP))


def groups_named(text: str) -> tuple[set[str], bool]:
    """The groups a message calls for, and whether it names one outright (a bare sum or
    "calculate" only hints at arithmetic)."""
    from treadwise.privacy.emails import IN_TEXT_RE
    from treadwise.profile import business_phrases, clean_text

    # An address is business, and its digits and dashes ("ana-2@x.com") are not a sum.
    text = IN_TEXT_RE.sub(" @ ", text)
    named = {group for group, pattern in _PATTERNS.items() if pattern.search(text)}
    if HOME not in named and _business_words(business_phrases()).search(clean_text(text)):
        named.add(HOME)
    found = set(named)
    if _FORMULA_RE.search(text):
        found.add("calculus")
    if "calculus" not in named and _RECKON_RE.search(text):
        found.add("arithmetic")
    return found, bool(named) or "calculus" in found


def route_turn(mode: str, message: str, previous: str | None = None,
               available: Iterable[str] | None = None) -> Route:
    """The route of a user turn, from its message and the user message before it: a message
    that names no group, or leans on the one before, also gets the groups of the one before.
    Only groups with tools among `available` count; with none left, every tool is bound."""
    mode = check_mode(mode)
    if mode != "on":
        return Route(mode)
    groups, named = groups_named(message)
    if previous and (not named or _FOLLOW_UP_RE.search(message)):
        groups |= groups_named(previous)[0]
    usable = set(GROUPS) if available is None else set(available)
    chosen = (groups or {HOME}) & usable
    return Route(mode, frozenset(chosen) if chosen else None)


def _typed_by_customer(message: Any) -> bool:
    """A user message the customer wrote: not a stage's material, not a nudge of ours."""
    return message.type == "human" and not message.additional_kwargs.get(STAGE_KEY) \
        and message.text != EMPTY_REPLY_NUDGE


def last_user_text(messages: Sequence[Any]) -> str | None:
    """The latest message the customer typed."""
    return next((m.text for m in reversed(messages) if _typed_by_customer(m)), None)


def called_tools(prompt: Sequence[Any]) -> set[str]:
    """Tools the model called since the customer's last message in this prompt."""
    names: set[str] = set()
    for message in reversed(prompt):
        if _typed_by_customer(message):
            break
        if message.type == "ai":
            names.update(call["name"] for call in message.tool_calls)
    return names


def group_of(names: Iterable[str]) -> set[str]:
    """The groups holding any of these tools."""
    wanted = set(names)
    return {group for group, tools in GROUPS.items() if wanted.intersection(tools)}


def select(tools: Sequence[Any], groups: frozenset[str] | set[str] | None) -> list[Any]:
    """The tools a call binds: those of the groups, and every tool no group knows."""
    if groups is None:
        return list(tools)
    known = {name for members in GROUPS.values() for name in members}
    allowed = {name for group in groups for name in GROUPS.get(group, ())}
    return [tool for tool in tools if tool.name in allowed or tool.name not in known]


def unbound_note(tools: Sequence[Any], bound: Sequence[Any]) -> str:
    """One line naming the tools left out of this call, so the model can still ask for one."""
    chosen = {tool.name for tool in bound}
    others = [tool.name for tool in tools if tool.name not in chosen]
    if not others:
        return ""
    return f"{MORE_TOOLS}{', '.join(others)}."
