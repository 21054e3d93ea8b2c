"""Calculus operations: integrals (exact, numeric or divergent), derivatives and area plots."""

from __future__ import annotations

import textwrap
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

import mpmath
import sympy as sp
from sympy.calculus.singularities import singularities

from treadwise.safemath.display import (
    format_decimal,
    pretty,
    show,
    show_expr,
    subscript,
    superscript,
)
from treadwise.safemath.errors import MathInputError
from treadwise.safemath.jobs import attempt, operation, quietly
from treadwise.safemath.numbers import as_text, to_float
from treadwise.safemath.numeric import compile_numeric
from treadwise.safemath.parser import parse, parse_variable
from treadwise.safemath.plotting import AreaPlot, render_area

MAX_ORDER = 10
MAX_PLOT_BOUND = 1e6


def _bound(value: object, variable: sp.Symbol, what: str) -> sp.Expr | None:
    text = as_text(value, what)
    if text is None:
        return None
    bound = parse(text)
    if variable in bound.free_symbols:
        raise MathInputError(f"the {what} cannot contain the integration variable {variable}")
    if bound.is_number and bound.is_extended_real is False:
        raise MathInputError(f"the {what} must be a real number, not {show_expr(bound)}")
    return bound


@dataclass(frozen=True)
class _Outcome:
    """A definite integral's value: exact, a numerical estimate, divergent, or unknown."""

    kind: Literal["exact", "numeric", "diverges", "unknown"]
    value: Any = None
    note: str = ""


@operation
def integrate(expression: str, variable: str = "x", lower: object = None,
              upper: object = None) -> str:
    x = parse_variable(variable)
    f = parse(expression)
    a, b = _bound(lower, x, "lower bound"), _bound(upper, x, "upper bound")
    if (a is None) != (b is None):
        raise MathInputError(
            "give both bounds for a definite integral, or neither for an antiderivative"
        )
    if a is None:
        return _antiderivative(f, x)
    return _integral_statement(f, x, a, b, _definite(f, x, a, b))


def _antiderivative(f: sp.Expr, x: sp.Symbol) -> str:
    antiderivative = quietly(lambda: sp.integrate(f, x), 0.95)
    if antiderivative is None:
        raise MathInputError(
            f"no antiderivative of {show_expr(f)} was found within the time limit; it may have "
            "no closed form. With bounds, a definite integral can still be estimated numerically"
        )
    if antiderivative.has(sp.Integral):
        raise MathInputError(
            f"{show_expr(f)} has no antiderivative in closed form; with bounds, a definite "
            "integral can still be estimated numerically"
        )
    return f"∫ {show_expr(f)} d{x} = {show_expr(antiderivative)} + C"


def _definite(f: sp.Expr, x: sp.Symbol, a: sp.Expr, b: sp.Expr) -> _Outcome:
    if a == b:
        return _Outcome("exact", sp.Integer(0))
    result = quietly(lambda: sp.integrate(f, (x, a, b)), 0.6)
    if result is not None and not result.has(sp.Integral):
        if result.has(sp.nan, sp.zoo, sp.oo, -sp.oo):
            return _Outcome("diverges", note=_divergence_note(result, f, x, a, b))
        return _Outcome("exact", result)
    if a.free_symbols or b.free_symbols or (f.free_symbols - {x}):
        return _Outcome("unknown", note="no closed form was found, and the other variables rule "
                                        "out a numerical estimate")
    return _numeric_integral(f, x, a, b)


def _poles(f: sp.Expr, x: sp.Symbol, a: sp.Expr, b: sp.Expr) -> list[sp.Expr]:
    lo, hi = (a, b) if bool(a < b) else (b, a)
    found = quietly(lambda: singularities(f, x, sp.Interval(lo, hi)), 0.2)
    if not isinstance(found, sp.FiniteSet) or len(found) > 20:
        return []
    return sorted((p for p in found if p.is_real), key=lambda p: float(p))


def _divergence_note(result: sp.Expr, f: sp.Expr, x: sp.Symbol, a: sp.Expr,
                     b: sp.Expr) -> str:
    poles = _poles(f, x, a, b) if not (a.free_symbols or b.free_symbols) else []
    where = ", ".join(f"{x} = {show_expr(p)}" for p in poles[:5])
    if where:
        return f"the function blows up at {where}"
    if result in (sp.oo, -sp.oo):
        return f"it grows without bound, to {show_expr(result)}"
    return "the area is infinite"


def _numeric_integral(f: sp.Expr, x: sp.Symbol, a: sp.Expr, b: sp.Expr) -> _Outcome:
    try:
        function = compile_numeric(f, x, "mpmath")
    except MathInputError as exc:
        return _Outcome("unknown", note=f"no closed form was found, and {exc}")
    poles = _poles(f, x, a, b)
    lo, hi = (a, b) if bool(a <= b) else (b, a)
    inner = [p for p in poles if bool(lo < p) and bool(p < hi)]

    def estimate() -> tuple[object, object]:
        with mpmath.workdps(20):
            points = [mpmath.mpf(p.evalf(25)) if p.is_finite else _mp_inf(p)
                      for p in [a, *inner, b]]
            if not bool(a <= b):
                points = [points[0], *reversed(points[1:-1]), points[-1]]
            return mpmath.quad(function, points, error=True, maxdegree=8)

    try:
        estimate_and_error = attempt(estimate, 0.9)
    except (ValueError, ZeroDivisionError, ArithmeticError, TypeError):
        return _Outcome("unknown", note="the function is not finite and real on the whole interval")
    if estimate_and_error is None:
        return _Outcome("unknown", note="no closed form was found, and the numerical estimate "
                                        "did not finish in time")
    value, error = estimate_and_error
    if not mpmath.isfinite(value) or abs(value) > 1e15:
        return _Outcome("diverges", note=_divergence_note(sp.oo, f, x, a, b))
    if error > 1e-6 * max(1, abs(value)):
        return _Outcome("unknown", note="no closed form was found and the numerical estimate "
                                        "does not settle; the integral probably diverges")
    return _Outcome("numeric", value)


def _mp_inf(value: sp.Expr) -> mpmath.mpf:
    return mpmath.inf if value == sp.oo else -mpmath.inf


def _integral_head(f: sp.Expr, x: sp.Symbol, a: sp.Expr, b: sp.Expr) -> str:
    def simple(bound: sp.Expr) -> bool:
        return bound.is_Integer and abs(int(bound)) < 10**6

    if simple(a) and simple(b):
        return f"∫{subscript(int(a))}{superscript(int(b))} {show_expr(f)} d{x}"
    return f"∫ from {show_expr(a)} to {show_expr(b)} of {show_expr(f)} d{x}"


def _integral_statement(f: sp.Expr, x: sp.Symbol, a: sp.Expr, b: sp.Expr,
                        outcome: _Outcome) -> str:
    head = _integral_head(f, x, a, b)
    if outcome.kind == "exact":
        return f"{head} = {show(outcome.value)}"
    if outcome.kind == "numeric":
        estimate = format_decimal(outcome.value)
        return f"{head} ≈ {estimate} (numerical estimate; no closed form found)"
    if outcome.kind == "diverges":
        return f"{head} diverges ({outcome.note})"
    return f"{head} could not be computed: {outcome.note}"


def _area_label(outcome: _Outcome) -> str:
    if outcome.kind == "exact":
        return f"Area = {show(outcome.value)}"
    if outcome.kind == "numeric":
        return f"Area ≈ {format_decimal(outcome.value)}"
    if outcome.kind == "diverges":
        return "Area: infinite (the integral diverges)"
    return "Area: could not be computed"


@operation
def differentiate(expression: str, variable: str = "x", order: object = 1) -> str:
    x = parse_variable(variable)
    f = parse(expression)
    n = _order(order)
    derivative = quietly(lambda: sp.diff(f, x, n), 0.5)
    if derivative is None:
        raise MathInputError("the derivative took too long; try a simpler expression")
    if not derivative.is_Atom:
        derivative = quietly(lambda: sp.simplify(derivative), 0.8) or derivative
    head = f"d/d{x}" if n == 1 else f"d{superscript(n)}/d{x}{superscript(n)}"
    return f"{head} [{show_expr(f)}] = {show(derivative)}"


def _order(order: object) -> int:
    try:
        n = int(order) if not isinstance(order, bool) else -1
    except (TypeError, ValueError):
        n = -1
    if isinstance(order, float) and order != n:
        n = -1
    if not 1 <= n <= MAX_ORDER:
        raise MathInputError(f"the derivative order must be a whole number from 1 to {MAX_ORDER}")
    return n


@operation
def plot_area(expression: str, lower: object, upper: object, variable: str = "x", *,
              out_path: str) -> tuple[str, str]:
    x = parse_variable(variable)
    f = parse(expression)
    function = compile_numeric(f, x, "numpy")
    a, b = _bound(lower, x, "lower bound"), _bound(upper, x, "upper bound")
    if a is None or b is None:
        raise MathInputError("plot_area needs both bounds, like lower=0 and upper=3")
    lo, hi = _plot_bound(a), _plot_bound(b)
    if lo == hi:
        raise MathInputError("the bounds are equal, so there is no area to plot")
    outcome = _definite(f, x, a, b)
    statement = _integral_statement(f, x, a, b, outcome)
    figure = AreaPlot(
        lower=lo, upper=hi, lower_label=show_expr(a), upper_label=show_expr(b),
        title=textwrap.shorten(pretty(statement), 90, placeholder=" …"),
        area_label=_area_label(outcome), curve_label=f"f({x}) = {pretty(show_expr(f))}"[:60],
    )
    render_area(function, figure, out_path)
    return f"Saved the area plot as {Path(out_path).name}. {statement}", out_path


def _plot_bound(bound: sp.Expr) -> float:
    if bound.free_symbols or not bound.is_real or not bound.is_finite:
        raise MathInputError(
            f"plot bounds must be finite real numbers (got {show_expr(bound)}); "
            f"use numbers between -{MAX_PLOT_BOUND:,.0f} and {MAX_PLOT_BOUND:,.0f}"
        )
    value = to_float(bound)
    if not abs(value) <= MAX_PLOT_BOUND:
        raise MathInputError(
            f"plot bounds must be between -{MAX_PLOT_BOUND:,.0f} and {MAX_PLOT_BOUND:,.0f}"
        )
    return value
