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


def digits(n: int) -> int:
    """How many decimal digits |n| has, without str() (which refuses over 4300 digits)."""
    n = abs(n)
    if n < 10:
        return 1
    count = int(n.bit_length() * math.log10(2)) + 1
    return count - 1 if 10 ** (count - 1) > n else count


def too_large(count: int | None = None, *, tense: str = "would have") -> MathInputError:
    """The refusal of a number with `count` digits (exact), or more than the limit (None)."""
    if count is None:
        size = f"more than {MAX_DIGITS:,} digits"
    elif count <= 10**15:
        size = f"{count:,} digits"
    else:  # the count itself is too long to read: say how many digits it has
        size = f"more than 10^{digits(count) - 1} digits"
    return MathInputError(f"the number is too large to compute: it {tense} {size} "
                          f"(the limit is {MAX_DIGITS:,} digits); try a smaller number")


def power_digits(base: int, exponent: int) -> int:
    """The exact number of digits of base**exponent (base and exponent >= 1), uncomputed."""
    base = abs(base)
    if base == 1:
        return 1
    tens = digits(base) - 1
    if base == 10**tens:
        return exponent * tens + 1
    import mpmath

    # floor(exponent * log10(base)) + 1, with digits to spare: log10(base) is irrational.
    with mpmath.workdps(digits(exponent) + 30):
        return int(mpmath.floor(mpmath.mpf(exponent) * mpmath.log10(base))) + 1


def exp_digits(argument: sympy.Expr, halve: bool = False) -> int | None:
    """The exact number of digits of e**|argument| (of half of it, for sinh and cosh) when
    the argument is a fraction; None otherwise."""
    if not argument.is_Rational or argument.is_zero:
        return None
    import mpmath

    p, q = abs(int(argument.p)), int(argument.q)
    with mpmath.workdps(digits(p) + 30):
        log10 = mpmath.mpf(p) / q / mpmath.log(10) - (mpmath.log10(2) if halve else 0)
        return int(mpmath.floor(log10)) + 1


def check_size(value: sympy.Expr) -> sympy.Expr:
    """Refuse exact numbers with more than MAX_DIGITS digits (in the numerator or the
    denominator), and powers of expressions with variables beyond MAX_SYMBOLIC_EXPONENT;
    pass everything else through."""
    if value.is_Rational:
        count = max(digits(int(value.p)), digits(int(value.q)))
        if count > MAX_DIGITS:
            raise too_large(count, tense="has")
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
                raise too_large(_exact_count(coefficient, exponent))
    return check_size(sympy_module().Pow(base, exponent))


def _exact_count(base: sympy.Expr, exponent: sympy.Expr) -> int | None:
    """The digits of the larger of numerator and denominator of base**exponent, when base is
    a fraction and exponent a whole number; None otherwise."""
    if not (base.is_Rational and exponent.is_Integer) or exponent.is_zero:
        return None
    parts = (int(base.p), int(base.q)) if exponent > 0 else (int(base.q), int(base.p))
    return max(power_digits(part, abs(int(exponent))) for part in parts if part)
