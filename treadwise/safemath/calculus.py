"""Calculus operations: integrals (exact, numeric or divergent), derivatives and area plots."""

from __future__ import annotations

import dataclasses
import textwrap
from typing import SupportsIndex, SupportsInt

import mpmath
import sympy as sp

from treadwise.safemath.answer import Answer
from treadwise.safemath.definite import Outcome, definite, geometric_area
from treadwise.safemath.display import (
    format_decimal,
    pretty,
    show,
    show_expr,
    subscript,
    superscript,
)
from treadwise.safemath.jobs import operation, quietly
from treadwise.safemath.math_errors import MathInputError
from treadwise.safemath.numbers import as_text, to_float
from treadwise.safemath.numeric import compile_numeric
from treadwise.safemath.parser import parse, parse_variable
from treadwise.safemath.plotting import AreaPlot, render_area
from treadwise.safemath.values import approx_value, equals, exact_text, formula_text

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


@operation
def integrate(expression: str, variable: str = "x", lower: object = None,
              upper: object = None) -> Answer:
    x = parse_variable(variable)
    f = parse(expression)
    a, b = _bound(lower, x, "lower bound"), _bound(upper, x, "upper bound")
    if (a is None) != (b is None):
        raise MathInputError(
            "give both bounds for a definite integral, or neither for an antiderivative"
        )
    if a is None:
        return _antiderivative(f, x)
    return _integral_statement(f, x, a, b, definite(f, x, a, b))


def _antiderivative(f: sp.Expr, x: sp.Symbol) -> Answer:
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
    asked, shown = f"∫ {show_expr(f)} d{x}", f"{show_expr(antiderivative)} + C"
    return Answer(f"{asked} = {shown}", "formula", asked, shown,
                  formula=formula_text(antiderivative) or show_expr(antiderivative))


def _integral_head(f: sp.Expr, x: sp.Symbol, a: sp.Expr, b: sp.Expr) -> str:
    def simple(bound: sp.Expr) -> bool:
        return bound.is_Integer and abs(int(bound)) < 10**6

    if simple(a) and simple(b):
        return f"∫{subscript(int(a))}{superscript(int(b))} {show_expr(f)} d{x}"
    return f"∫ from {show_expr(a)} to {show_expr(b)} of {show_expr(f)} d{x}"


def _integral_statement(f: sp.Expr, x: sp.Symbol, a: sp.Expr, b: sp.Expr,
                        outcome: Outcome) -> Answer:
    head = _integral_head(f, x, a, b)
    if outcome.kind == "exact":
        said = _equals(outcome)
        shown = said.removeprefix("= ")
        return Answer(f"{head} {said}", "value", head, shown, exact=exact_text(outcome.value),
                      approx=approx_value(outcome.value))
    if outcome.kind == "numeric":
        said = _equals(outcome)
        return Answer(f"{head} {said} (numerical estimate; no closed form found)", "estimate",
                      head, said, approx=approx_value(outcome.value))
    if outcome.kind == "diverges":
        return Answer(f"{head} diverges ({outcome.note})", "diverges", head)
    return Answer(f"{head} could not be computed: {outcome.note}", "unknown", head)


def _equals(outcome: Outcome) -> str:
    """"= 9", "= 1/3 ≈ 0.333333333", or "≈ 1.998002e6003" for a value too long to show."""
    if outcome.kind == "numeric":
        return f"≈ {format_decimal(outcome.value)}"
    shown = show(outcome.value)
    return shown if shown.startswith("≈") else f"= {shown}"


def _area_label(signed: Outcome, area: Outcome | None) -> list[str]:
    """The plot's label, one line each: the area, or the signed integral and the geometric
    area when they differ (part of the curve lies below the axis, or the bounds run backwards);
    `area` is `signed` itself for a value that is not real."""
    if signed.kind == "diverges":
        return ["Area: infinite (the integral diverges)"]
    if signed.kind == "unknown":
        return ["Area: could not be computed"]
    if area is None:
        return [f"Signed integral {_equals(signed)}", "area below the axis counted as negative"]
    if area is signed or _same(signed, area):
        return [f"Area {_equals(signed)}"]
    return [f"Signed integral {_equals(signed)}", f"geometric area {_equals(area)}"]


def _same(signed: Outcome, area: Outcome) -> bool:
    if signed.kind == area.kind == "exact" and signed.value == area.value:
        return True
    one, other = (v if isinstance(v, mpmath.mpf) else mpmath.mpf(sp.N(v, 20))
                  for v in (signed.value, area.value))
    return abs(one - other) <= 1e-9 * max(1, abs(one), abs(other))


@operation
def differentiate(expression: str, variable: str = "x", order: object = 1) -> Answer:
    x = parse_variable(variable)
    f = parse(expression)
    n = _order(order)
    derivative = quietly(lambda: sp.diff(f, x, n), 0.5)
    if derivative is None:
        raise MathInputError("the derivative took too long; try a simpler expression")
    if not derivative.is_Atom:
        derivative = quietly(lambda: sp.simplify(derivative), 0.8) or derivative
    head = f"d/d{x}" if n == 1 else f"d{superscript(n)}/d{x}{superscript(n)}"
    return equals(f"{head} [{show_expr(f)}]", derivative)


def _order(order: object) -> int:
    try:
        n = int(order) if isinstance(order, SupportsInt | SupportsIndex | str) and not isinstance(
            order, bool) else -1
    except (TypeError, ValueError, OverflowError):
        n = -1
    if isinstance(order, float) and order != n:
        n = -1
    if not 1 <= n <= MAX_ORDER:
        raise MathInputError(f"the derivative order must be a whole number from 1 to {MAX_ORDER} "
                             f"(got {str(order)[:20]})")
    return n


@operation
def plot_area(expression: str, lower: object, upper: object, variable: str = "x", *,
              out_path: str) -> Answer:
    x = parse_variable(variable)
    f = parse(expression)
    function = compile_numeric(f, x, "numpy")
    a, b = _bound(lower, x, "lower bound"), _bound(upper, x, "upper bound")
    if a is None or b is None:
        raise MathInputError("plot_area needs both bounds, like lower=0 and upper=3")
    lo, hi = _plot_bound(a), _plot_bound(b)
    if lo == hi:
        raise MathInputError("the bounds are equal, so there is no area to plot")
    outcome = definite(f, x, a, b)
    found = _integral_statement(f, x, a, b, outcome)
    real = outcome.kind == "numeric" or (outcome.kind == "exact" and outcome.value.is_real)
    label = _area_label(outcome, geometric_area(f, x, a, b, outcome, function) if real else
                        outcome)
    figure = AreaPlot(
        lower=lo, upper=hi, lower_label=show_expr(a), upper_label=show_expr(b),
        title=textwrap.shorten(pretty(found.statement), 90, placeholder=" …"),
        area_label="\n".join(line[:1].upper() + line[1:] for line in label),
        curve_label=f"f({x}) = {pretty(show_expr(f))}"[:60],
    )
    try:
        render_area(function, figure, out_path)
    except MathInputError as exc:
        raise MathInputError(f"{exc}; without a plot: {found.statement}") from None
    # The image is the tool's artifact: its file name means nothing to a reader.
    return dataclasses.replace(found, file=out_path, labels=tuple(label))


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
