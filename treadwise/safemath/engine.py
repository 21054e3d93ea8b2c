"""Math operations on parsed expressions, each returning the text a person (or model) reads."""

from __future__ import annotations

import inspect
import io
import math
import re
import signal
import textwrap
import threading
import time
from collections.abc import Callable
from contextvars import ContextVar
from dataclasses import dataclass
from fractions import Fraction
from pathlib import Path
from typing import Any, Literal, TypeVar

import mpmath
import numpy as np
import sympy as sp
from sympy.calculus.singularities import singularities
from sympy.calculus.util import continuous_domain

from treadwise.safemath.display import (
    digits,
    format_decimal,
    pretty,
    show,
    show_expr,
    subscript,
    superscript,
    terminating_decimal,
)
from treadwise.safemath.numeric import compile_numeric
from treadwise.safemath.parser import (
    MAX_LITERAL_DIGITS,
    MathInputError,
    check_size,
    checked_power,
    clean,
    parse,
    parse_equation,
    parse_variable,
)
from treadwise.safemath.plotting import AreaPlot, render_area

OPERATIONS: dict[str, Callable[..., object]] = {}

MAX_SOLUTIONS = 12
MAX_ORDER = 10
MAX_PLOT_BOUND = 1e6
SEARCH_RANGE = (-10.0, 10.0)

T = TypeVar("T")


def operation(function: Callable[..., T]) -> Callable[..., T]:
    """Register a math operation under its function name (the tool of the same name calls it)."""
    OPERATIONS[function.__name__] = function
    return function


@dataclass
class _Job:
    """The running job's time budget, read by _attempt."""

    deadline: float
    alarms: bool
    interrupted: bool = False
    in_step: bool = False


_JOB: ContextVar[_Job | None] = ContextVar("treadwise_math_job", default=None)


class _OutOfTime(BaseException):
    """Raised by the step alarm; a BaseException so library code's `except Exception` lets it by."""


def run_job(op: str, kwargs: dict[str, Any], timeout_s: float, *,
            alarms: bool = False) -> tuple[str, Any, bool]:
    """Run one operation: ("ok", result, retire) or ("error", message, retire).

    `retire` asks the worker to exit after replying, because the job was interrupted or ran out
    of memory and sympy's caches may be in a strange state.
    """
    function = OPERATIONS.get(op)
    if function is None:
        return "error", f"unknown math operation {op!r}", False
    try:
        inspect.signature(function).bind(**kwargs)
    except TypeError as exc:
        return "error", f"wrong arguments for {op}: {exc}", False
    # Leave a little of the caller's wall-clock budget for formatting and the reply.
    job = _Job(deadline=time.monotonic() + timeout_s * 0.9 - 0.1, alarms=alarms)
    token = _JOB.set(job)
    try:
        return "ok", function(**kwargs), job.interrupted
    except MathInputError as exc:
        return "error", str(exc), job.interrupted
    except _OutOfTime:
        return "error", _too_slow(timeout_s), True
    except RecursionError:
        return "error", "the expression is nested too deeply to compute", True
    except MemoryError:
        return "error", "the calculation ran out of memory; try a simpler expression", True
    except Exception as exc:  # noqa: BLE001 - any sympy failure is reported, never raised
        return "error", _failed(exc), job.interrupted
    finally:
        _JOB.reset(token)


def _too_slow(timeout_s: float) -> str:
    return f"the calculation took too long (over {timeout_s:g} s); try a simpler expression"


def _failed(exc: BaseException) -> str:
    return f"could not compute this ({type(exc).__name__}); try rewriting the expression"


def _attempt(step: Callable[[], T], share: float = 1.0) -> T | None:
    """Run `step` within `share` of the job's remaining time; None when that time runs out.

    Only the worker arms the alarm (it owns its main thread); elsewhere the step just runs.
    """
    job = _JOB.get()
    if job is None or not job.alarms or job.in_step:
        return step()
    if threading.current_thread() is not threading.main_thread():
        return step()
    seconds = (job.deadline - time.monotonic()) * share
    if seconds <= 0.01:
        return None
    armed = True

    def ring(signum: int, frame: object) -> None:
        if armed:
            raise _OutOfTime

    previous = signal.signal(signal.SIGALRM, ring)
    # It rings again every 50 ms in case library code swallowed the first one.
    signal.setitimer(signal.ITIMER_REAL, seconds, 0.05)
    job.in_step = True
    try:
        return step()
    except _OutOfTime:
        job.interrupted = True
        return None
    finally:
        armed = False
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)
        job.in_step = False


def _quietly(step: Callable[[], T], share: float = 1.0) -> T | None:
    """Like _attempt, and also None when sympy gives up on the step with an error."""
    try:
        return _attempt(step, share)
    except MathInputError:
        raise
    except (NotImplementedError, ValueError, TypeError, AttributeError, ArithmeticError):
        return None


def _echo(text: str) -> str:
    shown = " ".join(clean(text).split()).replace("**", "^")
    return shown if len(shown) <= 120 else shown[:117] + "..."


def _as_text(value: object, what: str) -> str | None:
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


def _bound(value: object, variable: sp.Symbol, what: str) -> sp.Expr | None:
    text = _as_text(value, what)
    if text is None:
        return None
    bound = parse(text)
    if variable in bound.free_symbols:
        raise MathInputError(f"the {what} cannot contain the integration variable {variable}")
    if bound.is_number and bound.is_extended_real is False:
        raise MathInputError(f"the {what} must be a real number, not {show_expr(bound)}")
    return bound


def _operand(value: object, what: str = "the number") -> sp.Expr:
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


def _number_text(value: sp.Expr, wrap_negative: bool = True) -> str:
    if value.is_Rational:
        text = terminating_decimal(int(value.p), int(value.q)) or show_expr(value)
    else:
        text = show_expr(value)
    simple = re.fullmatch(r"-?[\d.]+", text) is not None
    if wrap_negative and (text.startswith("-") or not simple):
        return f"({text})"
    return text


def _arithmetic(symbol: str, a: object, b: object, combine: Callable) -> str:
    left, right = _operand(a, "the first number"), _operand(b, "the second number")
    result = check_size(combine(left, right))
    if result.has(sp.zoo, sp.nan):
        raise MathInputError("the result is undefined (division by zero)")
    shown = f"{_number_text(left, wrap_negative=False)} {symbol} {_number_text(right)}"
    return f"{shown} = {show(result)}"


@operation
def add(a: float, b: float) -> str:
    return _arithmetic("+", a, b, lambda x, y: x + y)


@operation
def subtract(a: float, b: float) -> str:
    return _arithmetic("-", a, b, lambda x, y: x - y)


@operation
def multiply(a: float, b: float) -> str:
    return _arithmetic("×", a, b, lambda x, y: x * y)


@operation
def divide(a: float, b: float) -> str:
    if _operand(b, "the second number").is_zero:
        raise MathInputError("cannot divide by zero")
    return _arithmetic("÷", a, b, lambda x, y: x / y)


@operation
def power(base: float, exponent: float) -> str:
    value, exp = _operand(base, "the base"), _operand(exponent, "the exponent")
    if value.is_zero and exp.is_negative:
        raise MathInputError("0 to a negative power is undefined (division by zero)")
    result = checked_power(value, exp)
    return f"{_number_text(value)}^{_number_text(exp)} = {show(result)}"


@operation
def square(x: float) -> str:
    value = _operand(x)
    return f"{_number_text(value)}² = {show(checked_power(value, sp.Integer(2)))}"


@operation
def square_root(x: float) -> str:
    value = _operand(x)
    root = sp.sqrt(value)
    if value.is_negative:
        return (
            f"√({_number_text(value, False)}) = {show(root)} "
            f"(imaginary: a negative number has no real square root)"
        )
    return f"√{_number_text(value)} = {show(root)}"


@operation
def calculate(expression: str) -> str:
    value = parse(expression)
    if value.has(sp.nan, sp.zoo):
        raise MathInputError("the result is undefined (for example a division by zero)")
    if not value.is_Atom:
        simpler = _quietly(lambda: sp.simplify(value), 0.6)
        if simpler is not None and len(show_expr(simpler)) < len(show_expr(value)):
            value = simpler
    return f"{_echo(expression)} = {show(value)}"


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
    antiderivative = _quietly(lambda: sp.integrate(f, x), 0.95)
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
    result = _quietly(lambda: sp.integrate(f, (x, a, b)), 0.6)
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
    found = _quietly(lambda: singularities(f, x, sp.Interval(lo, hi)), 0.2)
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
        estimate_and_error = _attempt(estimate, 0.9)
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
    derivative = _quietly(lambda: sp.diff(f, x, n), 0.5)
    if derivative is None:
        raise MathInputError("the derivative took too long; try a simpler expression")
    if not derivative.is_Atom:
        derivative = _quietly(lambda: sp.simplify(derivative), 0.8) or derivative
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
def solve_equation(equation: str, variable: str = "x") -> str:
    x = parse_variable(variable)
    lhs, rhs = parse_equation(equation)
    shown = _echo(equation) if "=" in clean(equation) else f"{_echo(equation)} = 0"
    return f"{shown}: {_solutions_text(lhs - rhs, x)}"


def _solutions_text(expr: sp.Expr, x: sp.Symbol) -> str:
    if x not in expr.free_symbols:
        if expr.is_zero or _quietly(lambda: sp.simplify(expr), 0.3) == 0:
            return f"true for every {x}"
        if expr.is_number:
            return "no solution (the two sides are never equal)"
        return f"{x} does not appear in the equation"
    real = _quietly(lambda: sp.solveset(expr, x, sp.S.Reals), 0.5)
    described = _describe(real, x) if real is not None else None
    if described is None:
        return _numeric_solutions(expr, x)
    if not described:
        complex_roots = _quietly(lambda: sp.solveset(expr, x, sp.S.Complexes), 0.6)
        if isinstance(complex_roots, sp.FiniteSet) and complex_roots:
            return f"no real solution; complex: {_join(_describe(complex_roots, x) or [])}"
        return "no real solution"
    text = _join(described)
    if isinstance(real, sp.FiniteSet) and _quietly(lambda: expr.is_polynomial(x), 0.1):
        everything = _quietly(lambda: sp.solveset(expr, x, sp.S.Complexes), 0.6)
        if isinstance(everything, sp.FiniteSet):
            extra = sp.FiniteSet(*(s for s in everything if s.is_real is False))
            if extra:
                text += f"; complex: {_join(_describe(extra, x) or [])}"
    return text


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
        parts: list[str] = []
        for piece in found.args:
            described = _describe(piece, x)
            if described is None:
                return None
            parts.extend(described)
        return parts
    return None


def _numeric_solutions(expr: sp.Expr, x: sp.Symbol) -> str:
    lo, hi = SEARCH_RANGE
    roots = _quietly(lambda: _scan_roots(expr, x), 0.9)
    if not roots:
        return (
            f"no exact solution was found, and a numerical search over {lo:g} ≤ {x} ≤ {hi:g} "
            "found none"
        )
    listed = " or ".join(f"{x} ≈ {format_decimal(mpmath.mpf(r))}" for r in roots)
    return f"{listed} (numerical; no exact form found; searched {lo:g} ≤ {x} ≤ {hi:g})"


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
            a, b = float(xs[i]), float(xs[i + 1])
            for _ in range(80):
                middle = (a + b) / 2
                if (at(middle) < 0) == (left < 0):
                    a = middle
                else:
                    b = middle
            root = (a + b) / 2
            if abs(at(root)) < 1e-6:
                roots.append(root)
        if len(roots) >= MAX_SOLUTIONS:
            break
    return roots


@operation
def analyze_function(expression: str, variable: str = "x") -> str:
    x = parse_variable(variable)
    f = parse(expression)
    name = f"f({x})"
    lines = [f"{name} = {show_expr(f)}"]
    domain = _quietly(lambda: continuous_domain(f, x, sp.S.Reals), 0.15)
    shown = _domain_text(domain) if domain is not None else "could not be determined"
    lines.append(f"Domain: {shown}")
    region = domain if isinstance(domain, sp.Set) else sp.S.Reals
    lines.append(f"Roots: {_roots_text(f, x, region)}")
    if region.contains(0) is sp.true:
        lines.append(f"y-intercept: f(0) = {show(f.subs(x, 0))}")
    derivative = sp.diff(f, x)
    shown_derivative = _quietly(lambda: sp.simplify(derivative), 0.1) or derivative
    lines.append(f"Derivative: f'({x}) = {show_expr(shown_derivative)}")
    lines.extend(_extrema_lines(f, derivative, x, region))
    lines.append(_end_behaviour(f, x, region))
    return "\n".join(line for line in lines if line)


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
    roots = _quietly(lambda: sp.solveset(f, x, region), 0.25)
    described = _describe(roots, x) if roots is not None else None
    if described is None:
        return _numeric_solutions(f, x)
    return _join(described) if described else "none"


def _extrema_lines(f: sp.Expr, derivative: sp.Expr, x: sp.Symbol, region: sp.Set) -> list[str]:
    critical = _quietly(lambda: sp.solveset(derivative, x, region), 0.35)
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
        value = _quietly(lambda v=value: sp.simplify(v), 0.1) or value
        kind = _classify(derivative, second, x, point)
        at = f"f({show_expr(point)}) = {show(value)}"
        if kind == "neither":
            lines.append(f"Neither a maximum nor a minimum at {x} = {show_expr(point)}: {at}")
        else:
            lines.append(f"Local {kind}: {at}")
    return lines


def _classify(derivative: sp.Expr, second: sp.Expr, x: sp.Symbol, point: sp.Expr) -> str:
    curvature = _sign(second.subs(x, point))
    if curvature:
        return "minimum" if curvature > 0 else "maximum"
    step = sp.Rational(1, 1000) * max(1, abs(_float(point)))
    before, after = _sign(derivative.subs(x, point - step)), _sign(derivative.subs(x, point + step))
    if before < 0 < after:
        return "minimum"
    if before > 0 > after:
        return "maximum"
    return "neither"


def _sign(value: sp.Expr) -> int:
    number = _float(value)
    if not math.isfinite(number) or abs(number) < 1e-12:
        return 0
    return 1 if number > 0 else -1


def _float(value: sp.Expr) -> float:
    try:
        number = value.evalf(15)
        return float(number) if number.is_real else math.nan
    except (TypeError, ValueError, ArithmeticError):
        return math.nan


def _end_behaviour(f: sp.Expr, x: sp.Symbol, region: sp.Set) -> str:
    parts = []
    for end, label in ((-sp.oo, "-∞"), (sp.oo, "∞")):
        if (region.inf if end == -sp.oo else region.sup) != end:
            continue
        limit = _quietly(lambda e=end: sp.limit(f, x, e), 0.1)
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
    value = _float(bound)
    if not abs(value) <= MAX_PLOT_BOUND:
        raise MathInputError(
            f"plot bounds must be between -{MAX_PLOT_BOUND:,.0f} and {MAX_PLOT_BOUND:,.0f}"
        )
    return value


def warm_up() -> None:
    """Run each kind of job once so the lazily imported parts of sympy and matplotlib load."""
    jobs = [
        ("calculate", {"expression": "sqrt(8) + 1/3"}),
        ("integrate", {"expression": "x sin(x)"}),
        ("integrate", {"expression": "exp(-x^2)", "lower": "0", "upper": "1"}),
        ("differentiate", {"expression": "x/(x+1)"}),
        ("solve_equation", {"equation": "x^2 - 4 = 0"}),
        ("analyze_function", {"expression": "x^3 - 3x"}),
    ]
    for op, kwargs in jobs:
        run_job(op, kwargs, 10.0)
    x = parse_variable("x")
    figure = AreaPlot(0.0, 1.0, "0", "1", "∫₀¹ x² dx = 1/3", "Area = 1/3", "f(x) = x²")
    render_area(compile_numeric(x**2, x, "numpy"), figure, io.BytesIO())
