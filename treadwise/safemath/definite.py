"""Definite integrals: exact, a numerical estimate, divergent or unknown, checked across poles."""

from __future__ import annotations

from dataclasses import dataclass
from functools import partial
from typing import Any, Literal

import mpmath
import numpy as np
import sympy as sp
from sympy.calculus.singularities import singularities

from treadwise.safemath.display import show_expr
from treadwise.safemath.jobs import attempt, quietly
from treadwise.safemath.math_errors import MathInputError
from treadwise.safemath.numeric import compile_numeric


@dataclass(frozen=True)
class Outcome:
    """A definite integral's value: exact, a numerical estimate, divergent, or unknown."""

    kind: Literal["exact", "numeric", "diverges", "unknown"]
    value: Any = None
    note: str = ""


def definite(f: sp.Expr, x: sp.Symbol, a: sp.Expr, b: sp.Expr) -> Outcome:
    if a == b:
        return Outcome("exact", sp.Integer(0))
    closed = not (a.free_symbols or b.free_symbols or f.free_symbols - {x})
    inner = _inner_poles(f, x, a, b) if closed else []
    bounded = bool(inner) and _bounded_near(f, x, inner)
    if bounded and a == -b and _odd(f, x):
        # Bounded, so integrable; odd over a symmetric interval, so the halves cancel.
        return Outcome("exact", sp.Integer(0))
    result = quietly(lambda: sp.integrate(f, (x, a, b)), 0.6)
    if inner:
        return _over_poles(f, x, a, b, result, bounded)
    if result is not None and not result.has(sp.Integral):
        if result.has(sp.nan, sp.zoo, sp.oo, -sp.oo):
            return _divergent(f, x, a, b, result)
        if isinstance(result, sp.AccumBounds):
            return Outcome("unknown", note="it settles on no single value: it keeps swinging "
                                            f"between {show_expr(result.min)} and "
                                            f"{show_expr(result.max)}")
        if result.has(sp.AccumBounds):
            return Outcome("unknown", note="it settles on no single value")
        return Outcome("exact", result)
    if a.free_symbols or b.free_symbols or (f.free_symbols - {x}):
        return Outcome("unknown", note="no closed form was found, and the other variables rule "
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


def _inner_poles(f: sp.Expr, x: sp.Symbol, a: sp.Expr, b: sp.Expr) -> list[sp.Expr]:
    """The poles strictly between the bounds, in order from a to b."""
    lo, hi = (a, b) if bool(a <= b) else (b, a)
    inner = [p for p in _poles(f, x, a, b) if bool(lo < p) and bool(p < hi)]
    return inner if bool(a <= b) else inner[::-1]


def _odd(f: sp.Expr, x: sp.Symbol) -> bool:
    return bool(quietly(lambda: sp.expand(f.subs(x, -x) + f) == 0, 0.1))


def _bounded_near(f: sp.Expr, x: sp.Symbol, poles: list[sp.Expr]) -> bool:
    """Whether f stays within ±1e6 ever closer to each pole (sin(1/x) does, 1/x does not)."""
    try:
        function = compile_numeric(f, x, "mpmath")
        with mpmath.workdps(30):
            values = [function(mpmath.mpf(p.evalf(30)) + side * mpmath.mpf(10) ** -k)
                      for p in poles for side in (-1, 1) for k in range(3, 16)]
        return all(mpmath.isfinite(v) and abs(v) <= 1e6 for v in values)
    except (MathInputError, ValueError, ArithmeticError, TypeError):
        return False


def _over_poles(f: sp.Expr, x: sp.Symbol, a: sp.Expr, b: sp.Expr, exact: sp.Expr | None,
                bounded: bool) -> Outcome:
    """sympy's answer across a pole, checked against a numerical estimate split at the poles:
    there it has given wrong values (x sin(1/x) on [-1, 1]) and called convergent integrals
    divergent (sin(1/x) on [-1, 2]); a bounded function's integral cannot diverge."""
    estimate = _numeric_integral(f, x, a, b)
    wiggly = Outcome("unknown", note="the function stays bounded but oscillates too fast near "
                                      "its singular points for a numerical estimate")
    if exact is None or exact.has(sp.Integral, sp.Limit):
        return wiggly if bounded and estimate.kind != "numeric" else estimate
    if exact.has(sp.nan, sp.zoo, sp.oo, -sp.oo):
        if estimate.kind == "numeric" or bounded:
            return estimate if estimate.kind == "numeric" else wiggly
        return _divergent(f, x, a, b, exact)
    if estimate.kind == "numeric":
        return Outcome("exact", exact) if _agree(exact, estimate.value) else estimate
    return Outcome("unknown", note=f"a closed form ({show_expr(exact)}) was found but could not "
                                    "be checked numerically near the singular points")


def _agree(exact: sp.Expr, estimate: Any) -> bool:
    value = complex(exact.evalf(20))
    return abs(value.imag) < 1e-9 and abs(value.real - float(estimate)) <= 1e-6 * max(
        1.0, abs(float(estimate)))


def _numeric_integral(f: sp.Expr, x: sp.Symbol, a: sp.Expr, b: sp.Expr) -> Outcome:
    try:
        function = compile_numeric(f, x, "mpmath")
    except MathInputError as exc:
        return Outcome("unknown", note=f"no closed form was found, and {exc}")
    inner = _inner_poles(f, x, a, b)  # in order from a to b

    def estimate() -> tuple[Any, Any]:  # mpmath numbers (value, error)
        with mpmath.workdps(20):
            points = [mpmath.mpf(p.evalf(25)) if p.is_finite else _mp_inf(p)
                      for p in [a, *inner, b]]
            return mpmath.quad(function, points, error=True, maxdegree=8)

    try:
        estimate_and_error = attempt(estimate, 0.9)
    except (ValueError, ZeroDivisionError, ArithmeticError, TypeError):
        return Outcome("unknown", note="the function is not finite and real on the whole interval")
    if estimate_and_error is None:
        return Outcome("unknown", note="no closed form was found, and the numerical estimate "
                                        "did not finish in time")
    value, error = estimate_and_error
    if not mpmath.isfinite(value) or abs(value) > 1e15:
        # A huge estimate proves nothing either way: exp(x^2) sin(x^x) on [0, 10] is continuous
        # (so its integral is finite) but swings too fast near 10 for the estimate to be right.
        return _divergent(f, x, a, b, sp.oo)
    if error > 1e-6 * max(1, abs(value)):
        return Outcome("unknown", note="no closed form was found and the numerical estimate "
                                        "does not settle")
    return Outcome("numeric", value)


def _divergent(f: sp.Expr, x: sp.Symbol, a: sp.Expr, b: sp.Expr, claim: sp.Expr) -> Outcome:
    """A claim that the integral diverges (sympy's oo or nan, or a huge estimate), made only
    when the integral is seen to grow without bound; unknown otherwise, never a wrong claim."""
    if _grows_without_bound(f, x, a, b):
        return Outcome("diverges", note=_divergence_note(claim, f, x, a, b))
    return Outcome("unknown", note="neither a value nor a divergence could be confirmed "
                                    "numerically on the interval")


def _grows_without_bound(f: sp.Expr, x: sp.Symbol, a: sp.Expr, b: sp.Expr) -> bool:
    """Whether the integral visibly grows without bound towards an infinite bound or a point
    of the interval where f is singular: over stretches each 100 times closer to the point
    (10 times farther out), its pieces keep one sign and do not shrink. A finite interval
    with no singular point cannot diverge; an integrable singularity's pieces shrink."""
    if a.free_symbols or b.free_symbols or f.free_symbols - {x}:
        return False
    try:
        function = compile_numeric(f, x, "mpmath")
    except MathInputError:
        return False
    lo, hi = (a, b) if bool(a <= b) else (b, a)
    runs = _stretches(lo, hi, _poles(f, x, lo, hi) if lo.is_finite or hi.is_finite else [])

    def pieces() -> list[list[Any]]:
        with mpmath.workdps(20):
            return [[mpmath.quad(function, stretch) for stretch in run] for run in runs]

    try:
        found = quietly(pieces, 0.5)
    except MathInputError:
        return False
    return found is not None and any(_not_shrinking(run) for run in found)


def _stretches(lo: sp.Expr, hi: sp.Expr, points: list[sp.Expr]) -> list[list[list[Any]]]:
    """Runs of [start, end] stretches, each run heading to an infinite bound or a point."""
    runs = []
    for bound, side in ((hi, 1), (lo, -1)):
        if not bound.is_finite:
            start = 1 + max((abs(float(end)) for end in (lo, hi) if end.is_finite), default=0)
            runs.append([sorted((side * start * 10 ** k, side * start * 10 ** (k + 1)))
                         for k in range(5)])
    width = min(1.0, float(hi - lo) / 2) if lo.is_finite and hi.is_finite else 1.0
    for point in points[:3]:
        p = mpmath.mpf(point.evalf(25))
        for side in (-1, 1):
            if (side < 0 and bool(point > lo)) or (side > 0 and bool(point < hi)):
                runs.append([sorted((p + side * width * mpmath.mpf(100) ** -(k + 1),
                                     p + side * width * mpmath.mpf(100) ** -k))
                             for k in range(5)])
    return runs


def _not_shrinking(pieces: list[Any]) -> bool:
    """The last pieces real, of one sign, each at least 0.9 times the one before."""
    last = pieces[-3:]
    if not all(mpmath.isfinite(v) and abs(mpmath.im(v)) <= 1e-9 * abs(v) for v in last):
        return False
    values = [mpmath.re(v) for v in last]
    if any(v == 0 for v in values) or len({mpmath.sign(v) for v in values}) != 1:
        return False
    return all(abs(later) >= 0.9 * abs(earlier)
               for earlier, later in zip(values, values[1:], strict=False))


def _mp_inf(value: sp.Expr) -> mpmath.mpf:
    return mpmath.inf if value == sp.oo else -mpmath.inf


def geometric_area(f: sp.Expr, x: sp.Symbol, a: sp.Expr, b: sp.Expr, signed: Outcome,
                   function: Any) -> Outcome | None:
    """∫|f| between the bounds, exact where sympy finds each piece between the curve's roots
    and a numerical estimate otherwise; None when it cannot be told. `function` is f compiled
    for numpy, used to see where the curve lies below the axis."""
    lo, hi = (a, b) if bool(a <= b) else (b, a)
    xs = np.linspace(float(lo), float(hi), 2001)
    with np.errstate(all="ignore"):
        ys = np.real_if_close(np.asarray(function(xs), dtype=complex)).astype(float)
    finite = np.isfinite(ys)
    scale = float(np.abs(ys[finite]).max()) if finite.any() else 0.0
    sign = np.where(~finite, 0, np.sign(np.where(np.abs(ys) > 1e-12 * scale, ys, 0)))
    if not (sign < 0).any() or not (sign > 0).any():
        # One side of the axis throughout: the area is the size of the integral.
        return Outcome(signed.kind, _size(signed.value))
    if not _inner_poles(f, x, lo, hi):
        pieces = _exact_pieces(f, x, lo, hi)
        if pieces is not None:
            return Outcome("exact", sp.Add(*pieces))
    # Where the sign flips between samples, so the estimate integrates |f| between its kinks.
    flips = np.flatnonzero(sign[:-1] * sign[1:] < 0)
    crossings = [(xs[i] + xs[i + 1]) / 2 for i in flips[:200]]
    return _numeric_area(f, x, lo, hi, crossings)


def _exact_pieces(f: sp.Expr, x: sp.Symbol, lo: sp.Expr, hi: sp.Expr) -> list[sp.Expr] | None:
    """|∫ f| over each stretch between consecutive roots, or None if any is out of reach."""
    roots = quietly(lambda: sp.solveset(f, x, sp.Interval.open(lo, hi)), 0.2)
    if not isinstance(roots, sp.FiniteSet) or len(roots) > 50 or not all(
            r.is_real for r in roots):
        return None
    points = [lo, *sorted(roots, key=lambda r: float(r)), hi]
    pieces = []
    for n, (p, q) in enumerate(zip(points, points[1:], strict=False)):
        share = 0.4 / (len(points) - 1 - n)
        piece = quietly(partial(sp.integrate, f, (x, p, q)), share)
        if piece is None or not piece.is_number or piece.has(sp.Integral, sp.oo, -sp.oo, sp.nan,
                                                             sp.zoo):
            return None
        pieces.append(_size(piece))
    return pieces


def _size(value: Any) -> Any:
    if isinstance(value, mpmath.mpf):
        return abs(value)
    return -value if bool(value.evalf() < 0) else value


def _numeric_area(f: sp.Expr, x: sp.Symbol, lo: sp.Expr, hi: sp.Expr,
                  crossings: list[float]) -> Outcome | None:
    try:
        function = compile_numeric(f, x, "mpmath")
    except MathInputError:
        return None

    def estimate() -> tuple[Any, Any]:  # mpmath numbers (value, error)
        with mpmath.workdps(20):
            poles = [mpmath.mpf(p.evalf(25)) for p in _inner_poles(f, x, lo, hi)]
            inner = sorted({*poles, *(mpmath.mpf(c) for c in crossings)})
            points = [mpmath.mpf(lo.evalf(25)), *inner, mpmath.mpf(hi.evalf(25))]
            return mpmath.quad(lambda t: abs(function(t)), points, error=True, maxdegree=8)

    try:
        found = attempt(estimate, 0.5)
    except (ValueError, ZeroDivisionError, ArithmeticError, TypeError):
        return None
    if found is None or not mpmath.isfinite(found[0]) or found[1] > 1e-6 * max(1, found[0]):
        return None
    return Outcome("numeric", found[0])
