"""Arithmetic operations: the four operations, powers, roots and the general calculator."""

from __future__ import annotations

import re
import sys
from collections.abc import Callable

import mpmath
import sympy as sp

from treadwise.safemath.answer import Answer
from treadwise.safemath.display import format_decimal, show_expr
from treadwise.safemath.jobs import operation, quietly
from treadwise.safemath.math_errors import MathInputError
from treadwise.safemath.numbers import echo, number_text, operand
from treadwise.safemath.parser import parse
from treadwise.safemath.sizes import check_size, checked_power, log10_abs
from treadwise.safemath.values import approx_value, equals, exact_text

# A number written as a float: 1e308, 2.5, .5 (an exponent or a decimal point).
FLOAT_LITERAL_RE = re.compile(r"\d[eE][-+]?\d|\d\.\d|(?<![\d.])\.\d")
LARGEST_FLOAT_LOG10 = sys.float_info.max_10_exp + 0.2547  # log10(1.797...e308)


def _arithmetic(symbol: str, a: object, b: object, combine: Callable) -> Answer:
    left, right = operand(a, "the first number"), operand(b, "the second number")
    result = check_size(combine(left, right))
    if result.has(sp.zoo, sp.nan):
        raise MathInputError("the result is undefined (division by zero)")
    return equals(f"{number_text(left, wrap_negative=False)} {symbol} {number_text(right)}",
                  result)


@operation
def add(a: float, b: float) -> Answer:
    return _arithmetic("+", a, b, lambda x, y: x + y)


@operation
def subtract(a: float, b: float) -> Answer:
    return _arithmetic("-", a, b, lambda x, y: x - y)


@operation
def multiply(a: float, b: float) -> Answer:
    return _arithmetic("×", a, b, lambda x, y: x * y)


@operation
def divide(a: float, b: float) -> Answer:
    if operand(b, "the second number").is_zero:
        raise MathInputError("cannot divide by zero")
    return _arithmetic("÷", a, b, lambda x, y: x / y)


@operation
def power(base: float, exponent: float) -> Answer:
    value, exp = operand(base, "the base"), operand(exponent, "the exponent")
    if value.is_zero and exp.is_negative:
        raise MathInputError("0 to a negative power is undefined (division by zero)")
    return equals(f"{number_text(value)}^{number_text(exp)}", checked_power(value, exp))


@operation
def square(x: float) -> Answer:
    value = operand(x)
    return equals(f"{number_text(value)}²", checked_power(value, sp.Integer(2)))


@operation
def square_root(x: float) -> Answer:
    value = operand(x)
    root = sp.sqrt(value)
    if value.is_negative:
        return equals(f"√({number_text(value, False)})", root,
                      " (imaginary: a negative number has no real square root)")
    return equals(f"√{number_text(value)}", root)


@operation
def calculate(expression: str) -> Answer:
    value = parse(expression)
    if value.has(sp.nan, sp.zoo):
        raise MathInputError("the result is undefined (for example a division by zero)")
    if not value.is_Atom:
        simpler = quietly(lambda: sp.simplify(value), 0.6)
        if simpler is not None and len(show_expr(simpler)) < len(show_expr(value)):
            value = simpler
    if FLOAT_LITERAL_RE.search(expression) and _overflows_float(value):
        shown = f"≈ {format_decimal(mpmath.mpf(sp.N(value, 15)))}"
        return Answer(f"{echo(expression)} {shown}, beyond floating-point numbers (they overflow "
                      "above about 1.8e308; this is exact arithmetic, not float arithmetic)",
                      asked=echo(expression), shown=shown, exact=exact_text(value),
                      approx=approx_value(value))
    return equals(echo(expression), value)


def _overflows_float(value: sp.Expr) -> bool:
    """Whether a real number is too large for a float (a double overflows to inf)."""
    size = log10_abs(value) if value.is_number and value.is_real else None
    return size is not None and size > LARGEST_FLOAT_LOG10
