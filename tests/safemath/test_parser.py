"""The math parser: everyday notation in, sympy out; everything outside the allow-list refused."""

from __future__ import annotations

import pytest
import sympy as sp
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from treadwise.safemath.math_errors import MathInputError
from treadwise.safemath.notation import normalize
from treadwise.safemath.parser import parse, parse_equation

x, y = sp.Symbol("x", real=True), sp.Symbol("y", real=True)

NOTATION = [
    ("x²+1", x**2 + 1),
    ("x³", x**3),
    ("x⁻¹", 1 / x),
    ("x^2", x**2),
    ("2x", 2 * x),
    ("3(x+1)", 3 * x + 3),
    ("(x+1)(x-1)", (x + 1) * (x - 1)),
    ("2 sin(x)", 2 * sp.sin(x)),
    ("x y", x * y),
    ("2xy", 2 * x * y),
    ("e^x", sp.exp(x)),
    ("e^(2x)", sp.exp(2 * x)),
    ("2π", 2 * sp.pi),
    ("√x", sp.sqrt(x)),
    ("√(x+1)", sp.sqrt(x + 1)),
    ("√√16", sp.Integer(2)),
    ("6×7", sp.Integer(42)),
    ("8÷2−1", sp.Integer(3)),
    ("15% of 240", sp.Integer(36)),
    ("50%", sp.Rational(1, 2)),
    ("7 % 3", sp.Integer(1)),
    ("5!", sp.Integer(120)),
    ("ln(x)", sp.log(x)),
    ("log10(1000)", sp.Integer(3)),
    ("log(8, 2)", sp.Integer(3)),
    ("cbrt(-8)", sp.Integer(-2)),
    ("0.1 + 0.2", sp.Rational(3, 10)),
    ("1e3", sp.Integer(1000)),
    ("½x", x / 2),
    ("  2 + 2 = ", sp.Integer(4)),
    ("2+2?", sp.Integer(4)),
    ("abs(-3)", sp.Integer(3)),
    ("oo", sp.oo),
    ("0*0", sp.Integer(0)),
    ("0^0", sp.Integer(1)),
]


@pytest.mark.parametrize(("text", "expected"), NOTATION)
def test_everyday_notation_means_what_people_mean(text: str, expected: sp.Expr) -> None:
    value = parse(text)
    assert value == expected or sp.simplify(value - expected) == 0


REFUSED = [
    ("__import__('os').system('id')", "`__import__` is not an allowed name"),
    ("().__class__.__base__.__subclasses__()",
     "attribute access and method calls (`.__class__`) are not allowed"),
    ("'{0.__class__}'.format(1)", "attribute access and method calls (`.__class__`)"),
    ("(1).bit_length()", "attribute access and method calls (`.bit_length`)"),
    ("lambda: 1", "`lambda` is not an allowed name"),
    ("[c for c in ()]", "`for` is not an allowed name"),
    ("x.__class__", "attribute access and method calls (`.__class__`) are not allowed"),
    ("'a'*10**9", "text in quotes is not allowed"),
    # Digit counts are exact (9^387420489 has 369,693,100 digits), or a true bound.
    ("9**9**9", "too large to compute: it would have 369,693,100 digits"),
    ("10**9999 * 10**9999", "too large to compute: it has 19,999 digits"),
    ("10**10000", "it has 10,001 digits (the limit is 10,000 digits)"),
    ("2^3^4^5", "it would have more than 10^488 digits"),
    ("1.5**100000", "it would have 47,713 digits"),
    ("((9**9)**9999)**9999", "too large to compute"),
    ("10**10**10", "too large to compute: it would have 10,000,000,001 digits"),
    ("cosh(23030)", "it would have 10,002 digits"),
    ("factorial(10**8)", "factorial is limited to numbers up to 1,000"),
    ("1+" * 50_000 + "1", "too long (100,001 characters; the limit is 2,000)"),
    ("(" * 300 + "1" + ")" * 300, "nested too deeply"),
    ("x" + "**x" * 2000, "too long"),
    ("x" + "^x" * 20, "too many nested powers"),
    ("x**5000", "limited to 1000"),
    ("exp(10**6)", "too large to compute: it would have 434,295 digits"),
    ("1e99999", "exponents in numbers are limited"),
    ("9" * 150, "numbers are limited to 100 digits"),
    ("1/0", "division by zero"),
    ("sin x", "`sin` needs parentheses"),
    ("what is 5 plus 3", "`what` is not an allowed name"),
    ("|x|", "abs(x)"),
    ("x = 2", "use solve_equation"),
    ("1, 2", "commas"),
    ("x < 2", "comparisons (< > ==) are not allowed"),
    ("", "empty"),
]


@pytest.mark.parametrize(("text", "message"), REFUSED, ids=[text[:30] for text, _ in REFUSED])
def test_refused_input_gets_a_clear_message(text: str, message: str) -> None:
    with pytest.raises(MathInputError) as caught:
        parse(text)
    assert message in str(caught.value)
    assert "Traceback" not in str(caught.value)


def test_refusals_name_what_is_allowed() -> None:
    with pytest.raises(MathInputError, match="allowed functions|functions sin, cos"):
        parse("open('/etc/passwd')")


def test_a_big_power_within_the_limit_is_exact() -> None:
    value = parse("2**20000")
    assert value == sp.Integer(2) ** 20000


def test_equations_split_at_the_equals_sign() -> None:
    assert parse_equation("x^2 - 4 = 0") == (x**2 - 4, 0)
    assert parse_equation("2x + 3 == 7") == (2 * x + 3, 7)
    assert parse_equation("x^2 - 4") == (x**2 - 4, 0)
    with pytest.raises(MathInputError, match="exactly one"):
        parse_equation("x = 1 = 2")


def test_normalize_only_rewrites_notation() -> None:
    assert normalize("2x² + 3(x+1)") == "2 * x ** ( 2 ) + 3 * ( x + 1 )"


TOKENS = ["x", "y", "0", "2", "10", "0.5", "9", "99", "**", "^", "*", "/", "+", "-", "%", " of ",
          "(",
          ")", "sin(", "sqrt(", "log(", "factorial(", "exp(", "gamma(", "e", "pi", "I", "oo", "²",
          "⁻¹", "√", "!", ".", ",", " ", "=", "x y", "__", "'", "[", "lambda", "1e9", "½", "|"]
mathish = st.lists(st.sampled_from(TOKENS), max_size=40).map("".join)


@settings(max_examples=2000, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.one_of(st.text(max_size=120), mathish))
def test_any_text_parses_or_is_refused_cleanly(text: str) -> None:
    try:
        result = parse(text)
    except MathInputError as exc:
        assert str(exc)
    else:
        assert isinstance(result, sp.Basic)
