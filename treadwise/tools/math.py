"""Math tools: exact arithmetic, calculus, equations and area plots, run in the safe math engine.

Each returns its statement for the model and a Calculation artifact (tools/math_results.py):
the operation, its operands and the result as values.
"""

from __future__ import annotations

import uuid
from typing import Any

from langchain_core.runnables import RunnableConfig
from langchain_core.tools import BaseTool, ToolException

from treadwise.safemath import MathEngine, MathError, get_engine
from treadwise.tools import ToolContext
from treadwise.tools.artifacts import worded
from treadwise.tools.math_results import Calculation, calculation
from treadwise.tools.methods import method_tools

Result = tuple[str, Calculation]
PLAIN_TOOLS = ("add", "subtract", "multiply", "divide", "power", "square", "square_root",
               "calculate", "integrate", "differentiate", "solve_equation", "analyze_function",
               "limit")


def math_tools(context: ToolContext) -> list[BaseTool]:
    """The fourteen math tools; `context.math_engine` may supply the MathEngine."""
    box = MathToolbox(context, context.math_engine or get_engine())
    return method_tools(box, (*PLAIN_TOOLS, "plot_area"))


def program_tools(context: ToolContext) -> list[BaseTool]:
    """The restricted program tool (self-consistency's program-aided attempts use it)."""
    box = MathToolbox(context, context.math_engine or get_engine())
    return method_tools(box, ("run_program",))


def session_of(config: RunnableConfig | None) -> str | None:
    """The conversation a tool call belongs to (its thread id), for the math pool's fair shares."""
    thread_id = ((config or {}).get("configurable") or {}).get("thread_id")
    return str(thread_id) if thread_id else None


class MathToolbox:
    """The math tools' bodies: each sends its operation to the engine, in the name of the
    conversation that asked (LangChain injects the run's config into a `RunnableConfig`
    parameter and leaves it out of the tool's schema)."""

    def __init__(self, context: ToolContext, engine: MathEngine):
        self.context = context
        self.engine = engine

    def _answer(self, config: RunnableConfig, op: str, **kwargs: Any) -> Any:
        try:
            return self.engine.run(op, session=session_of(config),
                                   timeout_s=self.context.math_timeout_s, **kwargs)
        except MathError as exc:
            raise ToolException(str(exc)) from None

    def _run(self, config: RunnableConfig, op: str, **kwargs: Any) -> Result:
        return worded(calculation(op, kwargs, self._answer(config, op, **kwargs)))

    def add(self, a: float, b: float, *, config: RunnableConfig) -> Result:
        """Add two numbers exactly (0.1 + 0.2 = 0.3). The result follows the last "=".

        Args:
            a: The first number.
            b: The number to add to it.
        """
        return self._run(config, "add", a=a, b=b)

    def subtract(self, a: float, b: float, *, config: RunnableConfig) -> Result:
        """Subtract b from a exactly. The result follows the last "=".

        Args:
            a: The number to subtract from.
            b: The number to subtract.
        """
        return self._run(config, "subtract", a=a, b=b)

    def multiply(self, a: float, b: float, *, config: RunnableConfig) -> Result:
        """Multiply two numbers exactly. The result follows the last "=".

        Args:
            a: The first factor.
            b: The second factor.
        """
        return self._run(config, "multiply", a=a, b=b)

    def divide(self, a: float, b: float, *, config: RunnableConfig) -> Result:
        """Divide a by b exactly (a fraction plus its decimal when it does not terminate).

        Args:
            a: The dividend.
            b: The divisor (not zero).
        """
        return self._run(config, "divide", a=a, b=b)

    def power(self, base: float, exponent: float, *, config: RunnableConfig) -> Result:
        """Raise base to exponent exactly; huge results are given in scientific notation.

        Args:
            base: The base.
            exponent: The exponent (may be negative or fractional).
        """
        return self._run(config, "power", base=base, exponent=exponent)

    def square(self, x: float, *, config: RunnableConfig) -> Result:
        """Square a number (x²).

        Args:
            x: The number to square.
        """
        return self._run(config, "square", x=x)

    def square_root(self, x: float, *, config: RunnableConfig) -> Result:
        """Square root of a number, exact (sqrt(8) = 2*sqrt(2)) with its decimal value.

        Args:
            x: The number; a negative number gives an imaginary root.
        """
        return self._run(config, "square_root", x=x)

    def calculate(self, expression: str, *, config: RunnableConfig) -> Result:
        """Evaluate or simplify a math expression exactly, with a decimal where it helps.
        Everyday notation works: 2x, x^2, x², sqrt(x), √x, e^x, pi, ln(x), 15% of 240.

        Args:
            expression: The expression, e.g. "sqrt(8) + 1/3", "15% of 240", "2^100",
                "sin(pi/6)", "factorial(20)".
        """
        return self._run(config, "calculate", expression=expression)

    def integrate(self, expression: str, variable: str = "x", lower: str | float | None = None,
                  upper: str | float | None = None, *, config: RunnableConfig) -> Result:
        """Integrate a function: exact antiderivative (+ C) without bounds, exact value with
        bounds (a numerical estimate when there is no closed form; says when it diverges).
        Everyday notation works: 2x, x^2, x², sqrt(x), √x, e^x, pi, ln(x), 15% of 240.

        Args:
            expression: The function to integrate, e.g. "x^2", "sin(x)", "e^x".
            variable: The integration variable.
            lower: The lower bound, e.g. "0", "pi", "-oo"; leave out for an antiderivative.
            upper: The upper bound, e.g. "3", "pi/2", "oo"; leave out for an antiderivative.
        """
        return self._run(config, "integrate", expression=expression, variable=variable,
                         lower=lower, upper=upper)

    def differentiate(self, expression: str, variable: str = "x", order: int = 1, *,
                      config: RunnableConfig) -> Result:
        """Differentiate a function exactly, any order from 1 to 10.
        Everyday notation works: 2x, x^2, x², sqrt(x), √x, e^x, pi, ln(x), 15% of 240.

        Args:
            expression: The function, e.g. "x^3 + 2x", "sin(x) e^x".
            variable: The variable to differentiate by.
            order: 1 for the first derivative, 2 for the second, and so on.
        """
        return self._run(config, "differentiate", expression=expression, variable=variable,
                         order=order)

    def solve_equation(self, equation: str, variable: str = "x", *,
                       config: RunnableConfig) -> Result:
        """Solve an equation for a variable: exact real solutions first, complex ones after,
        a numerical answer when no exact one exists. Without "=" the expression equals 0.
        Everyday notation works: 2x, x^2, x², sqrt(x), √x, e^x, pi, ln(x), 15% of 240.

        Args:
            equation: The equation, e.g. "x^2 - 4 = 0", "2x + 3 = 7", "sin(x) = 1/2".
            variable: The unknown to solve for.
        """
        return self._run(config, "solve_equation", equation=equation, variable=variable)

    def analyze_function(self, expression: str, variable: str = "x", *,
                         config: RunnableConfig) -> Result:
        """Analyse a real function: domain, roots, y-intercept, derivative, critical points,
        local maxima and minima with their values, and behaviour as x goes to ±infinity.
        Everyday notation works: 2x, x^2, x², sqrt(x), √x, e^x, pi, ln(x), 15% of 240.

        Args:
            expression: The function, e.g. "x^3 - 3x", "ln(x)/x".
            variable: The function's variable.
        """
        return self._run(config, "analyze_function", expression=expression, variable=variable)

    def limit(self, expression: str, variable: str = "x", point: str | float = "0",
              direction: str = "both", *, config: RunnableConfig) -> Result:
        """The limit of a function as the variable approaches a point or infinity; says when
        the limit does not exist (different from each side, or oscillating).
        Everyday notation works: 2x, x^2, x², sqrt(x), √x, e^x, pi, ln(x), 15% of 240.

        Args:
            expression: The function, e.g. "sin(x)/x", "(1 + 1/x)^x".
            variable: The variable that approaches the point.
            point: Where it goes, e.g. "0", "pi/2", "oo" (infinity) or "-oo".
            direction: "both" (the two-sided limit), "left" (from below) or "right".
        """
        return self._run(config, "limit", expression=expression, variable=variable, point=point,
                         direction=direction)

    def plot_area(self, expression: str, lower: str | float, upper: str | float,
                  variable: str = "x", *, config: RunnableConfig) -> Result:
        """Plot a function with the area under it between two bounds shaded, and give the
        integral's value. The PNG image is attached to the result.
        Everyday notation works: 2x, x^2, x², sqrt(x), √x, e^x, pi, ln(x), 15% of 240.

        Args:
            expression: The function, e.g. "x^2", "sin(x)".
            lower: The lower bound, a finite number or expression like "0" or "pi/2".
            upper: The upper bound, a finite number or expression like "3" or "pi".
            variable: The function's variable.
        """
        path = (self.context.plots_dir / f"area-{uuid.uuid4().hex[:12]}.png").resolve()
        operands = {"expression": expression, "lower": lower, "upper": upper,
                    "variable": variable}
        answer = self._answer(config, "plot_area", **operands, out_path=str(path))
        self.context.plots.keep(answer.file)
        return worded(calculation("plot_area", operands, answer))

    def run_program(self, program: str, *, config: RunnableConfig) -> Result:
        """Run a short math program in the sandbox and give each line's value and the result.
        One statement per line: `name = expression`, or a final expression whose value is the
        result. Expressions use numbers, + - * / ** %, names assigned above, and the math
        functions (sqrt, sin, ln, factorial, ...). Nothing else is allowed.

        Args:
            program: The program, e.g. "a = 5 + 4\\nb = a**2\\nb".
        """
        return self._run(config, "run_program", program=program)
