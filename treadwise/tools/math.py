"""Math tools: exact arithmetic, calculus, equations and area plots, run in the safe math engine."""

from __future__ import annotations

import re
import uuid
from typing import Any

from langchain_core.tools import BaseTool, StructuredTool, ToolException

from treadwise.safemath import MathEngine, MathInputError, get_engine
from treadwise.tools import ToolContext

PLOT_NOTE = "The shaded area is drawn in the attached plot."


def math_tools(context: ToolContext) -> list[BaseTool]:
    """The thirteen math tools; `context.extra["math_engine"]` may supply the MathEngine."""
    engine: MathEngine = context.extra.get("math_engine") or get_engine()

    def run(op: str, **kwargs: Any) -> Any:
        try:
            return engine.run(op, **kwargs)
        except MathInputError as exc:
            raise ToolException(str(exc)) from None

    def add(a: float, b: float) -> str:
        """Add two numbers exactly (0.1 + 0.2 = 0.3). The result follows the last "=".

        Args:
            a: The first number.
            b: The number to add to it.
        """
        return run("add", a=a, b=b)

    def subtract(a: float, b: float) -> str:
        """Subtract b from a exactly. The result follows the last "=".

        Args:
            a: The number to subtract from.
            b: The number to subtract.
        """
        return run("subtract", a=a, b=b)

    def multiply(a: float, b: float) -> str:
        """Multiply two numbers exactly. The result follows the last "=".

        Args:
            a: The first factor.
            b: The second factor.
        """
        return run("multiply", a=a, b=b)

    def divide(a: float, b: float) -> str:
        """Divide a by b exactly (a fraction plus its decimal when it does not terminate).

        Args:
            a: The dividend.
            b: The divisor (not zero).
        """
        return run("divide", a=a, b=b)

    def power(base: float, exponent: float) -> str:
        """Raise base to exponent exactly; huge results are given in scientific notation.

        Args:
            base: The base.
            exponent: The exponent (may be negative or fractional).
        """
        return run("power", base=base, exponent=exponent)

    def square(x: float) -> str:
        """Square a number (x²).

        Args:
            x: The number to square.
        """
        return run("square", x=x)

    def square_root(x: float) -> str:
        """Square root of a number, exact (sqrt(8) = 2*sqrt(2)) with its decimal value.

        Args:
            x: The number; a negative number gives an imaginary root.
        """
        return run("square_root", x=x)

    def calculate(expression: str) -> str:
        """Evaluate or simplify a math expression exactly, with a decimal where it helps.
        Everyday notation works: 2x, x^2, x², sqrt(x), √x, e^x, pi, ln(x), 15% of 240.

        Args:
            expression: The expression, e.g. "sqrt(8) + 1/3", "15% of 240", "2^100",
                "sin(pi/6)", "factorial(20)".
        """
        return run("calculate", expression=expression)

    def integrate(expression: str, variable: str = "x", lower: str | float | None = None,
                  upper: str | float | None = None) -> str:
        """Integrate a function: exact antiderivative (+ C) without bounds, exact value with
        bounds (a numerical estimate when there is no closed form; says when it diverges).
        Everyday notation works: 2x, x^2, x², sqrt(x), √x, e^x, pi, ln(x), 15% of 240.

        Args:
            expression: The function to integrate, e.g. "x^2", "sin(x)", "e^x".
            variable: The integration variable.
            lower: The lower bound, e.g. "0", "pi", "-oo"; leave out for an antiderivative.
            upper: The upper bound, e.g. "3", "pi/2", "oo"; leave out for an antiderivative.
        """
        return run("integrate", expression=expression, variable=variable, lower=lower, upper=upper)

    def differentiate(expression: str, variable: str = "x", order: int = 1) -> str:
        """Differentiate a function exactly, any order from 1 to 10.
        Everyday notation works: 2x, x^2, x², sqrt(x), √x, e^x, pi, ln(x), 15% of 240.

        Args:
            expression: The function, e.g. "x^3 + 2x", "sin(x) e^x".
            variable: The variable to differentiate by.
            order: 1 for the first derivative, 2 for the second, and so on.
        """
        return run("differentiate", expression=expression, variable=variable, order=order)

    def solve_equation(equation: str, variable: str = "x") -> str:
        """Solve an equation for a variable: exact real solutions first, complex ones after,
        a numerical answer when no exact one exists. Without "=" the expression equals 0.
        Everyday notation works: 2x, x^2, x², sqrt(x), √x, e^x, pi, ln(x), 15% of 240.

        Args:
            equation: The equation, e.g. "x^2 - 4 = 0", "2x + 3 = 7", "sin(x) = 1/2".
            variable: The unknown to solve for.
        """
        return run("solve_equation", equation=equation, variable=variable)

    def analyze_function(expression: str, variable: str = "x") -> str:
        """Analyse a real function: domain, roots, y-intercept, derivative, critical points,
        local maxima and minima with their values, and behaviour as x goes to ±infinity.
        Everyday notation works: 2x, x^2, x², sqrt(x), √x, e^x, pi, ln(x), 15% of 240.

        Args:
            expression: The function, e.g. "x^3 - 3x", "ln(x)/x".
            variable: The function's variable.
        """
        return run("analyze_function", expression=expression, variable=variable)

    def plot_area(expression: str, lower: str | float, upper: str | float,
                  variable: str = "x") -> tuple[str, str]:
        """Plot a function with the area under it between two bounds shaded, and give the
        integral's value. The PNG image is attached to the result.
        Everyday notation works: 2x, x^2, x², sqrt(x), √x, e^x, pi, ln(x), 15% of 240.

        Args:
            expression: The function, e.g. "x^2", "sin(x)".
            lower: The lower bound, a finite number or expression like "0" or "pi/2".
            upper: The upper bound, a finite number or expression like "3" or "pi".
            variable: The function's variable.
        """
        path = (context.plots_dir / f"area-{uuid.uuid4().hex[:12]}.png").resolve()
        text, artifact = run("plot_area", expression=expression, lower=lower, upper=upper,
                             variable=variable, out_path=str(path))
        # Replies quote this text; the image travels as the artifact, its file name means
        # nothing to a reader.
        text = re.sub(rf"[^.]*{re.escape(path.name)}[^.]*\.\s*", "", text)
        return f"{PLOT_NOTE} {text}", artifact

    plain = [add, subtract, multiply, divide, power, square, square_root, calculate, integrate,
             differentiate, solve_equation, analyze_function]
    tools: list[BaseTool] = [StructuredTool.from_function(fn, parse_docstring=True) for fn in plain]
    tools.append(StructuredTool.from_function(plot_area, parse_docstring=True,
                                              response_format="content_and_artifact"))
    return tools
