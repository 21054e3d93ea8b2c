"""Everyday math notation (x², 2x, √x, 15% of 240, 5!) rewritten as Python expression text."""

from __future__ import annotations

import re

from treadwise.safemath.math_errors import MathInputError

MAX_CHARS = 2000
MAX_TOKENS = 600
MAX_PAREN_DEPTH = 50
VARIABLES = ("x", "y", "z", "t", "u", "v", "w", "n", "a", "b", "c", "k")
CONSTANTS = ("pi", "e", "E", "I", "oo", "inf")
FUNCTIONS = (
    "sin", "cos", "tan", "cot", "sec", "csc", "asin", "acos", "atan", "sinh", "cosh", "tanh",
    "exp", "log", "ln", "log10", "log2", "sqrt", "cbrt", "abs", "Abs", "factorial", "floor",
    "ceiling", "gamma",
)
ALLOWED = (
    f"allowed: numbers, variables {' '.join(VARIABLES)}, constants pi e I oo, "
    f"operators + - * / ^ %, functions {', '.join(FUNCTIONS)}"
)

ATTRIBUTES_REFUSED = ("attribute access and method calls (`.{name}`) are not allowed in a math "
                      f"expression; {ALLOWED}")
# Everyday notation mapped to Python spelling before tokenizing; purely textual.
_CHAR_MAP = str.maketrans({
    "×": "*", "·": "*", "⋅": "*", "∗": "*", "÷": "/", "∕": "/", "⁄": "/", "−": "-", "–": "-",
    "—": "-", "^": "**", "π": " pi ", "∞": " oo ", "½": "(1/2)", "⅓": "(1/3)", "¼": "(1/4)",
    "¾": "(3/4)", "⅔": "(2/3)",
})
_SUPERSCRIPTS = str.maketrans("⁰¹²³⁴⁵⁶⁷⁸⁹⁻⁺", "0123456789-+")
_TOKEN = re.compile(
    r"(?P<num>(?:[0-9]+\.?[0-9]*|\.[0-9]+)(?:[eE][+-]?[0-9]+)?)"
    r"|(?P<name>[A-Za-z_][A-Za-z_0-9]*)"
    r"|(?P<sup>[⁰¹²³⁴⁵⁶⁷⁸⁹⁻⁺]+)"
    r"|(?P<op>\*\*|[-+*/%(),=√])"
    r"|(?P<space>\s+)"
    r"|(?P<other>.)",
    re.S,
)
_KNOWN = frozenset(VARIABLES + CONSTANTS + FUNCTIONS) | {"of"}
_VALUES = frozenset(VARIABLES + CONSTANTS)
_SPLITTABLE = frozenset(VARIABLES) | {"e"}


def clean(text: object) -> str:
    """Check the size of raw input and drop surrounding space and a trailing `=` or `?`."""
    if not isinstance(text, str):
        raise MathInputError(f"expected the expression as text, got {type(text).__name__}")
    if len(text) > MAX_CHARS:
        raise MathInputError(
            f"the expression is too long ({len(text):,} characters; the limit is {MAX_CHARS:,})"
        )
    text = re.sub(r"[\s=?]+$", "", text.strip())
    if not text:
        raise MathInputError("the expression is empty; write something like 2x^2 + 3")
    return text


def normalize(text: str) -> str:
    """Rewrite everyday notation (x², 2x, √x, 15% of 240, ...) as a Python expression text."""
    tokens = _tokenize(clean(text).translate(_CHAR_MAP))
    tokens = _split_names(tokens)
    _check_names(tokens)
    tokens = _superscripts(tokens)
    tokens = _roots(tokens)
    tokens = _percents(tokens)
    tokens = _factorials(tokens)
    tokens = _implicit_products(tokens)
    if len(tokens) > MAX_TOKENS:
        raise MathInputError(f"the expression is too long (more than {MAX_TOKENS} symbols)")
    return " ".join(tokens)


def _tokenize(text: str) -> list[str]:
    tokens: list[str] = []
    depth = 0
    for match in _TOKEN.finditer(text):
        kind, token = match.lastgroup, match.group()
        if kind == "space":
            continue
        if kind == "sup" and not re.fullmatch(r"[⁻⁺]?[⁰¹²³⁴⁵⁶⁷⁸⁹]+", token):
            raise MathInputError(f"could not read the superscript `{token}`; write x^2 or x^(-1)")
        if kind == "num":
            token = re.sub(r"^0+(?=[0-9])", "", token)
        depth += {"(": 1, ")": -1}.get(token, 0)
        if depth > MAX_PAREN_DEPTH:
            raise MathInputError(
                f"the expression is nested too deeply "
                f"(over {MAX_PAREN_DEPTH} levels of parentheses)"
            )
        tokens.append(token)
        if len(tokens) > MAX_TOKENS:
            raise MathInputError(f"the expression is too long (more than {MAX_TOKENS} symbols)")
    return tokens


def _is_name(token: str) -> bool:
    return token[0].isalpha() or token[0] == "_"


def _split_names(tokens: list[str]) -> list[str]:
    """Read `xy` as x*y and `2ax` as 2*a*x: unknown names made only of variable letters."""
    out: list[str] = []
    for token in tokens:
        if token.casefold() == "nan":
            # Not a*n^2: "nan" is what a program prints for a missing number.
            raise MathInputError("`nan` (not a number) has no value to compute with; "
                                 "give a real number")
        if _is_name(token) and token not in _KNOWN and set(token) <= _SPLITTABLE:
            out.extend(token)
        else:
            out.append(token)
    return out


def _check_names(tokens: list[str]) -> None:
    for before, token in zip(["", *tokens], tokens, strict=False):
        if _is_name(token) and token not in _KNOWN:
            if before.endswith("."):  # x.real, (1).bit_length(), '{0.__class__}'.format(1)
                raise MathInputError(ATTRIBUTES_REFUSED.format(name=token))
            kind = "function" if token.lower() in {f.lower() for f in FUNCTIONS} else "name"
            raise MathInputError(f"`{token}` is not an allowed {kind}; {ALLOWED}")


def _superscripts(tokens: list[str]) -> list[str]:
    out: list[str] = []
    for token in tokens:
        if token[0] in "⁰¹²³⁴⁵⁶⁷⁸⁹⁻⁺":
            out.extend(["**", "(", token.translate(_SUPERSCRIPTS), ")"])
        else:
            out.append(token)
    return out


def _group_end(tokens: list[str], start: int) -> int:
    """Index just past the operand that begins at `start` (a number, name, call or group)."""
    if start >= len(tokens):
        return start
    token = tokens[start]
    if token in "+-" and start + 1 < len(tokens):
        return _group_end(tokens, start + 1)
    if token == "(":
        depth = 0
        for i in range(start, len(tokens)):
            depth += {"(": 1, ")": -1}.get(tokens[i], 0)
            if depth == 0:
                return i + 1
        return len(tokens)
    if token in FUNCTIONS and start + 1 < len(tokens) and tokens[start + 1] == "(":
        return _group_end(tokens, start + 1)
    if _is_name(token) or token[0].isdigit() or token[0] == ".":
        return start + 1
    return start


def _group_start(tokens: list[str], end: int) -> int:
    """Index where the operand that ends just before `end` begins."""
    if tokens[end - 1] != ")":
        return end - 1
    depth = 0
    for i in range(end - 1, -1, -1):
        depth += {")": 1, "(": -1}.get(tokens[i], 0)
        if depth == 0:
            return i - 1 if i > 0 and tokens[i - 1] in FUNCTIONS else i
    return 0


def _roots(tokens: list[str]) -> list[str]:
    """√x -> sqrt(x), applied to the operand right after the sign; inner roots first."""
    tokens = list(tokens)
    for i in range(len(tokens) - 1, -1, -1):
        if tokens[i] != "√":
            continue
        end = _group_end(tokens, i + 1)
        if end == i + 1:
            raise MathInputError("√ needs something after it, like √2 or √(x+1)")
        tokens[i : end] = ["sqrt", "(", *tokens[i + 1 : end], ")"]
    return tokens


def _percents(tokens: list[str]) -> list[str]:
    """`15% of 240` -> (15/100)*240, `20%` -> (20/100); `7 % 3` stays modulo."""
    out: list[str] = []
    i = 0
    while i < len(tokens):
        token = tokens[i]
        following = tokens[i + 1] if i + 1 < len(tokens) else None
        if token == "%" and out and not _is_operator(out[-1]):
            modulo = following is not None and following != "of" and _starts_operand(following)
            if not modulo:
                start = _group_start(out, len(out))
                out[start:] = ["(", *out[start:], "/", "100", ")"]
                if following == "of":
                    out.append("*")
                    i += 1
                i += 1
                continue
        if token == "of":
            raise MathInputError("`of` only works after a percentage, like 15% of 240")
        out.append(token)
        i += 1
    return out


def _factorials(tokens: list[str]) -> list[str]:
    """`5!` -> factorial(5), `(n+1)!` -> factorial((n+1))."""
    out: list[str] = []
    for token in tokens:
        if token == "!" and out and not _is_operator(out[-1]):
            start = _group_start(out, len(out))
            out[start:] = ["factorial", "(", *out[start:], ")"]
        else:
            out.append(token)
    return out


def _is_operator(token: str) -> bool:
    return token in {"**", "*", "/", "+", "-", "%", "(", ",", "="}


def _starts_operand(token: str) -> bool:
    return token == "(" or _is_name(token) or token[0].isdigit() or token[0] == "."


def _implicit_products(tokens: list[str]) -> list[str]:
    """Insert the `*` people leave out: 2x, 3(x+1), (x+1)(x-1), 2 sin(x), x y."""
    out: list[str] = []
    for i, token in enumerate(tokens):
        if token in FUNCTIONS and (i + 1 == len(tokens) or tokens[i + 1] != "("):
            raise MathInputError(f"`{token}` needs parentheses, like {token}(x)")
        if out and _ends_operand(out[-1]) and _starts_operand(token):
            both_numbers = not _is_name(out[-1]) and out[-1] != ")" and not _is_name(token)
            if not (both_numbers and token != "("):
                out.append("*")
        out.append(token)
    return out


def _ends_operand(token: str) -> bool:
    return token == ")" or token in _VALUES or token[0].isdigit() or token[0] == "."
