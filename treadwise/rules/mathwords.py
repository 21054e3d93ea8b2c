"""Everyday math wording read as expressions: "7 times 8 minus 3" -> 7 * 8 - 3, or a question.

Every word must be accounted for: a word the rules cannot place makes the text "not math"
rather than being dropped, so the offline model never answers a different question.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from functools import partial

from treadwise.rules.dialogue import plain_number
from treadwise.rules.plan import PREVIOUS, Call

UNITS = {w: i for i, w in enumerate(
    "zero one two three four five six seven eight nine ten eleven twelve thirteen fourteen "
    "fifteen sixteen seventeen eighteen nineteen".split())}
TENS = {w: 10 * i for i, w in enumerate(
    "twenty thirty forty fifty sixty seventy eighty ninety".split(), 2)}
SCALES = {"hundred": 100, "thousand": 1000, "million": 10**6, "billion": 10**9}
ORDINALS = {"second": 2, "third": 3, "fourth": 4, "fifth": 5, "sixth": 6, "seventh": 7,
            "eighth": 8, "ninth": 9, "tenth": 10}
FRACTIONS = {"half": 2, "halves": 2, "quarter": 4, "quarters": 4,
             **{f"{w}s": n for w, n in ORDINALS.items() if n > 2}, **ORDINALS}

POLITE_START = re.compile(
    r"^(?:(?:hi|hello|hey|ok(?:ay)?|so|um+|well|alright|yo|also|and|now|next|then|great|cool"
    r"|thanks|thank you|quick question|question)\b[\s,!.:;-]*)+", re.I)
REQUEST_START = re.compile(
    r"^(?:(?:please|pls|plz|kindly)\b\s*|(?:can|could|would|will) (?:you|u)\b(?: please| pls"
    r"| quickly| just)?\s*|(?:i need|i want|i'?d like)(?: you)?(?: to)?(?: know)?\b\s*"
    r"|help me(?: with| to)?\b\s*|(?:tell|show|give) me\b\s*)+", re.I)
POLITE_END = re.compile(
    r"(?:[\s,]*\b(?:please|pls|plz|thanks|thank you|thx|ty|for me|real quick|quickly|cheers"
    r"|if you can|if you could|if possible)\b|[\s,]*:-?\))+[\s?.!]*$", re.I)
MATH_LEADIN = re.compile(
    r"^(?:what do (?:you|i|we) get (?:for|if (?:you|i|we)|when (?:you|i|we)|from|with)"
    r"|(?:and )?(?:what|how) about"
    r"|what (?:would|will) (?:it|that) be|how much (?:is|are|does)|what(?:'s| is|s| does| do)?"
    r"|wh?at(?:'s| is|s)?|calculate|calc|compute|evaluate|eval|work out|figure out"
    r"|find(?: out)?|determine|solve|simplify|take|the (?:value|result|answer) of|the)\b\s*",
    re.I)
# A "!" after a number is a factorial, not excitement.
MATH_TAIL = re.compile(r"\s*(?:=\s*|\bequals?|\bis equal to|\bis what|\bis|\bcome to|\bmake)?"
                       r"(?:[\s?.]|(?<![\d)!])!)*$", re.I)
CLAUSES = re.compile(
    r"\s*[,;.]?\s*\b(?:and\s+)?then\b[\s,]*|\s*;\s*|\s*,\s*and\s+(?=(?:add|subtract|multiply"
    r"|divide|square|cube|double|triple|halve|raise|times|plus|minus)\b)", re.I)
REFERENCE = re.compile(
    r"\b(?:the (?:previous|last|same) (?:result|answer|number)|the (?:result|answer|total)"
    r"|that (?:number|result|answer)|that|this|it)\b", re.I)

NUM = r"-?\d+(?:\.\d+)?"
ATOM = rf"(?:{NUM}|{PREVIOUS}|pi|\([^()]*\))"
FOLLOWED = re.compile(r"\s*(?:[-+*/^]|plus\b|minus\b|times\b|divided\b|multiplied\b|over\b)")

# Phrases with operands: (pattern, template, binds) where binds names the operand that a
# following operator could also belong to ("the sum of 2 and 3 times 4" reads two ways).
FORMS: list[tuple[str, str, str]] = [
    (rf"\b(?:the )?sum of (?P<a>{ATOM}) and (?P<b>{ATOM})", "({a} + {b})", "b"),
    (rf"\b(?:the )?product of (?P<a>{ATOM}) and (?P<b>{ATOM})", "({a} * {b})", "b"),
    (rf"\b(?:the )?difference (?:between|of) (?P<a>{ATOM}) and (?P<b>{ATOM})", "({a} - {b})", "b"),
    (rf"\b(?:the )?quotient of (?P<a>{ATOM}) (?:and|by) (?P<b>{ATOM})", "({a} / {b})", "b"),
    (rf"\badd (?P<a>{ATOM}) (?:and|to|plus|with) (?P<b>{ATOM})", "({a} + {b})", "b"),
    (rf"\bsubtract (?P<a>{ATOM}) from (?P<b>{ATOM})", "({b} - {a})", "b"),
    (rf"(?P<a>{ATOM}) subtracted from (?P<b>{ATOM})", "({b} - {a})", "b"),
    (rf"\btake (?:away )?(?P<a>{ATOM}) (?:away )?from (?P<b>{ATOM})", "({b} - {a})", "b"),
    (rf"\bmultiply (?P<a>{ATOM}) (?:by|and|with|times) (?P<b>{ATOM})", "({a} * {b})", "b"),
    (rf"\bdivide (?P<a>{ATOM}) by (?P<b>{ATOM})", "({a} / {b})", "b"),
    (rf"\bdivide (?P<a>{ATOM}) into (?P<b>{ATOM})", "({b} / {a})", "b"),
    (rf"\b(?:the )?cube root of (?P<a>{ATOM})", "cbrt({a})", "a"),
    (rf"\b(?:the )?(?P<n>\d+)(?:st|nd|rd|th) root of (?P<a>{ATOM})", "({a})^(1/{n})", "a"),
    (rf"\b(?:the )?(?:square )?roots? of (?P<a>{ATOM})", "sqrt({a})", "a"),
    (rf"\bsqrt(?: of)? (?P<a>{ATOM})", "sqrt({a})", "a"),
    (rf"\b(?:the )?square of (?P<a>{ATOM})", "({a})^2", "a"),
    (rf"\b(?:the )?cube of (?P<a>{ATOM})", "({a})^3", "a"),
    (rf"\bfactorial (?:of )?(?P<a>{ATOM})", "({a})!", "a"),
    (rf"\b(?:double|twice) (?P<a>{ATOM})", "2*({a})", "a"),
    (rf"\btriple (?P<a>{ATOM})", "3*({a})", "a"),
    (rf"\b(?:half of|halve) (?P<a>{ATOM})", "({a})/2", "a"),
    (rf"^square (?P<a>{ATOM})", "({a})^2", "a"),
    (rf"^cube (?P<a>{ATOM})", "({a})^3", "a"),
    (rf"(?P<a>{ATOM}) ?(?:percent|per cent|pct|%) off (?:of )?(?P<b>{ATOM})",
     "({b} - {a}% of {b})", "b"),
    (rf"(?P<a>\d+\s*/\s*\d+|\(\d+/\d+\)) of (?P<b>{ATOM})", "{a} * {b}", "b"),
]
# Operand-then-word forms and plain operators; no operand can be claimed twice here.
SUFFIXES: list[tuple[str, str]] = [
    (rf"(?P<a>{ATOM}) squared\b", "{a}^2"),
    (rf"(?P<a>{ATOM}) cubed\b", "{a}^3"),
    (rf"(?P<a>{ATOM}) factorial\b", "{a}!"),
    (rf"(?P<a>{ATOM}) (?:to the power of|to the power|raised to the power of|raised to the"
     rf"|raised to|to the|power) (?P<b>{ATOM})(?:st|nd|rd|th)?(?: power)?", "{a}^{b}"),
    (rf"(?P<a>{ATOM}) ?(?:percent|per cent|pct)\b", "{a}%"),
]
INFIX = [(r"\bplus\b", " + "), (r"\bminus\b", " - "), (r"\btimes\b", " * "),
         (r"\bmultiplied by\b", " * "), (r"\bdivided by\b", " / "), (r"\bover\b", " / "),
         (r"(?<=[\d)])\s*[x\u00d7]\s*(?=[\d(])", " * "), (r"\bmod(?:ulo)?\b", " % ")]
# Words allowed to remain in an expression (the math engine's own names).
ALLOWED_WORDS = {"sqrt", "cbrt", "factorial", "pi", "e", "ln", "log", "sin", "cos", "tan",
                 "exp", "abs", "of"}
# Starting with an operator word continues from the last result: "times 3", "squared".
CONTINUES = re.compile(r"^(?:plus|minus|times|multiplied by|divided by|over|squared|cubed"
                       r"|to the power of)\b", re.I)


@dataclass
class Arithmetic:
    """Clauses to compute in order; a later clause may use the previous result (PREVIOUS)."""

    clauses: list[str]


@dataclass
class Unclear:
    """Math the rules cannot read one way only: the readings to offer, or why not."""

    options: list[str] = field(default_factory=list)
    reason: str = ""


class _Ambiguous(Exception):
    def __init__(self, options: list[str]):
        self.options = options


def strip_padding(text: str) -> str:
    """The request without greetings, "please", "can you" and thanks around it."""
    text = text.strip()
    for _ in range(3):
        before = text
        text = POLITE_END.sub("", REQUEST_START.sub("", POLITE_START.sub("", text))).strip()
        if text == before:
            break
    return text


def words_to_numbers(text: str) -> str:
    """'nine times six' -> '9 times 6', 'two thirds' -> '(2/3)', 'tenth power' -> '10th power'."""
    words = re.sub(r"(?<=[a-z])-(?=[a-z])", " ", text.lower()).split()
    out: list[str] = []
    i = 0
    while i < len(words):
        value, used = _number_at(words, i)
        if used == 0:
            bare = words[i].rstrip("?.!,")
            out.append(f"{ORDINALS[bare]}th{words[i][len(bare):]}" if bare in ORDINALS
                       and out and out[-1] == "the" else words[i])
            i += 1
            continue
        i += used
        tail = words[i - 1][len(words[i - 1].rstrip("?.!,")):]
        following = words[i].rstrip("?.!,") if i < len(words) else ""
        if following in FRACTIONS and value > 0:
            tail = words[i][len(following):]
            out.append(f"({_number_text(value)}/{FRACTIONS[following]}){tail}")
            i += 1
        else:
            out.append(f"{_number_text(value)}{tail}")
    return " ".join(out)


def _number_at(words: list[str], start: int) -> tuple[float, int]:
    """The number spelled from words[start] on, and how many words it took (0: none)."""
    spelled = _Spelled()
    for i in range(start, len(words)):
        word = words[i].rstrip("?.!,")
        following = words[i + 1].rstrip("?.!,") if i + 1 < len(words) else ""
        if not spelled.take(word, following):
            break
        spelled.used = i - start + 1
        if words[i] != word:  # punctuation ends the number
            break
    return spelled.value(), spelled.used


@dataclass
class _Spelled:
    """A number being read word by word: "one hundred and five point two"."""

    total: int = 0
    current: int = 0
    used: int = 0
    decimals: str = ""

    def take(self, word: str, following: str) -> bool:
        if self.decimals:
            if word in UNITS and UNITS[word] < 10:
                self.decimals += str(UNITS[word])
                return True
            return False
        if word in UNITS:
            return self._add(UNITS[word], self.used == 0 or self.current % 100 == 0 or (
                self.current % 100 >= 20 and self.current % 10 == 0 and UNITS[word] < 10))
        if word in TENS:
            return self._add(TENS[word], self.current % 100 == 0)
        if word in SCALES and (self.used or word == "hundred"):
            self.current = max(self.current, 1) * SCALES[word]
            if SCALES[word] > 100:
                self.total, self.current = self.total + self.current, 0
            return True
        return self._joiner(word, following)

    def _add(self, value: int, allowed: bool) -> bool:
        if allowed:
            self.current += value
        return allowed

    def _joiner(self, word: str, following: str) -> bool:
        """"a hundred", "hundred and five", "three point five"."""
        if word in ("a", "an") and self.used == 0 and following in SCALES:
            self.current = 1
            return True
        if word == "and":
            whole = self.total + self.current
            return bool(whole) and self.current % 100 == 0 and following in {**UNITS, **TENS}
        if word == "point" and self.used and following in UNITS:
            self.decimals = "."
            return True
        return False

    def value(self) -> float:
        whole = self.total + self.current
        return float(f"{whole}{self.decimals}") if self.decimals.strip(".") else float(whole)


def _number_text(value: float) -> str:
    return str(int(value)) if value.is_integer() else repr(value)


def read_arithmetic(text: str) -> Arithmetic | Unclear | None:
    """Clauses of arithmetic, a question to ask, or None when the text is not arithmetic."""
    body = words_to_numbers(strip_padding(text))
    body = re.sub(r"(?<=\d),(?=\d{3}\b)", "", body)
    body = re.sub(r"\$\s*(?=\d)|\s*\b(?:dollars?|bucks|usd)\b", "", body)
    if not re.search(r"\d", body) and not REFERENCE.search(body) \
            and not CONTINUES.match(MATH_LEADIN.sub("", body)):
        return None
    clauses = [c for c in CLAUSES.split(body) if c.strip(" ,.")]
    try:
        expressions = [_clause(clause, first=i == 0) for i, clause in enumerate(clauses)]
    except _Ambiguous as ambiguous:
        return Unclear(options=ambiguous.options) if len(clauses) == 1 else Unclear()
    if not expressions or any(e is None for e in expressions):
        return None
    return Arithmetic([e for e in expressions if e is not None])


def _clause(clause: str, first: bool, strict: bool = True) -> str | None:
    text = clause.strip(" ,.")
    for _ in range(4):
        before = text
        text = MATH_LEADIN.sub("", strip_padding(text)).strip(" ,")
        if text == before:
            break
    text = MATH_TAIL.sub("", text)
    text = REFERENCE.sub(PREVIOUS, text)
    if CONTINUES.match(text):
        text = f"{PREVIOUS} {text}"
    text = re.sub(rf"^(add|subtract)\s+(?P<a>{ATOM})$", _continue_with, text)
    text = re.sub(rf"^(multiply|divide)(?:\s+{PREVIOUS})?\s+by\s+(?P<a>{ATOM})$",
                  _continue_with, text)
    expression = _rewrite(text, strict)
    return expression if expression and _is_expression(expression) else None


def _continue_with(match: re.Match) -> str:
    operator = {"add": "+", "subtract": "-", "multiply": "*", "divide": "/"}[match.group(1)]
    return f"{PREVIOUS} {operator} {match.group('a')}"


def _rewrite(text: str, strict: bool) -> str:
    for _ in range(6):
        before = text
        text = _apply_infix(text)
        for pattern, template, binds in FORMS:
            text = _apply_form(text, pattern, template, binds, strict)
        for pattern, template in SUFFIXES:
            text = re.sub(pattern, partial(_filled, template), text)
        if text == before:
            break
    return " ".join(text.split())


def _filled(template: str, match: re.Match[str]) -> str:
    return template.format(**match.groupdict())


def _apply_infix(text: str) -> str:
    for pattern, operator in INFIX:
        text = re.sub(pattern, operator, text)
    return text


def _apply_form(text: str, pattern: str, template: str, binds: str, strict: bool) -> str:
    match = re.search(pattern, text)
    if match is None:
        return text
    rest = text[match.end():]
    tight = text[:match.start()] + template.format(**match.groupdict()) + rest
    if strict and FOLLOWED.match(rest) and not match.group(binds).startswith("("):
        # "the square root of 16 plus 9": sqrt(16) + 9 or sqrt(16 + 9)? Ask, don't guess.
        loose_operand = f"({match.group(binds)}{rest})"
        loose = text[:match.start()] + template.format(**{**match.groupdict(),
                                                          binds: loose_operand})
        readings = [re.sub(r"\(\(([^()]*)\)\)", r"(\1)", _rewrite(reading, False))
                    for reading in (tight, loose)]
        if all(_is_expression(r) for r in readings):
            raise _Ambiguous(readings)
    return tight


def _is_expression(text: str) -> bool:
    """Only numbers, operators and the engine's names remain, with something to compute."""
    words = re.findall(r"[a-z]+", text.lower())
    if any(w not in ALLOWED_WORDS for w in words):
        return False
    if re.search(r"\bof\b", text) and not re.search(r"%\s*of\b", text):
        return False
    if not re.fullmatch(rf"[\d\s.+\-*/^()!%a-z{PREVIOUS}]+", text.lower()):
        return False
    if re.search(r"[-+*/^]\s*$|^\s*[*/^]", text):
        return False  # "7 times 8 minus": something is missing
    return bool(re.search(r"[-+*/^!%]|sqrt|cbrt|factorial|ln|log|sin|cos|tan|exp|abs", text)
                and re.search(rf"[\d{PREVIOUS}]", text))


def substitute(expression: str, value: str) -> str:
    """The expression with the previous result in place of PREVIOUS, bracketed unless plain."""
    shown = value if plain_number(value) is not None and not value.startswith("-") \
        else f"({value})"
    return expression.replace(PREVIOUS, shown)


OPERAND = rf"(?:{NUM}|{PREVIOUS})"
SIMPLE_RE = re.compile(rf"^\(?\s*(?P<a>{OPERAND})\s*(?P<op>[-+*/^])\s*(?P<b>{OPERAND})\s*\)?$")
SQUARE_RE = re.compile(rf"^\(?\(?(?P<a>{OPERAND})\)?\s*\^\s*2\s*\)?$")
ROOT_RE = re.compile(rf"^sqrt\(\s*(?P<a>{OPERAND})\s*\)$")
NAMED = {"+": ("add", "a", "b"), "-": ("subtract", "a", "b"), "*": ("multiply", "a", "b"),
         "/": ("divide", "a", "b"), "^": ("power", "base", "exponent")}
# The named tools as expressions, for a previous result that is not a plain number ("1/3").
TEMPLATES = {"add": "{a} + {b}", "subtract": "{a} - {b}", "multiply": "{a} * {b}",
             "divide": "{a} / {b}", "power": "{base}^{exponent}", "square": "{x}^2",
             "square_root": "sqrt({x})", "calculate": "{expression}"}


def _argument(text: str) -> object:
    return PREVIOUS if text == PREVIOUS else plain_number(text)


def arithmetic_call(expression: str) -> Call:
    """The named tool for one operation on two plain numbers, else `calculate`.

    An operand may be PREVIOUS, the result of the step before, filled in by `with_previous`.
    """
    expression = " ".join(expression.split())
    for pattern, tool, names in ((SQUARE_RE, "square", ("x",)),
                                 (ROOT_RE, "square_root", ("x",))):
        if (match := pattern.fullmatch(expression)) and \
                (x := _argument(match.group("a"))) is not None:
            return Call(tool, {names[0]: x})
    if match := SIMPLE_RE.fullmatch(expression):
        a, b = _argument(match.group("a")), _argument(match.group("b"))
        if a is not None and b is not None:
            tool, first, second = NAMED[match.group("op")]
            return Call(tool, {first: a, second: b})
    return Call("calculate", {"expression": expression})


def needs_previous(call: Call) -> bool:
    return any(PREVIOUS in str(value) for value in call.args.values())


def with_previous(call: Call, value: str) -> Call:
    """The call with the previous step's exact result in place of PREVIOUS."""
    expression = TEMPLATES[call.tool].format(**call.args)
    return arithmetic_call(substitute(expression, value))
