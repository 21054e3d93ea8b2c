"""How math results read: x^2 and 3x, exact values with "≈ decimal", big numbers abbreviated."""

from __future__ import annotations

import re

import mpmath
import sympy as sp
from sympy.printing.str import StrPrinter

from treadwise.safemath.math_errors import MathInputError
from treadwise.safemath.sizes import digits

MAX_SHOWN_CHARS = 2000
MAX_SHOWN_DIGITS = 60
SIG_DIGITS = 9
SUBSCRIPTS = str.maketrans("0123456789-", "₀₁₂₃₄₅₆₇₈₉₋")
SUPERSCRIPTS = str.maketrans("0123456789-", "⁰¹²³⁴⁵⁶⁷⁸⁹⁻")


class _Printer(StrPrinter):
    """sympy's str printer with big numbers abbreviated and ln, abs and ∞ spelled out."""

    def _print_Integer(self, expr: sp.Integer) -> str:
        return _integer_text(int(expr))

    def _print_Rational(self, expr: sp.Rational) -> str:
        return f"{_integer_text(int(expr.p))}/{_integer_text(int(expr.q))}"

    def _print_Infinity(self, expr: sp.Expr) -> str:
        return "∞"

    def _print_NegativeInfinity(self, expr: sp.Expr) -> str:
        return "-∞"

    def _print_ComplexInfinity(self, expr: sp.Expr) -> str:
        return "undefined"

    def _print_NaN(self, expr: sp.Expr) -> str:
        return "undefined"

    def _print_log(self, expr: sp.Expr) -> str:
        return f"ln({self._print(expr.args[0])})"

    def _print_Abs(self, expr: sp.Expr) -> str:
        return f"abs({self._print(expr.args[0])})"

    def _print_Add(self, expr: sp.Add, order: str | None = None) -> str:
        # Numbers read better with the rational part last: "E - 1", "pi/2 + 1".
        constant, rest = expr.as_coeff_Add()
        if expr.free_symbols or constant == 0 or rest.has(sp.I):
            return super()._print_Add(expr, order)
        sign = "-" if constant < 0 else "+"
        return f"{self._print(rest)} {sign} {self._print(abs(constant))}"


_PRINTER = _Printer()
_DOUBLE_PARENS = re.compile(r"\(\((\d+-digit integer ≈ [^()]*)\)\)")
_IMPLIED_TIMES = re.compile(r"(?<![\w.^/])(\d+(?:\.\d+)?)\*(?=\(|(?![EI])[a-zA-Z](?![\w(]))")


def show_expr(expr: sp.Expr) -> str:
    """Readable text for an expression: x^2, 3x, sqrt(2), E, pi, ln(x)."""
    if expr.is_Pow and expr.exp.is_Rational and expr.exp < -1:
        # (x + 1)^(-2) reads better as 1/(x + 1)^2; inside larger terms sympy already does this.
        return "1/" + show_expr(sp.Pow(expr.base, -expr.exp, evaluate=False))
    text = _PRINTER.doprint(expr).replace("**", "^")
    text = _IMPLIED_TIMES.sub(r"\1", text)
    text = _DOUBLE_PARENS.sub(r"(\1)", text)
    if len(text) > MAX_SHOWN_CHARS:
        raise MathInputError(
            f"the result is too long to show ({len(text):,} characters); try a simpler expression"
        )
    return text


def show(value: sp.Expr) -> str:
    """A result as people read it: exact, plus "≈ decimal" when the exact form is not a decimal."""
    if value.has(sp.nan, sp.zoo):
        return "undefined"
    if value.is_Integer:
        return integer_value(int(value))
    if value.is_Rational:
        return _rational_value(value)
    if value.is_Float:
        return f"≈ {_decimal(value)}"
    exact = show_expr(value)
    if value.is_number and not value.has(sp.oo, -sp.oo) and not _gaussian_rational(value):
        approx = _decimal(value)
        if approx and approx != exact:
            return f"{exact} ≈ {approx}" if len(exact) <= 300 else f"≈ {approx}"
    return exact


def _gaussian_rational(value: sp.Expr) -> bool:
    real, imag = value.as_real_imag()
    return bool(real.is_Rational and imag.is_Rational)


def _integer_text(n: int) -> str:
    if digits(n) <= MAX_SHOWN_DIGITS:
        return str(n)
    return f"({integer_value(n)})"


def integer_value(n: int) -> str:
    """An integer in full, or as "6021-digit integer ≈ 3.98027684e6020" when it is long."""
    count = digits(n)
    if count <= MAX_SHOWN_DIGITS:
        return str(n)
    sign = "-" if n < 0 else ""
    return f"{sign}{count}-digit integer ≈ {format_decimal(mpmath.mpf(n))}"


def _rational_value(value: sp.Rational) -> str:
    decimal = terminating_decimal(int(value.p), int(value.q))
    if decimal is not None:
        return decimal
    approx = format_decimal(mpmath.mpf(int(value.p)) / int(value.q))
    if max(digits(int(value.p)), digits(int(value.q))) > MAX_SHOWN_DIGITS:
        return f"≈ {approx}"
    return f"{value.p}/{value.q} ≈ {approx}"


def terminating_decimal(p: int, q: int) -> str | None:
    """p/q as an exact short decimal ("0.25"), or None when it does not terminate soon."""
    twos = fives = 0
    while q % 2 == 0:
        q //= 2
        twos += 1
    while q % 5 == 0:
        q //= 5
        fives += 1
    places = max(twos, fives)
    if q != 1 or places > 20 or digits(p) > 24:
        return None
    scaled = abs(p) * 10**places // (2**twos * 5**fives)
    text = str(scaled).rjust(places + 1, "0")
    if places:
        text = f"{text[:-places]}.{text[-places:]}".rstrip("0").rstrip(".")
    return f"-{text}" if p < 0 else text


def _decimal(value: sp.Expr) -> str | None:
    try:
        number = value.evalf(15)
        if number.is_Float:
            return format_decimal(mpmath.mpf(number))
        real, imag = number.as_real_imag()
        if not (real.is_Float or real.is_zero) or not (imag.is_Float or imag.is_zero):
            return None
        if abs(imag) <= 1e-14 * max(1, abs(real)):
            return format_decimal(mpmath.mpf(real))
        imag_text = f"{format_decimal(mpmath.mpf(abs(imag)))}*I"
        if real.is_zero:
            return f"-{imag_text}" if imag < 0 else imag_text
        return f"{format_decimal(mpmath.mpf(real))} {'-' if imag < 0 else '+'} {imag_text}"
    except (TypeError, ValueError, ArithmeticError, AttributeError):
        return None


def format_decimal(number: mpmath.mpf) -> str:
    """Nine significant digits, scientific when large or small: 1.41421356, 3.98027684e6020."""
    text = mpmath.nstr(number, SIG_DIGITS, min_fixed=-4, max_fixed=SIG_DIGITS)
    text = text.replace("e+", "e")
    return text[:-2] if text.endswith(".0") else text


def superscript(n: int) -> str:
    return str(n).translate(SUPERSCRIPTS)


def subscript(n: int) -> str:
    return str(n).translate(SUBSCRIPTS)


def pretty(text: str) -> str:
    """x^2 -> x², x^(-1) -> x⁻¹: for titles and labels."""
    text = re.sub(r"\^\((-?\d+)\)", lambda m: m.group(1).translate(SUPERSCRIPTS), text)
    return re.sub(r"\^(\d+)", lambda m: m.group(1).translate(SUPERSCRIPTS), text)
