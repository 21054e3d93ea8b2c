"""Untrusted math text -> sympy expression, through a lexical pre-pass and an AST allow-list."""

from __future__ import annotations

import ast
import math
import re
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import sympy

MAX_CHARS = 2000
MAX_TOKENS = 600
MAX_PAREN_DEPTH = 50
MAX_NODES = 2000
MAX_AST_DEPTH = 100
MAX_POWER_NESTING = 8
MAX_LITERAL_DIGITS = 100
MAX_LITERAL_EXPONENT = 1000
MAX_DIGITS = 10_000
MAX_SYMBOLIC_EXPONENT = 1000
MAX_FACTORIAL = 1000
# exp(t) has about 0.434 * t digits, so this keeps exp, sinh and cosh within MAX_DIGITS.
MAX_EXP_ARGUMENT = 23_000

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
_NUMBER = re.compile(r"([0-9]*)\.?([0-9]*)(?:[eE]([+-]?[0-9]+))?")
_KNOWN = frozenset(VARIABLES + CONSTANTS + FUNCTIONS) | {"of"}
_VALUES = frozenset(VARIABLES + CONSTANTS)
_SPLITTABLE = frozenset(VARIABLES) | {"e"}

_REFUSED = {
    ast.Attribute: "attribute access (`.name`) is not allowed",
    ast.Subscript: "indexing with [ ] is not allowed",
    ast.Lambda: "lambda is not allowed",
    ast.ListComp: "comprehensions are not allowed",
    ast.GeneratorExp: "comprehensions are not allowed",
    ast.SetComp: "comprehensions are not allowed",
    ast.DictComp: "comprehensions are not allowed",
    ast.List: "lists are not allowed",
    ast.Tuple: "several values separated by commas are not allowed",
    ast.Set: "sets are not allowed",
    ast.Dict: "dictionaries are not allowed",
    ast.Compare: "comparisons (< > ==) are not allowed",
    ast.BoolOp: "`and` / `or` are not allowed",
    ast.IfExp: "`if` expressions are not allowed",
    ast.NamedExpr: "assignments are not allowed",
    ast.JoinedStr: "text in quotes is not allowed",
    ast.Starred: "starred arguments are not allowed",
}
_OPERATOR_NAMES = {
    ast.FloorDiv: "//", ast.MatMult: "@", ast.LShift: "<<", ast.RShift: ">>",
    ast.BitOr: "| (write abs(x) for absolute value)", ast.BitXor: "xor", ast.BitAnd: "&",
    ast.Invert: "~", ast.Not: "not",
}


class MathInputError(ValueError):
    """Math input that was refused or could not be computed; the message is meant for people."""


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


def parse(text: str) -> sympy.Expr:
    """Parse untrusted text into a sympy expression, refusing anything outside the allow-list."""
    source = normalize(text)
    if "=" in source.split():
        raise MathInputError("`=` makes this an equation; use solve_equation for equations")
    return _build(source)


def parse_equation(text: str) -> tuple[sympy.Expr, sympy.Expr]:
    """Parse `left = right` (or a bare expression meaning `= 0`) into its two sides."""
    sides = re.split(r"==?", clean(text))
    if len(sides) > 2:
        raise MathInputError("an equation has exactly one `=`; solve one equation at a time")
    if len(sides) == 1:
        return parse(sides[0]), _sympy().Integer(0)
    return parse(sides[0]), parse(sides[1])


def parse_variable(name: object) -> sympy.Symbol:
    """The sympy symbol for a variable name such as "x"."""
    if not isinstance(name, str) or name.strip() not in VARIABLES:
        raise MathInputError(
            f"{name!r} is not an allowed variable; use one of {', '.join(VARIABLES)}"
        )
    return _symbol(name.strip())


def _sympy():
    import sympy

    return sympy


def _symbol(name: str) -> sympy.Symbol:
    # Real symbols give the answers people expect: d/dx|x| = sign(x), sqrt(x^2) = |x|.
    return _sympy().Symbol(name, real=True)


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
        if _is_name(token) and token not in _KNOWN and set(token) <= _SPLITTABLE:
            out.extend(token)
        else:
            out.append(token)
    return out


def _check_names(tokens: list[str]) -> None:
    for token in tokens:
        if _is_name(token) and token not in _KNOWN:
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


def _build(source: str) -> sympy.Expr:
    try:
        tree = ast.parse(source, mode="eval")
    except SyntaxError as exc:
        raise MathInputError(_syntax_message(source, exc)) from None
    except (RecursionError, MemoryError, ValueError):
        raise MathInputError("the expression is too complex to read") from None
    _check_shape(tree)
    try:
        return _Builder(source).build(tree.body, 0)
    except RecursionError:
        raise MathInputError("the expression is nested too deeply") from None
    except (ArithmeticError, TypeError, ValueError, AttributeError, NotImplementedError) as exc:
        if isinstance(exc, MathInputError):
            raise
        raise MathInputError(f"could not build this expression ({type(exc).__name__})") from None


def _syntax_message(source: str, exc: SyntaxError) -> str:
    near = ""
    if exc.offset and 0 < exc.offset <= len(source):
        near = f" near `{source[max(0, exc.offset - 10) : exc.offset + 10].strip()}`"
    hint = "write abs(x) for |x|" if "|" in source else "write it like 2x^2 + sin(x) - 3"
    return f"could not read this as a math expression{near}; {hint}"


def _check_shape(tree: ast.AST) -> None:
    """Count nodes and depth without recursion, before anything recursive walks the tree."""
    stack = [(tree, 1)]
    count = 0
    while stack:
        node, depth = stack.pop()
        count += 1
        if count > MAX_NODES:
            raise MathInputError("the expression is too large; split it into smaller steps")
        if depth > MAX_AST_DEPTH:
            raise MathInputError(
                f"the expression is nested too deeply (over {MAX_AST_DEPTH} levels)"
            )
        stack.extend((child, depth + 1) for child in ast.iter_child_nodes(node))


def log10_abs(value: sympy.Expr) -> float | None:
    """log10 of |value| for a number (exact sizes from bit lengths), None if unknown or infinite."""
    sp = _sympy()
    if value.is_zero:
        return -math.inf
    if value.is_Rational:
        p, q = abs(int(value.p)), int(value.q)
        return _log10_int(p) - _log10_int(q)
    if not value.is_number or value.has(sp.oo, -sp.oo, sp.zoo, sp.nan):
        return None
    try:
        magnitude = abs(value.evalf(15))
        if not magnitude.is_Float:
            return None
        mantissa, exponent = magnitude._mpf_[1], magnitude._mpf_[2]
        return _log10_int(int(mantissa)) + exponent * math.log10(2)
    except (TypeError, ValueError, ArithmeticError):
        return None


def _log10_int(n: int) -> float:
    if n < 1 << 1000:
        return math.log10(n)
    shift = n.bit_length() - 64
    return math.log10(n >> shift) + shift * math.log10(2)


def _too_large(log_digits: float) -> MathInputError:
    digits = f"{10 ** log_digits:,.0f}" if log_digits < 15 else f"10^{log_digits:.0f}"
    return MathInputError(
        f"the number is too large to compute: about {digits} digits "
        f"(the limit is {MAX_DIGITS:,} digits); try a smaller number"
    )


def check_size(value: sympy.Expr) -> sympy.Expr:
    """Refuse exact numbers with more than MAX_DIGITS digits; pass everything else through."""
    if value.is_Rational:
        size = log10_abs(value)
        if size is not None and math.isfinite(size) and abs(size) > MAX_DIGITS:
            raise _too_large(abs(size))
    return value


def checked_power(base: sympy.Expr, exponent: sympy.Expr) -> sympy.Expr:
    """base**exponent, refused before sympy computes it when the result would be too large."""
    if exponent.is_number:
        coefficient = base if base.is_number else base.as_coeff_Mul()[0]
        if not base.is_number:
            size = log10_abs(exponent)
            if size is not None and size > math.log10(MAX_SYMBOLIC_EXPONENT):
                raise MathInputError(
                    "exponents on expressions with variables are limited to "
                    f"{MAX_SYMBOLIC_EXPONENT}"
                )
        exponent_size = log10_abs(exponent)
        base_size = log10_abs(coefficient)
        if exponent_size is not None and base_size not in (None, -math.inf, 0.0):
            log_digits = exponent_size + math.log10(abs(base_size))
            if log_digits > math.log10(MAX_DIGITS):
                raise _too_large(log_digits)
    return check_size(_sympy().Pow(base, exponent))


class _Builder:
    """Builds the sympy expression node by node, checking sizes before sympy computes."""

    def __init__(self, source: str):
        self.sp = _sympy()
        self.source = source
        sp = self.sp
        self.constants = {"pi": sp.pi, "e": sp.E, "E": sp.E, "I": sp.I, "oo": sp.oo, "inf": sp.oo}
        self.functions = {
            "sin": sp.sin, "cos": sp.cos, "tan": sp.tan, "cot": sp.cot, "sec": sp.sec,
            "csc": sp.csc, "asin": sp.asin, "acos": sp.acos, "atan": sp.atan, "tanh": sp.tanh,
            "log": self._log, "ln": self._log, "log10": lambda v: sp.log(v, 10),
            "log2": lambda v: sp.log(v, 2), "sqrt": sp.sqrt, "cbrt": self._cbrt,
            "abs": sp.Abs, "Abs": sp.Abs, "floor": sp.floor, "ceiling": sp.ceiling,
            "exp": self._growing(sp.exp), "sinh": self._growing(sp.sinh),
            "cosh": self._growing(sp.cosh),
            "factorial": self._bounded(sp.factorial, MAX_FACTORIAL, "factorial"),
            "gamma": self._bounded(sp.gamma, MAX_FACTORIAL + 1, "gamma"),
        }

    def build(self, node: ast.AST, powers: int) -> sympy.Expr:
        if isinstance(node, ast.Constant):
            return self._constant(node)
        if isinstance(node, ast.Name):
            return self._name(node.id)
        if isinstance(node, ast.UnaryOp):
            return self._unary(node, powers)
        if isinstance(node, ast.BinOp):
            return self._binary(node, powers)
        if isinstance(node, ast.Call):
            return self._call(node, powers)
        what = _REFUSED.get(type(node), f"`{type(node).__name__}` is not allowed")
        raise MathInputError(f"{what} in a math expression; {ALLOWED}")

    def _constant(self, node: ast.Constant) -> sympy.Expr:
        if isinstance(node.value, str | bytes):
            raise MathInputError("text in quotes is not allowed in a math expression")
        if isinstance(node.value, bool) or not isinstance(node.value, int | float):
            raise MathInputError(f"`{node.value!r}` is not allowed; {ALLOWED}")
        return self._number(ast.get_source_segment(self.source, node) or "")

    def _number(self, text: str) -> sympy.Expr:
        match = _NUMBER.fullmatch(text)
        if not match or not (match.group(1) or match.group(2)):
            raise MathInputError(f"could not read the number `{text}`")
        whole, fraction, exponent = match.groups()
        if len(whole) + len(fraction) > MAX_LITERAL_DIGITS:
            raise MathInputError(
                f"numbers are limited to {MAX_LITERAL_DIGITS} digits; "
                "write big ones as 2^100 or 1e50"
            )
        shift = int(exponent or "0") if len(exponent or "") <= 6 else MAX_LITERAL_EXPONENT + 1
        if abs(shift) > MAX_LITERAL_EXPONENT:
            raise MathInputError(f"exponents in numbers are limited to ±{MAX_LITERAL_EXPONENT}")
        shift -= len(fraction)
        mantissa = int(whole + fraction or "0")
        if shift >= 0:
            return self.sp.Integer(mantissa * 10**shift)
        return self.sp.Rational(mantissa, 10**-shift)

    def _name(self, name: str) -> sympy.Expr:
        if name in VARIABLES:
            return _symbol(name)
        if name in self.constants:
            return self.constants[name]
        if name in self.functions:
            raise MathInputError(f"`{name}` needs an argument, like {name}(x)")
        raise MathInputError(f"`{name}` is not an allowed name; {ALLOWED}")

    def _unary(self, node: ast.UnaryOp, powers: int) -> sympy.Expr:
        if isinstance(node.op, ast.UAdd):
            return self.build(node.operand, powers)
        if isinstance(node.op, ast.USub):
            return -self.build(node.operand, powers)
        symbol = _OPERATOR_NAMES.get(type(node.op), "?")
        raise MathInputError(f"`{symbol}` is not allowed; {ALLOWED}")

    def _binary(self, node: ast.BinOp, powers: int) -> sympy.Expr:
        op = type(node.op)
        if op is ast.Pow:
            if powers >= MAX_POWER_NESTING:
                raise MathInputError(f"too many nested powers (the limit is {MAX_POWER_NESTING})")
            base = self.build(node.left, powers + 1)
            return checked_power(base, self.build(node.right, powers + 1))
        if op not in (ast.Add, ast.Sub, ast.Mult, ast.Div, ast.Mod):
            symbol = _OPERATOR_NAMES.get(op, op.__name__)
            raise MathInputError(f"`{symbol}` is not allowed; {ALLOWED}")
        left, right = self.build(node.left, powers), self.build(node.right, powers)
        if op in (ast.Div, ast.Mod) and right.is_zero:
            raise MathInputError("division by zero is undefined")
        if op is ast.Add:
            result = left + right
        elif op is ast.Sub:
            result = left - right
        elif op is ast.Mult:
            result = left * right
        elif op is ast.Div:
            result = left / right
        else:
            result = self.sp.Mod(left, right)
        return check_size(result)

    def _call(self, node: ast.Call, powers: int) -> sympy.Expr:
        if not isinstance(node.func, ast.Name) or node.func.id not in self.functions:
            name = node.func.id if isinstance(node.func, ast.Name) else "this"
            raise MathInputError(f"`{name}` is not an allowed function; {ALLOWED}")
        name = node.func.id
        if node.keywords or any(isinstance(arg, ast.Starred) for arg in node.args):
            raise MathInputError(f"`{name}` takes plain arguments only, like {name}(x)")
        arity = (1, 2) if name in ("log", "ln") else (1,)
        if len(node.args) not in arity:
            raise MathInputError(f"`{name}` takes {' or '.join(map(str, arity))} argument(s)")
        args = [self.build(arg, powers) for arg in node.args]
        return check_size(self.functions[name](*args))

    def _log(self, value: sympy.Expr, base: sympy.Expr | None = None) -> sympy.Expr:
        if base is None:
            return self.sp.log(value)
        if base.is_number and (base.is_zero or base == 1):
            raise MathInputError("a logarithm base must be positive and not 1")
        return self.sp.log(value, base)

    def _cbrt(self, value: sympy.Expr) -> sympy.Expr:
        # The real cube root for negative numbers: cbrt(-8) = -2, as people expect.
        if value.is_number and value.is_extended_negative:
            return -checked_power(-value, self.sp.Rational(1, 3))
        return checked_power(value, self.sp.Rational(1, 3))

    def _growing(self, function):
        def call(value: sympy.Expr) -> sympy.Expr:
            size = log10_abs(value) if value.is_number else None
            if size is not None and size > math.log10(MAX_EXP_ARGUMENT):
                raise _too_large(size + math.log10(0.4343))
            return function(value)

        return call

    def _bounded(self, function, limit: int, name: str):
        def call(value: sympy.Expr) -> sympy.Expr:
            size = log10_abs(value) if value.is_number else None
            if size is not None and size > math.log10(limit):
                raise MathInputError(f"{name} is limited to numbers up to {limit:,}")
            return function(value)

        return call
