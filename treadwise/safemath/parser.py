"""Untrusted math text -> sympy expression, through a lexical pre-pass and an AST allow-list."""

from __future__ import annotations

import ast
import math
import re
from typing import TYPE_CHECKING

from treadwise.safemath.math_errors import MathInputError
from treadwise.safemath.notation import ALLOWED, ATTRIBUTES_REFUSED, VARIABLES, clean, normalize
from treadwise.safemath.sizes import (
    MAX_DIGITS,
    check_size,
    checked_power,
    exp_digits,
    log10_abs,
    too_large,
)

if TYPE_CHECKING:
    import sympy


MAX_NODES = 2000
MAX_AST_DEPTH = 100
MAX_POWER_NESTING = 8
MAX_LITERAL_DIGITS = 100
MAX_LITERAL_EXPONENT = 1000
MAX_FACTORIAL = 1000
# exp(t) has about 0.434 * t digits, so this keeps exp, sinh and cosh within MAX_DIGITS.
MAX_EXP_ARGUMENT = 23_000

_NUMBER = re.compile(r"([0-9]*)\.?([0-9]*)(?:[eE]([+-]?[0-9]+))?")


_REFUSED = {
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
    from treadwise.safemath.sizes import sympy_module

    return sympy_module()


def _symbol(name: str) -> sympy.Symbol:
    # Real symbols give the answers people expect: d/dx|x| = sign(x), sqrt(x^2) = |x|.
    return _sympy().Symbol(name, real=True)


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
            "exp": self._growing(sp.exp), "sinh": self._growing(sp.sinh, halve=True),
            "cosh": self._growing(sp.cosh, halve=True),
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
        if isinstance(node, ast.Attribute):
            raise MathInputError(ATTRIBUTES_REFUSED.format(name=node.attr))
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
        if isinstance(node.func, ast.Attribute):
            raise MathInputError(ATTRIBUTES_REFUSED.format(name=node.func.attr))
        if not isinstance(node.func, ast.Name):
            raise MathInputError(f"only the named math functions can be called; {ALLOWED}")
        if node.func.id not in self.functions:
            raise MathInputError(f"`{node.func.id}` is not an allowed function; {ALLOWED}")
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

    def _growing(self, function, halve: bool = False):
        def call(value: sympy.Expr) -> sympy.Expr:
            size = log10_abs(value) if value.is_number else None
            if size is not None and size > math.log10(MAX_EXP_ARGUMENT):
                count = exp_digits(value, halve)
                if count is None or count > MAX_DIGITS:
                    raise too_large(count)
            return function(value)

        return call

    def _bounded(self, function, limit: int, name: str):
        def call(value: sympy.Expr) -> sympy.Expr:
            size = log10_abs(value) if value.is_number else None
            if size is not None and size > math.log10(limit):
                raise MathInputError(f"{name} is limited to numbers up to {limit:,}")
            return function(value)

        return call
