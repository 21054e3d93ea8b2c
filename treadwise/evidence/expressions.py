"""Math expressions built from the conversation's own symbols: its numbers (or values the
declared rules give), its variables, and the functions and constants it names in any
everyday spelling ("square root" is sqrt, "π" is pi, "infinity" is oo).

The expression is read as tokens and never evaluated.
"""

from __future__ import annotations

import re
from collections.abc import Iterable

from treadwise.evidence import numbers
from treadwise.evidence.conversation import Evidence

# A function or constant, and the words that name it in a message.
SPELLINGS: dict[str, str] = {
    "sqrt": r"\bsqrt\b|√|\broots?\b", "cbrt": r"\bcbrt\b|∛|\bcube roots?\b",
    "sin": r"\bsin\b|\bsine\b", "cos": r"\bcos\b|\bcosine\b", "tan": r"\btan\b|\btangent\b",
    "cot": r"\bcot\b|\bcotangent\b", "sec": r"\bsec\b|\bsecant\b", "csc": r"\bcsc\b|\bcosecant\b",
    "asin": r"\basin\b|\barcsin\w*", "acos": r"\bacos\b|\barccos\w*",
    "atan": r"\batan\b|\barctan\w*", "sinh": r"\bsinh\b", "cosh": r"\bcosh\b",
    "tanh": r"\btanh\b", "exp": r"\bexp\b|\bexponential\b|\be\s*\^|\be\*\*",
    "log": r"\blog\w*|\bln\b", "ln": r"\bln\b|\bnatural log\w*|\blog\b",
    "log10": r"\blog10\b|\blog base 10\b", "log2": r"\blog2\b|\blog base 2\b",
    "abs": r"\babs\b|\babsolute\b|\|", "Abs": r"\babs\b|\babsolute\b|\|",
    "factorial": r"\bfactorial\w*|\d\s*!", "floor": r"\bfloor\b|\bround\w* down\b",
    "ceiling": r"\bceil\w*|\bround\w* up\b", "gamma": r"\bgamma\b",
    "pi": r"\bpi\b|π", "e": r"(?<![\w.])e(?!\w)|\be\s*\^|\beuler|\bexp\b",
    "E": r"(?<![\w.])e(?!\w)",
    "oo": r"\binfinit\w*|∞|\boo\b|\binf\b", "inf": r"\binfinit\w*|∞|\boo\b|\binf\b",
    "I": r"\bimaginary\b|\bsqrt\(\s*-|√\s*-", "of": r"%|\bpercent\b",
}
FUNCTIONS = tuple(SPELLINGS)
_TOKEN = re.compile(r"(?P<num>\d+(?:\.\d+)?(?:\s*/\s*\d+(?:\.\d+)?)?|\.\d+)"
                    r"|(?P<name>[A-Za-z_][A-Za-z_0-9]*)|(?P<sup>[⁰¹²³⁴⁵⁶⁷⁸⁹]+)|(?P<other>\S)")
# Single letters a message uses as variables: "x^2", "2x", "f(x)", "dx", "solve for y".
_VARIABLE = re.compile(r"(?<![A-Za-z])([a-z])(?![A-Za-z])")
OPERATORS = "+-*/^()., =!%"
_SUPERSCRIPT_RUN = re.compile("[⁰¹²³⁴⁵⁶⁷⁸⁹]+")


def variables(evidence: Evidence) -> tuple[str, ...]:
    """The single-letter variables the customer wrote (and any in earlier formulas)."""
    text = evidence.text + "\n" + evidence.found_text
    return tuple(dict.fromkeys(v for v in _VARIABLE.findall(text) if v not in ("e", "i")))


def names(evidence: Evidence) -> tuple[str, ...]:
    """The functions and constants the conversation names, by their engine spelling."""
    text = evidence.text + "\n" + evidence.found_text
    return tuple(name for name, spelling in SPELLINGS.items()
                 if re.search(spelling, text, re.IGNORECASE))


def _number_ok(token: str, evidence: Evidence) -> bool:
    """A number of the expression: grounded itself, or a fraction whose value or both of
    whose parts are (x^(1/2) for a square root)."""
    if "/" in token:
        top, bottom = (float(part) for part in token.split("/"))
        if bottom and evidence.holds_number(top / bottom):
            return True
        return all(evidence.holds_number(v) for v in (top, bottom))
    return evidence.holds_number(float(token))


def missing_symbols(expression: str, evidence: Evidence) -> list[str]:
    """The numbers and names of ``expression`` the conversation does not hold (empty when it
    is built from the conversation's own symbols)."""
    known_names = {*variables(evidence), *names(evidence)}
    typed = set(re.findall(r"[A-Za-z_][A-Za-z_0-9]*", evidence.text))
    missing: list[str] = []
    # x² is x to the power 2: the superscript is a number of its own, not part of a name.
    powered = _SUPERSCRIPT_RUN.sub(lambda m: "^" + m.group().translate(numbers.SUPERSCRIPTS),
                                   expression)
    for match in _TOKEN.finditer(powered):
        kind, token = match.lastgroup, match.group()
        if kind == "num" and not _number_ok(token.replace(" ", ""), evidence):
            missing.append(token)
        elif kind == "name" and token not in known_names and token not in typed \
                and not _split_ok(token, known_names):
            missing.append(token)
    return list(dict.fromkeys(missing))


def _split_ok(token: str, known: set[str]) -> bool:
    """"xy" or "ex": a run of known one-letter variables written together (2xy)."""
    return len(token) <= 4 and all(letter in known for letter in token)


def grammar_pattern(evidence: Evidence, limit: int = 12) -> str | None:
    """A regular expression (for a JSON-schema ``pattern``) of expressions built only from the
    conversation's numbers, variables and named functions; None when it holds no number and
    no variable. Atoms are separated by operators, so two numbers cannot run together."""
    nums = [_literal(v) for v in evidence.numbers if v >= 0 and _literal(v)]
    symbols = [*variables(evidence), *(n for n in names(evidence) if n != "of")]
    if not nums and not symbols:
        return None
    number = _alternation(nums)
    name = _alternation(symbols + (["of"] if "of" in names(evidence) else []))
    atoms = [part for part in (f"{number}(?:{name})?" if nums and symbols else number
                               if nums else "", name if symbols else "") if part]
    atom = f"(?:{'|'.join(atoms)})"
    ops = r"[-+*/^(). ]"
    return f"^{ops}{{0,3}}{atom}(?:{ops}{{1,3}}{atom}){{0,{limit}}}{ops}{{0,3}}$"


def _literal(value: float) -> str:
    """How a grounded number is typed inside an expression (long decimals are left out)."""
    shown = repr(numbers.as_json(value))
    return shown if len(shown) <= 8 and "e" not in shown else ""


def _alternation(options: Iterable[str]) -> str:
    unique = sorted(set(options), key=len, reverse=True)
    return "(?:" + "|".join(re.escape(o) for o in unique) + ")"
