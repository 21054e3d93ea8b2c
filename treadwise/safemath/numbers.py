"""Numbers from tool arguments (exact, never the nearest float) and numbers as people read them."""

from __future__ import annotations

import math
import re
from fractions import Fraction

import sympy as sp

from treadwise.safemath.display import digits, show_expr, terminating_decimal
from treadwise.safemath.math_errors import MathInputError
from treadwise.safemath.notation import clean
from treadwise.safemath.parser import MAX_LITERAL_DIGITS, parse


def echo(text: str) -> str:
    shown = " ".join(clean(text).split()).replace("**", "^")
    return shown if len(shown) <= 120 else shown[:117] + "..."


def as_text(value: object, what: str) -> str | None:
    if value is None or (isinstance(value, str) and value.strip().lower() in ("", "none", "null")):
        return None
    if isinstance(value, bool):
        raise MathInputError(f"{what} must be a number or an expression, not {value}")
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        if math.isnan(value):
            raise MathInputError(f"{what} is not a number")
        return "oo" if value == math.inf else "-oo" if value == -math.inf else repr(value)
    if isinstance(value, str):
        return value
    raise MathInputError(f"{what} must be a number or an expression like pi/2")


def operand(value: object, what: str = "the number") -> sp.Expr:
    """An exact number from a tool argument: 0.1 means 1/10, not the nearest binary float."""
    if isinstance(value, bool):
        raise MathInputError(f"{what} must be a number, not {value}")
    if isinstance(value, int):
        if digits(value) > MAX_LITERAL_DIGITS:
            raise MathInputError(f"numbers are limited to {MAX_LITERAL_DIGITS} digits")
        return sp.Integer(value)
    if isinstance(value, float):
        if not math.isfinite(value):
            raise MathInputError(f"{what} is not a finite number")
        exact = Fraction(repr(value))
        return sp.Rational(exact.numerator, exact.denominator)
    if isinstance(value, str):
        number = parse(value)
        if not number.is_number:
            raise MathInputError(f"`{value}` is not a number")
        return number
    raise MathInputError(f"{what} must be a number")


def number_text(value: sp.Expr, wrap_negative: bool = True) -> str:
    if value.is_Rational:
        text = terminating_decimal(int(value.p), int(value.q)) or show_expr(value)
    else:
        text = show_expr(value)
    simple = re.fullmatch(r"-?[\d.]+", text) is not None
    if wrap_negative and (text.startswith("-") or not simple):
        return f"({text})"
    return text


def sign(value: sp.Expr) -> int:
    number = to_float(value)
    if not math.isfinite(number) or abs(number) < 1e-12:
        return 0
    return 1 if number > 0 else -1


def to_float(value: sp.Expr) -> float:
    try:
        number = value.evalf(15)
        return float(number) if number.is_real else math.nan
    except (TypeError, ValueError, ArithmeticError):
        return math.nan
