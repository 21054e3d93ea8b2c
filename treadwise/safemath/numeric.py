"""Numeric evaluation of a built sympy tree by walking it (never lambdify): numpy or mpmath."""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any, Literal

import mpmath
import numpy as np
import sympy as sp

from treadwise.safemath.math_errors import MathInputError

Backend = Literal["numpy", "mpmath"]
# A numpy array or an mpmath number in and out: numpy and mpmath have no common type.
Numeric = Callable[[Any], Any]


def _np_gamma(values: np.ndarray) -> np.ndarray:
    def one(value: float) -> float:
        try:
            return math.gamma(value)
        except (ValueError, OverflowError):
            return math.nan

    return np.vectorize(one, otypes=[float])(values)


def _mp_real(value: object) -> object:
    if isinstance(value, mpmath.mpc):
        if value.imag != 0:
            raise ValueError("the function is not real-valued here")
        return value.real
    return value


_NUMPY: dict[type, Callable] = {
    sp.sin: np.sin, sp.cos: np.cos, sp.tan: np.tan, sp.cot: lambda v: 1 / np.tan(v),
    sp.sec: lambda v: 1 / np.cos(v), sp.csc: lambda v: 1 / np.sin(v), sp.asin: np.arcsin,
    sp.acos: np.arccos, sp.atan: np.arctan, sp.sinh: np.sinh, sp.cosh: np.cosh,
    sp.tanh: np.tanh, sp.exp: np.exp, sp.log: np.log, sp.Abs: np.abs, sp.floor: np.floor,
    sp.ceiling: np.ceil, sp.sign: np.sign, sp.gamma: _np_gamma,
    sp.factorial: lambda v: _np_gamma(v + 1),
}
_MPMATH: dict[type, Callable] = {
    sp.sin: mpmath.sin, sp.cos: mpmath.cos, sp.tan: mpmath.tan, sp.cot: mpmath.cot,
    sp.sec: mpmath.sec, sp.csc: mpmath.csc, sp.asin: mpmath.asin, sp.acos: mpmath.acos,
    sp.atan: mpmath.atan, sp.sinh: mpmath.sinh, sp.cosh: mpmath.cosh, sp.tanh: mpmath.tanh,
    sp.exp: mpmath.exp, sp.log: mpmath.log, sp.Abs: abs, sp.floor: mpmath.floor,
    sp.ceiling: mpmath.ceil, sp.sign: mpmath.sign, sp.gamma: mpmath.gamma,
    sp.factorial: mpmath.factorial,
}


def compile_numeric(expr: sp.Expr, variable: sp.Symbol, backend: Backend) -> Numeric:
    """A function of one value (a numpy array or an mpmath number) computing `expr`."""
    extra = expr.free_symbols - {variable}
    if extra:
        names = ", ".join(sorted(str(s) for s in extra))
        raise MathInputError(
            f"the expression has other variables ({names}); only {variable} may vary"
        )
    if backend == "numpy":
        inner = _compile(expr, variable, _NUMPY, np.power, float)
        return lambda values: np.broadcast_to(np.asarray(inner(values), dtype=float),
                                              np.shape(values))
    inner = _compile(expr, variable, _MPMATH, mpmath.power, mpmath.mpf)
    return lambda value: _mp_real(inner(value))


def _compile(expr, variable, table, power, number) -> Numeric:
    if expr == variable:
        return lambda value: value
    if expr.is_number:
        constant = _constant(expr, number)
        return lambda value: constant
    args = [_compile(arg, variable, table, power, number) for arg in expr.args]
    if expr.is_Add:
        return lambda value: _fold(args, value, lambda a, b: a + b)
    if expr.is_Mul:
        return lambda value: _fold(args, value, lambda a, b: a * b)
    if expr.is_Pow:
        base, exponent = args
        return lambda value: power(base(value), exponent(value))
    if isinstance(expr, sp.Mod):
        left, right = args
        return lambda value: _mod(left(value), right(value))
    function = table.get(type(expr))
    if function is None or len(args) != 1:
        raise MathInputError(f"cannot evaluate {type(expr).__name__} numerically")
    (arg,) = args
    return lambda value: function(arg(value))


def _fold(parts: list[Numeric], value: object, combine: Callable) -> object:
    result = parts[0](value)
    for part in parts[1:]:
        result = combine(result, part(value))
    return result


def _mod(left, right):
    return left - right * (np.floor(left / right) if isinstance(left, np.ndarray) else
                           mpmath.floor(left / right))


def _constant(expr: sp.Expr, number: Callable) -> object:
    if expr in (sp.oo, -sp.oo):
        return number("inf") if expr == sp.oo else number("-inf")
    value = expr.evalf(20)
    if not value.is_Float:
        raise MathInputError(f"{expr} is not a real number, so it cannot be used numerically here")
    if number is mpmath.mpf:
        return mpmath.mpf(value)
    try:
        return float(value)
    except OverflowError:
        return math.copysign(math.inf, float(value.sign()))
