"""Size caps on exact numbers: refuse a result with too many digits before sympy computes it."""

from __future__ import annotations

import math
from typing import TYPE_CHECKING

from treadwise.safemath.math_errors import MathInputError

if TYPE_CHECKING:
    import sympy

MAX_DIGITS = 10_000
MAX_SYMBOLIC_EXPONENT = 1000


def sympy_module():
    """sympy, imported on first use so that importing the parser stays cheap."""
    import sympy

    return sympy


def log10_abs(value: sympy.Expr) -> float | None:
    """log10 of |value| for a number (exact sizes from bit lengths), None if unknown or infinite."""
    sp = sympy_module()
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


def too_large(log_digits: float) -> MathInputError:
    digits = f"{10 ** log_digits:,.0f}" if log_digits < 15 else f"10^{log_digits:.0f}"
    return MathInputError(
        f"the number is too large to compute: about {digits} digits "
        f"(the limit is {MAX_DIGITS:,} digits); try a smaller number"
    )


def check_size(value: sympy.Expr) -> sympy.Expr:
    """Refuse exact numbers with more than MAX_DIGITS digits, and powers of expressions with
    variables beyond MAX_SYMBOLIC_EXPONENT; pass everything else through."""
    if value.is_Rational:
        size = log10_abs(value)
        if size is not None and math.isfinite(size) and abs(size) > MAX_DIGITS:
            raise too_large(abs(size))
    elif value.is_Pow and not value.base.is_number:
        # sympy folds ((x+1)^1000)^1000 and x^600*x^600 into one power: check what it made.
        _check_symbolic_exponent(value.exp)
    return value


def _check_symbolic_exponent(exponent: sympy.Expr) -> None:
    size = log10_abs(exponent) if exponent.is_number else None
    if size is not None and size > math.log10(MAX_SYMBOLIC_EXPONENT):
        raise MathInputError(
            f"exponents on expressions with variables are limited to {MAX_SYMBOLIC_EXPONENT}"
        )


def checked_power(base: sympy.Expr, exponent: sympy.Expr) -> sympy.Expr:
    """base**exponent, refused before sympy computes it when the result would be too large."""
    if exponent.is_number:
        coefficient = base if base.is_number else base.as_coeff_Mul()[0]
        if not base.is_number:
            _check_symbolic_exponent(exponent)
        exponent_size = log10_abs(exponent)
        base_size = log10_abs(coefficient)
        if exponent_size is not None and base_size not in (None, -math.inf, 0.0):
            log_digits = exponent_size + math.log10(abs(base_size))
            if log_digits > math.log10(MAX_DIGITS):
                raise too_large(log_digits)
    return check_size(sympy_module().Pow(base, exponent))
