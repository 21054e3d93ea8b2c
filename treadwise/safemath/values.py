"""A result's values for code: one number in full, its float, a formula in the variable."""

from __future__ import annotations

import math

import sympy as sp

from treadwise.safemath.answer import Answer
from treadwise.safemath.display import MAX_SHOWN_DIGITS, show, show_expr, terminating_decimal
from treadwise.safemath.math_errors import MathInputError
from treadwise.safemath.sizes import digits

MAX_FORMULA_CHARS = 200
MAX_EXACT_CHARS = 300


def exact_text(value: sp.Expr) -> str | None:
    """One number shown in full in the parser's notation ("0.25", "1/3", "2*sqrt(2)", "pi");
    None for a float, an infinity, a formula or a number too long to show in full."""
    if not value.is_number or value.is_Float or value.has(sp.nan, sp.zoo, sp.oo, -sp.oo):
        return None
    if value.is_Integer:
        return str(int(value)) if digits(int(value)) <= MAX_SHOWN_DIGITS else None
    if value.is_Rational:
        p, q = int(value.p), int(value.q)
        if max(digits(p), digits(q)) > MAX_SHOWN_DIGITS:
            return None
        return terminating_decimal(p, q) or f"{p}/{q}"
    try:
        text = show_expr(value)
    except MathInputError:
        return None
    return text if len(text) <= MAX_EXACT_CHARS and "digit integer" not in text else None


def approx_value(value: object) -> float | None:
    """A finite real value as a float (sympy or mpmath numbers); None otherwise."""
    try:
        if isinstance(value, sp.Expr):
            if not value.is_number or value.is_real is False:
                return None
            value = value.evalf(17)
        number = float(value)  # type: ignore[arg-type]
    except (TypeError, ValueError, ArithmeticError, AttributeError):
        return None
    return number if math.isfinite(number) else None


def formula_text(value: sp.Expr) -> str | None:
    """A result in a variable, shown (None for a plain number or one too long to reuse)."""
    if not value.free_symbols:
        return None
    text = show_expr(value)
    return text if len(text) <= MAX_FORMULA_CHARS else None


def equals(asked: str, value: sp.Expr, note: str = "") -> Answer:
    """"asked = value" with the value as data: a number, or a formula when it has a variable."""
    shown = show(value)
    statement = f"{asked} = {shown}{note}"
    if value.free_symbols:
        return Answer(statement, "formula", asked, shown, formula=formula_text(value))
    if value.has(sp.nan, sp.zoo):
        return Answer(statement, "none", asked, shown)
    return Answer(statement, "value", asked, shown, exact=exact_text(value),
                  approx=approx_value(value))
