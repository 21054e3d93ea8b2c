"""Numbers a text holds, and the values the declared rules derive from them.

A value is grounded in a text when the text writes it (15, 2.5, 1,000, twelve, 15%, 3rd) or
when one declared rule gives it from what is written:

- percent to fraction: "15%" or "15 percent" also means 0.15 (and 1.15, 0.85 when the text
  raises or cuts something by it);
- number words and ordinals: "twelve", "twenty-one", "a dozen", "half", "twice", "second";
- constants: pi (π) and e, when the text names them;
- powers and roots: "squared" is 2, "cubed" 3, a square root the power 0.5, a cube root 1/3;
- signs: a number may be negated when the text subtracts or says "minus" or "negative";
- units: a number with a unit may be converted to a unit of the same kind (5 km is 5000 m),
  and the factor of such a conversion is itself grounded.

A value written with two or more decimals matches a derived value rounded to as many
(3.14 for π, 0.333 for a third). Nothing here evaluates text: it reads digits and words.
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterable
from fractions import Fraction

ONES = {"zero": 0, "one": 1, "two": 2, "three": 3, "four": 4, "five": 5, "six": 6,
        "seven": 7, "eight": 8, "nine": 9, "ten": 10, "eleven": 11, "twelve": 12,
        "thirteen": 13, "fourteen": 14, "fifteen": 15, "sixteen": 16, "seventeen": 17,
        "eighteen": 18, "nineteen": 19}
TENS = {"twenty": 20, "thirty": 30, "forty": 40, "fifty": 50, "sixty": 60, "seventy": 70,
        "eighty": 80, "ninety": 90}
SCALES = {"hundred": 100, "thousand": 1000, "million": 1_000_000}
ORDINALS = {"first": 1, "second": 2, "third": 3, "fourth": 4, "fifth": 5, "sixth": 6,
            "seventh": 7, "eighth": 8, "ninth": 9, "tenth": 10}
# Words that stand for a value of their own.
WORD_VALUES = {"dozen": 12, "half": 0.5, "quarter": 0.25, "double": 2, "twice": 2,
               "triple": 3, "thrice": 3, "squared": 2, "square": 2, "cubed": 3, "cube": 3}
# Of those, the ones that are only ever a power: "square 9" grounds the exponent 2, not an
# operand 2 of an addition ("add 5 and 4, then square it" -> add(5, 2) is invented).
POWER_WORDS = frozenset({"squared", "square", "cubed", "cube"})
ROOTS = (re.compile(r"\bsquare\s+roots?\b|\bsqrt\b|√|\broots?\b", re.I), 0.5)
CUBE_ROOTS = (re.compile(r"\bcube\s+roots?\b|\bcbrt\b|∛", re.I), 1 / 3)
NEGATIVE = re.compile(r"-\s*\d|\b(?:minus|negative|subtract\w*|less|take away|difference"
                      r"|below|decrease\w*|fewer|lower|drop\w*|deduct\w*)\b", re.I)
PI = re.compile(r"\bpi\b|π", re.I)
E_CONSTANT = re.compile(r"(?<![\w.])e(?![\w])|\be\^|\bexp\b|euler", re.I)
# Digits, with thousands separators, a decimal part and superscript powers (x² is 2).
NUMERAL = re.compile(r"(?<![\w.])\d{1,3}(?:,\d{3})+(?:\.\d+)?(?![\d,]*\d)|\d*\.?\d+")
SUPERSCRIPTS = str.maketrans("⁰¹²³⁴⁵⁶⁷⁸⁹", "0123456789")
# Words by which a percentage raises or cuts an amount (15% more: 1.15 of it).
CHANGE = re.compile(r"\b(?:increas\w*|decreas\w*|more|less|off|discount\w*|mark\s?up|tax|tip"
                    r"|ris\w*|raise\w*|cut\w*|reduc\w*|grow\w*|drop\w*|add\w*|plus|minus"
                    r"|subtract\w*|interest|up|down|gain\w*|los[st]\w*)\b", re.I)
PERCENT = re.compile(r"(\d*\.?\d+)\s*(?:%|per\s*cent\b|percent\b)", re.I)
# A unit, the quantity it measures, and its size in that quantity's base unit.
UNITS: dict[str, tuple[str, float]] = {
    "mm": ("length", 0.001), "millimet": ("length", 0.001), "cm": ("length", 0.01),
    "centimet": ("length", 0.01), "m": ("length", 1.0), "met": ("length", 1.0),
    "km": ("length", 1000.0), "kilomet": ("length", 1000.0), "in": ("length", 0.0254),
    "inch": ("length", 0.0254), "ft": ("length", 0.3048), "foot": ("length", 0.3048),
    "feet": ("length", 0.3048), "yard": ("length", 0.9144), "mile": ("length", 1609.344),
    "mi": ("length", 1609.344), "s": ("time", 1.0), "sec": ("time", 1.0),
    "second": ("time", 1.0), "min": ("time", 60.0), "minute": ("time", 60.0),
    "h": ("time", 3600.0), "hr": ("time", 3600.0), "hour": ("time", 3600.0),
    "day": ("time", 86400.0), "week": ("time", 604800.0), "g": ("mass", 0.001),
    "gram": ("mass", 0.001), "kg": ("mass", 1.0), "kilo": ("mass", 1.0),
    "lb": ("mass", 0.45359237), "pound": ("mass", 0.45359237), "oz": ("mass", 0.028349523125),
    "ounce": ("mass", 0.028349523125), "ml": ("volume", 0.001), "l": ("volume", 1.0),
    "lit": ("volume", 1.0), "gallon": ("volume", 3.785411784), "gal": ("volume", 3.785411784),
    "mph": ("speed", 0.44704), "kph": ("speed", 1 / 3.6), "km/h": ("speed", 1 / 3.6),
    "psi": ("pressure", 6894.757), "bar": ("pressure", 100000.0), "kpa": ("pressure", 1000.0),
}
UNIT_WORD = re.compile(r"(\d*\.?\d+)\s*(km/h|[a-z]+)", re.I)
RELATIVE = 1e-9


def _unit(word: str) -> tuple[str, float] | None:
    """The unit a word names ("kilometres", "hrs", "lbs"), if any."""
    word = word.lower()
    if word in UNITS:
        return UNITS[word]
    stem = re.sub(r"(?:e?s|res|ers)$", "", word)
    if stem in UNITS:
        return UNITS[stem]
    return next((UNITS[key] for key in UNITS if len(key) > 3 and word.startswith(key)), None)


def _words_value(words: list[str]) -> float | None:
    """"twenty one", "one hundred and five", "a dozen": the number a run of words writes."""
    total, current, seen = 0.0, 0.0, False
    for word in words:
        if word in ("and", "a") and seen or word == "a":
            continue
        if word in ONES:
            current += ONES[word]
        elif word in TENS:
            current += TENS[word]
        elif word in SCALES:
            current = max(current, 1) * SCALES[word]
            if SCALES[word] > 100:
                total, current = total + current, 0
        else:
            return None
        seen = True
    return total + current if seen else None


def word_numbers(text: str, *, values: bool = False) -> list[float]:
    """The numbers written in words ("twenty-one", "a hundred", "five"); with ``values``, also
    ordinals ("second") and the words that stand for a value ("half", "squared", "a dozen")."""
    words = re.findall(r"[a-z]+", text.lower().replace("-", " "))
    found: list[float] = []
    run: list[str] = []
    for word in [*words, "."]:
        if word in ONES or word in TENS or word in SCALES or (word in ("and", "a") and run):
            run.append(word)
            continue
        while run and run[-1] in ("and", "a"):
            run.pop()
        if run and (value := _words_value(run)) is not None:
            found.append(value)
        run = []
        if values and word in ORDINALS:
            found.append(ORDINALS[word])
        if values and word in WORD_VALUES:
            found.append(WORD_VALUES[word])
    return found


def numerals(text: str) -> list[float]:
    """The numbers written in digits (1,000 is one thousand; x² holds a 2; 3rd is 3)."""
    text = text.translate(SUPERSCRIPTS)
    return [float(m.group().replace(",", "")) for m in NUMERAL.finditer(text)]


def written(text: str) -> list[float]:
    """Every number the text writes, in digits or in words (not those the rules derive)."""
    return [*numerals(text), *word_numbers(text)]


def operands(text: str) -> set[float]:
    """The values the text grounds as an operand of an operation: what ``derived`` gives but
    powers named in words or roots (2 of "square", 0.5 of "square root") and a percentage's
    whole number ("15%" is 0.15 as an operand), unless the text also writes them otherwise."""
    values = derived(text)
    plain = PERCENT.sub(" ", text)
    written_plain = {*numerals(plain), *word_numbers(plain)}
    powers = {WORD_VALUES[w] for w in POWER_WORDS if re.search(rf"\b{w}\b", text, re.I)}
    powers |= {value for pattern, value in (ROOTS, CUBE_ROOTS) if pattern.search(text)}
    shares = {float(m.group(1)) for m in PERCENT.finditer(text)}
    dropped = {v for v in powers | shares if v not in written_plain}
    return {v for v in values if not any(abs(v - d) < 1e-12 or abs(v + d) < 1e-12
                                         for d in dropped)}


def derived(text: str) -> set[float]:
    """Every value the text grounds: what it writes and what the declared rules give."""
    values = {*numerals(text), *word_numbers(text, values=True)}
    changed = CHANGE.search(text) is not None
    for match in PERCENT.finditer(text):
        share = float(match.group(1)) / 100
        values.update((share, 100.0))
        if changed:  # "15% more" is 1.15 of the amount, "15% off" 0.85
            values.update((1 + share, 1 - share))
    if PI.search(text):
        values.add(math.pi)
    if E_CONSTANT.search(text):
        values.add(math.e)
    for pattern, value in (ROOTS, CUBE_ROOTS):
        if pattern.search(text):
            values.add(value)
    values.update(_conversions(text))
    if NEGATIVE.search(text):
        values.update(-v for v in list(values))
    return values


def _conversions(text: str) -> set[float]:
    """Each number with a unit in every unit of its kind the text names, and the factors."""
    named = {unit for word in re.findall(r"km/h|[a-z]+", text.lower())
             if (unit := _unit(word)) is not None}
    found: set[float] = set()
    for match in UNIT_WORD.finditer(text):
        unit = _unit(match.group(2))
        if unit is None:
            continue
        value = float(match.group(1))
        for kind, size in named:
            if kind == unit[0] and size != unit[1]:
                factor = unit[1] / size
                found.update((value * factor, factor, 1 / factor))
    return found


def number_of(value: object) -> float | None:
    """A value as a float: a number, or text that is one number or a fraction ("1/3")."""
    if isinstance(value, bool):
        return None
    if isinstance(value, int | float):
        return float(value) if math.isfinite(value) else None
    if isinstance(value, str):
        text = value.strip().replace(",", "")
        try:
            return float(Fraction(text)) if re.fullmatch(r"-?\d+(?:\.\d+)?(?:/\d+)?", text) \
                else None
        except (ValueError, ZeroDivisionError):
            return None
    return None


def _decimals(value: float) -> int:
    text = repr(value)
    return len(text.split(".", 1)[1]) if "." in text and "e" not in text else 0


def matches(value: float, grounded: Iterable[float]) -> bool:
    """The value is one of the grounded ones, or one of them rounded to the two or more
    decimals the value is written with."""
    places = _decimals(value)
    for known in grounded:
        if abs(value - known) <= RELATIVE * max(1.0, abs(known)):
            return True
        if 2 <= places < 15 and round(known, places) == value:
            return True
    return False


def as_json(value: float) -> int | float:
    """How a grounded value is written as a JSON argument: 81, not 81.0."""
    value = float(value)  # word values are ints, and int.is_integer is Python 3.12's
    return int(value) if value.is_integer() and abs(value) < 1e15 else value


# How a message asks for a derivative's order: "second derivative", "3rd derivative",
# "order 2", "d²/dx²", "d^3y/dx^3", "differentiate twice".
_ORDER = re.compile(r"\b(first|second|third|fourth|fifth|sixth|seventh|eighth|ninth|tenth"
                    r"|\d+(?:st|nd|rd|th))\b|\border\s*(\d+)|\bd\s*(?:\^\s*(\d+)|([²³⁴⁵]))"
                    r"|\b(twice|thrice)\b", re.I)


def orders(text: str) -> set[int]:
    """The derivative orders a text asks for (1 always: the first derivative is the default).
    A number of the expression (the 4 of x^4) is not an order."""
    found = {1}
    for match in _ORDER.finditer(text):
        word, order, power, sup, times = match.groups()
        if word:
            found.add(ORDINALS.get(word.lower()) or int(re.sub(r"\D", "", word)))
        elif order or power:
            found.add(int(order or power))
        elif sup:
            found.add(int(sup.translate(SUPERSCRIPTS)))
        elif times:
            found.add(2 if times.lower() == "twice" else 3)
    return found
