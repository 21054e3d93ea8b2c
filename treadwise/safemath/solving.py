"""Equations and function analysis: solution sets in words, numeric roots, extrema, limits."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from functools import partial

import mpmath
import numpy as np
import sympy as sp
from sympy.calculus.util import continuous_domain

from treadwise.safemath.answer import Answer
from treadwise.safemath.display import format_decimal, show, show_expr
from treadwise.safemath.jobs import operation, quietly
from treadwise.safemath.math_errors import MathInputError
from treadwise.safemath.notation import clean
from treadwise.safemath.numbers import as_text, echo, sign, to_float
from treadwise.safemath.numeric import compile_numeric
from treadwise.safemath.parser import parse, parse_equation, parse_variable
from treadwise.safemath.values import approx_value, equals, exact_text

MAX_SOLUTIONS = 12
SEARCH_RANGE = (-10.0, 10.0)


@operation
def solve_equation(equation: str, variable: str = "x") -> Answer:
    x = parse_variable(variable)
    lhs, rhs = parse_equation(equation)
    shown = echo(equation) if "=" in clean(equation) else f"{echo(equation)} = 0"
    found = _solutions(lhs - rhs, x)
    return dataclasses.replace(found, statement=f"{shown}: {found.statement}", asked=shown)


def _solutions(expr: sp.Expr, x: sp.Symbol) -> Answer:
    """The solutions in words (as the statement) and, when they are finitely many exact real
    numbers, as values; `exact` only for exactly one solution."""
    if x not in expr.free_symbols:
        if expr.is_zero or quietly(lambda: sp.simplify(expr), 0.3) == 0:
            return Answer(f"true for every {x}", "solutions")
        if expr.is_number:
            return Answer("no solution (the two sides are never equal)", "none")
        return Answer(f"{x} does not appear in the equation", "unknown")
    real = quietly(lambda: sp.solveset(expr, x, sp.S.Reals), 0.5)
    described = _describe(real, x) if real is not None else None
    if described is None:
        return _numeric_solutions(expr, x)
    if not described:
        complex_roots = quietly(lambda: sp.solveset(expr, x, sp.S.Complexes), 0.6)
        if isinstance(complex_roots, sp.FiniteSet) and complex_roots:
            return Answer(f"no real solution; complex: "
                          f"{_join(_describe(complex_roots, x) or [])}", "none")
        return Answer("no real solution", "none")
    if not isinstance(real, sp.FiniteSet):
        return Answer(_join(described), "solutions")
    return _finite(expr, x, sorted(real, key=_sort_key)[:MAX_SOLUTIONS], _join(described))


def _finite(expr: sp.Expr, x: sp.Symbol, roots: list[sp.Expr], text: str) -> Answer:
    """Finitely many real solutions, with a polynomial's complex roots named after them."""
    values = _exact_all(roots)
    if quietly(lambda: expr.is_polynomial(x), 0.1):
        everything = quietly(lambda: sp.solveset(expr, x, sp.S.Complexes), 0.6)
        if isinstance(everything, sp.FiniteSet):
            extra = sp.FiniteSet(*(s for s in everything if s.is_real is False))
            if extra:
                # Complex roots besides: not one single answer to reuse.
                text += f"; complex: {_join(_describe(extra, x) or [])}"
                return Answer(text, "solutions", values=values)
    if len(roots) == 1 and len(values) == 1:
        return Answer(text, "solutions", shown=show(roots[0]), exact=values[0],
                      approx=approx_value(roots[0]), values=values)
    return Answer(text, "solutions", values=values)


def _exact_all(roots: list[sp.Expr]) -> tuple[str, ...]:
    """Every root in full, or none at all when one cannot be shown so."""
    shown = [exact_text(root) for root in roots]
    return tuple(s for s in shown if s is not None) if None not in shown else ()


def _join(parts: list[str]) -> str:
    periodic = any(part.endswith(" (n any integer)") for part in parts)
    parts = [part.replace(" (n any integer)", "") for part in parts]
    text = " or ".join(parts)
    return f"{text} (n any integer)" if periodic else text


def _sort_key(value: sp.Expr) -> tuple[int, float, str]:
    try:
        return 0, float(sp.re(value).evalf(15)), str(value)
    except (TypeError, ValueError):
        return 1, 0.0, str(value)


def _describe(found: sp.Set, x: sp.Symbol) -> list[str] | None:
    """Solutions as "x = ..." phrases: [] when there are none, None for a set it cannot read."""
    if found is sp.S.EmptySet:
        return []
    if found == sp.S.Reals:
        return [f"every real {x}"]
    if isinstance(found, sp.FiniteSet):
        values = sorted(found, key=_sort_key)
        parts = [f"{x} = {show(v)}" for v in values[:MAX_SOLUTIONS]]
        if len(values) > MAX_SOLUTIONS:
            parts.append(f"{len(values) - MAX_SOLUTIONS} more")
        return parts
    if isinstance(found, sp.Interval):
        return [f"{x} in {_interval_text(found)}"]
    if isinstance(found, sp.ImageSet) and found.base_sets == (sp.S.Integers,):
        dummy = found.lamda.variables[0]
        body = found.lamda.expr.subs(dummy, sp.Symbol("n", integer=True))
        return [f"{x} = {show_expr(body)} (n any integer)"]
    if isinstance(found, sp.Union):
        parts = []
        for piece in found.args:
            described = _describe(piece, x)
            if described is None:
                return None
            parts.extend(described)
        return parts
    return None


def _numeric_solutions(expr: sp.Expr, x: sp.Symbol) -> Answer:
    lo, hi = SEARCH_RANGE
    roots = quietly(lambda: _scan_roots(expr, x), 0.9)
    if not roots:
        return Answer(f"no exact solution was found, and a numerical search over {lo:g} ≤ {x} "
                      f"≤ {hi:g} found none", "none")
    listed = " or ".join(f"{x} ≈ {format_decimal(mpmath.mpf(r))}" for r in roots)
    return Answer(f"{listed} (numerical; no exact form found; searched {lo:g} ≤ {x} ≤ {hi:g})",
                  "estimate", approx=approx_value(roots[0]) if len(roots) == 1 else None)


def _scan_roots(expr: sp.Expr, x: sp.Symbol) -> list[float]:
    """Sign changes of expr on a fine grid, refined by bisection; poles are filtered out."""
    try:
        function = compile_numeric(expr, x, "numpy")
    except MathInputError:
        return []

    def at(value: float) -> float:
        with np.errstate(all="ignore"):
            return float(function(np.array([value]))[0])

    xs = np.linspace(*SEARCH_RANGE, 4001)
    with np.errstate(all="ignore"):
        ys = np.asarray(function(xs), dtype=float)
    roots: list[float] = []
    for i in range(len(xs) - 1):
        left, right = ys[i], ys[i + 1]
        if not (np.isfinite(left) and np.isfinite(right)):
            continue
        if left == 0:
            roots.append(float(xs[i]))
        elif left * right < 0:
            root = _bisect(at, float(xs[i]), float(xs[i + 1]))
            if root is not None:
                roots.append(root)
        if len(roots) >= MAX_SOLUTIONS:
            break
    return roots


def _bisect(at: Callable[[float], float], a: float, b: float) -> float | None:
    """The root between a and b, where `at` changes sign; None when it is a pole instead."""
    negative_left = at(a) < 0
    for _ in range(80):
        middle = (a + b) / 2
        if (at(middle) < 0) == negative_left:
            a = middle
        else:
            b = middle
    root = (a + b) / 2
    return root if abs(at(root)) < 1e-6 else None


@operation
def analyze_function(expression: str, variable: str = "x") -> Answer:
    x = parse_variable(variable)
    f = parse(expression)
    name = f"f({x})"
    lines = [f"{name} = {show_expr(f)}"]
    domain = quietly(lambda: continuous_domain(f, x, sp.S.Reals), 0.15)
    shown = _domain_text(domain) if domain is not None else "could not be determined"
    lines.append(f"Domain: {shown}")
    region = domain if isinstance(domain, sp.Set) else sp.S.Reals
    lines.append(f"Roots: {_roots_text(f, x, region)}")
    if region.contains(0) is sp.true:
        lines.append(f"y-intercept: f(0) = {show(f.subs(x, 0))}")
    derivative = sp.diff(f, x)
    shown_derivative = quietly(lambda: sp.simplify(derivative), 0.1) or derivative
    lines.append(f"Derivative: f'({x}) = {show_expr(shown_derivative)}")
    lines.extend(_extrema_lines(f, derivative, x, region))
    lines.append(_end_behaviour(f, x, region))
    return Answer("\n".join(line for line in lines if line), "analysis")


def _domain_text(domain: sp.Set) -> str:
    if domain == sp.S.Reals:
        return "all real numbers"
    if domain is sp.S.EmptySet:
        return "no real numbers"
    if isinstance(domain, sp.Interval):
        return _interval_text(domain)
    if isinstance(domain, sp.Union):
        return " ∪ ".join(_domain_text(piece) for piece in domain.args)
    if isinstance(domain, sp.FiniteSet):
        return "{" + ", ".join(show_expr(v) for v in domain) + "}"
    if isinstance(domain, sp.Complement) and domain.args[0] == sp.S.Reals:
        return f"all real numbers except {_domain_text(domain.args[1])}"
    return show_expr(domain)


def _interval_text(interval: sp.Interval) -> str:
    left = "(" if interval.left_open or interval.start == -sp.oo else "["
    right = ")" if interval.right_open or interval.end == sp.oo else "]"
    return f"{left}{show_expr(interval.start)}, {show_expr(interval.end)}{right}"


def _roots_text(f: sp.Expr, x: sp.Symbol, region: sp.Set) -> str:
    roots = quietly(lambda: sp.solveset(f, x, region), 0.25)
    described = _describe(roots, x) if roots is not None else None
    if described is None:
        return _numeric_solutions(f, x).statement
    return _join(described) if described else "none"


def _extrema_lines(f: sp.Expr, derivative: sp.Expr, x: sp.Symbol, region: sp.Set) -> list[str]:
    critical = quietly(lambda: sp.solveset(derivative, x, region), 0.35)
    if critical is None:
        return ["Critical points: could not be determined in time"]
    if critical is sp.S.EmptySet:
        return ["Critical points: none, so no local maximum or minimum"]
    if not isinstance(critical, sp.FiniteSet):
        described = _describe(critical, x)
        shown = _join(described) if described else show_expr(critical)
        return [f"Critical points: {shown}"]
    points = sorted(critical, key=_sort_key)[:MAX_SOLUTIONS]
    lines = [f"Critical points: {', '.join(f'{x} = {show(p)}' for p in points)}"]
    second = sp.diff(derivative, x)
    for point in points:
        value = f.subs(x, point)
        value = quietly(partial(sp.simplify, value), 0.1) or value
        kind = _classify(derivative, second, x, point)
        at = f"f({show_expr(point)}) = {show(value)}"
        if kind == "neither":
            lines.append(f"Neither a maximum nor a minimum at {x} = {show_expr(point)}: {at}")
        else:
            lines.append(f"Local {kind}: {at}")
    return lines


def _classify(derivative: sp.Expr, second: sp.Expr, x: sp.Symbol, point: sp.Expr) -> str:
    curvature = sign(second.subs(x, point))
    if curvature:
        return "minimum" if curvature > 0 else "maximum"
    step = sp.Rational(1, 1000) * max(1, abs(to_float(point)))
    before, after = sign(derivative.subs(x, point - step)), sign(derivative.subs(x, point + step))
    if before < 0 < after:
        return "minimum"
    if before > 0 > after:
        return "maximum"
    return "neither"


def _end_behaviour(f: sp.Expr, x: sp.Symbol, region: sp.Set) -> str:
    parts = []
    for end, label in ((-sp.oo, "-∞"), (sp.oo, "∞")):
        if (region.inf if end == -sp.oo else region.sup) != end:
            continue
        limit = quietly(partial(sp.limit, f, x, end), 0.1)
        parts.append(f"as {x} → {label}: f({x}) → {_limit_text(limit)}")
    return ("End behaviour: " + "; ".join(parts)) if parts else ""


def _limit_text(limit: sp.Expr | None) -> str:
    if limit is None:
        return "could not be determined"
    if isinstance(limit, sp.AccumBounds):
        return f"no limit (it oscillates between {show(limit.min)} and {show(limit.max)})"
    if limit.has(sp.nan, sp.zoo):
        return "no limit"
    return show(limit)



SIDES = {"both": "+-", "left": "-", "right": "+", "+-": "+-", "-": "-", "+": "+",
         "below": "-", "above": "+"}


@operation
def limit(expression: str, variable: str = "x", point: str | float = "0",
          direction: str = "both") -> Answer:
    x = parse_variable(variable)
    f = parse(expression)
    at, side = _approach(point, direction)
    mark = {"-": "⁻", "+": "⁺"}.get(side, "") if at.is_finite else ""
    shown = f"lim({x} → {show_expr(at)}{mark}) {echo(expression)}"
    if side != "+-":
        return _equals(shown, quietly(lambda: sp.limit(f, x, at, side), 0.9))
    left = quietly(lambda: sp.limit(f, x, at, "-"), 0.45)
    right = quietly(lambda: sp.limit(f, x, at, "+"), 0.45)
    if left is None or right is None or left == right:
        # One side that could not be computed leaves the two-sided limit unknown.
        return _equals(shown, left if left == right else None)
    return Answer(f"{shown} does not exist: from the left it tends to {_limit_text(left)}, "
                  f"from the right to {_limit_text(right)}", "none", shown)


def _approach(point: object, direction: str) -> tuple[sp.Expr, str]:
    """The point (a number or ±oo) and sympy's side: "+-" both, "-" left, "+" right."""
    at = parse(as_text(point, "the point") or "0")
    if at.has(sp.zoo, sp.nan) or not (at.is_number or at in (sp.oo, -sp.oo)):
        raise MathInputError("the point must be a number, pi, oo or -oo")
    side = SIDES.get(str(direction).strip().lower())
    if side is None:
        raise MathInputError("direction must be both, left or right")
    if at in (sp.oo, -sp.oo):
        # Infinity is only approached from one side.
        side = "-" if at == sp.oo else "+"
    return at, side


def _equals(shown: str, value: sp.Expr | None) -> Answer:
    text = _limit_text(value)
    if text.startswith("no limit"):
        return Answer(f"{shown}: {text}", "none", shown)
    if value is None or text.startswith("could not"):
        return Answer(f"{shown}: {text}", "unknown", shown)
    return equals(shown, value)
