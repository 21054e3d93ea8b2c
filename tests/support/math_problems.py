"""The math problem table, with exact answers, shared by the math tool tests and the benchmark."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class Problem:
    """A tool call and its expected result: the whole text, or (whole=False) lines it contains."""

    tool: str
    args: dict[str, Any]
    expected: str
    whole: bool = True


PROBLEMS: list[Problem] = [
    Problem("add", {"a": 5, "b": 4}, "5 + 4 = 9"),
    Problem("add", {"a": 0.1, "b": 0.2}, "0.1 + 0.2 = 0.3"),
    Problem("subtract", {"a": 5, "b": 12}, "5 - 12 = -7"),
    Problem("subtract", {"a": 5, "b": -4}, "5 - (-4) = 9"),
    Problem("multiply", {"a": 2.5, "b": 4}, "2.5 × 4 = 10"),
    Problem("multiply", {"a": -3, "b": 7}, "-3 × 7 = -21"),
    Problem("divide", {"a": 7, "b": 2}, "7 ÷ 2 = 3.5"),
    Problem("divide", {"a": 1, "b": 3}, "1 ÷ 3 = 1/3 ≈ 0.333333333"),
    Problem("power", {"base": 2, "exponent": 10}, "2^10 = 1024"),
    Problem("power", {"base": 2, "exponent": -2}, "2^(-2) = 0.25"),
    Problem("square", {"x": 9}, "9² = 81"),
    Problem("square", {"x": -1.5}, "(-1.5)² = 2.25"),
    Problem("square_root", {"x": 2}, "√2 = sqrt(2) ≈ 1.41421356"),
    Problem("square_root", {"x": 144}, "√144 = 12"),
    Problem("calculate", {"expression": "2+2"}, "2+2 = 4"),
    Problem("calculate", {"expression": "sqrt(8)"}, "sqrt(8) = 2*sqrt(2) ≈ 2.82842712"),
    Problem("calculate", {"expression": "15% of 240"}, "15% of 240 = 36"),
    Problem("calculate", {"expression": "2^10 - 3·4"}, "2^10 - 3·4 = 1012"),
    Problem("calculate", {"expression": "1/3 + 1/6"}, "1/3 + 1/6 = 0.5"),
    Problem("calculate", {"expression": "sin(pi/6)"}, "sin(pi/6) = 0.5"),
    Problem("calculate", {"expression": "factorial(10)"}, "factorial(10) = 3628800"),
    Problem("calculate", {"expression": "log(8, 2)"}, "log(8, 2) = 3"),
    Problem("calculate", {"expression": "2x + 3x"}, "2x + 3x = 5x"),
    Problem("calculate", {"expression": "(x+1)(x-1)"}, "(x+1)(x-1) = x^2 - 1"),
    Problem("integrate", {"expression": "x^2", "lower": "0", "upper": "3"}, "∫₀³ x^2 dx = 9"),
    Problem("integrate", {"expression": "sin(x)", "lower": "0", "upper": "pi"},
            "∫ from 0 to pi of sin(x) dx = 2"),
    Problem("integrate", {"expression": "e^x", "lower": 0, "upper": 1},
            "∫₀¹ exp(x) dx = E - 1 ≈ 1.71828183"),
    Problem("integrate", {"expression": "1/x", "lower": "1", "upper": "e"},
            "∫ from 1 to E of 1/x dx = 1"),
    Problem("integrate", {"expression": "exp(-x²)", "lower": "-oo", "upper": "oo"},
            "∫ from -∞ to ∞ of exp(-x^2) dx = sqrt(pi) ≈ 1.77245385"),
    Problem("integrate", {"expression": "3x^2 + 2x", "lower": "0", "upper": "2"},
            "∫₀² 3x^2 + 2x dx = 12"),
    Problem("integrate", {"expression": "1/(1+x^2)", "lower": "0", "upper": "1"},
            "∫₀¹ 1/(x^2 + 1) dx = pi/4 ≈ 0.785398163"),
    Problem("integrate", {"expression": "cos(x)", "lower": "0", "upper": "pi/2"},
            "∫ from 0 to pi/2 of cos(x) dx = 1"),
    Problem("integrate", {"expression": "x^2"}, "∫ x^2 dx = x^3/3 + C"),
    Problem("integrate", {"expression": "cos(x)"}, "∫ cos(x) dx = sin(x) + C"),
    Problem("integrate", {"expression": "1/x"}, "∫ 1/x dx = ln(x) + C"),
    Problem("integrate", {"expression": "e^(2x)"}, "∫ exp(2x) dx = exp(2x)/2 + C"),
    Problem("differentiate", {"expression": "x^3"}, "d/dx [x^3] = 3x^2"),
    Problem("differentiate", {"expression": "x sin(x)"}, "d/dx [x*sin(x)] = x*cos(x) + sin(x)"),
    Problem("differentiate", {"expression": "x^3", "order": 2}, "d²/dx² [x^3] = 6x"),
    Problem("differentiate", {"expression": "ln(x)"}, "d/dx [ln(x)] = 1/x"),
    Problem("differentiate", {"expression": "e^(x^2)"}, "d/dx [exp(x^2)] = 2x*exp(x^2)"),
    Problem("solve_equation", {"equation": "x^2 - 4 = 0"}, "x^2 - 4 = 0: x = -2 or x = 2"),
    Problem("solve_equation", {"equation": "2x + 3 = 7"}, "2x + 3 = 7: x = 2"),
    Problem("solve_equation", {"equation": "x² = 2"},
            "x² = 2: x = -sqrt(2) ≈ -1.41421356 or x = sqrt(2) ≈ 1.41421356"),
    Problem("solve_equation", {"equation": "x^2 + 1 = 0"},
            "x^2 + 1 = 0: no real solution; complex: x = -I or x = I"),
    Problem("solve_equation", {"equation": "x^2 - 5x + 6"}, "x^2 - 5x + 6 = 0: x = 2 or x = 3"),
    Problem("analyze_function", {"expression": "x^3 - 3x"},
            "Domain: all real numbers\nCritical points: x = -1, x = 1\n"
            "Local maximum: f(-1) = 2\nLocal minimum: f(1) = -2", whole=False),
    Problem("analyze_function", {"expression": "x^2 - 4x + 3"},
            "Roots: x = 1 or x = 3\nLocal minimum: f(2) = -1", whole=False),
    Problem("analyze_function", {"expression": "ln(x)"},
            "Domain: (0, ∞)\nRoots: x = 1\nCritical points: none, so no local maximum or minimum",
            whole=False),
]
