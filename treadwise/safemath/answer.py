"""What a math operation returns: the statement people read and the values code reads.

The statement ("1 ÷ 3 = 1/3 ≈ 0.333333333") is what the tool says; `exact`, `approx`,
`formula` and `values` are the same result as data, so no reader ever splits the statement
on "=" or "≈" to get them back.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

# value: one number; formula: an expression in the variable; solutions: an equation's answers;
# estimate: a numerical value without exact form; diverges; none: no solution or no limit;
# unknown: could not be computed; analysis: a function's properties.
Kind = Literal["value", "formula", "solutions", "estimate", "diverges", "none", "unknown",
               "analysis"]


@dataclass(frozen=True)
class Answer:
    """One operation's result, worded and as data (it crosses the worker pipe pickled)."""

    statement: str
    kind: Kind = "value"
    asked: str = ""  # what was computed, as shown: "5 + 4", "∫₀³ x^2 dx", "d/dx [x^3]"
    shown: str = ""  # the result as shown after "=": "9", "1/3 ≈ 0.333333333", "x^3/3 + C"
    exact: str | None = None  # one number in full, in the parser's notation: "1/3", "2*sqrt(2)"
    approx: float | None = None  # its value as a float, when it is a finite real number
    formula: str | None = None  # a result in the variable: "3x^2", an antiderivative without C
    values: tuple[str, ...] = ()  # every value of a result with several (an equation's roots)
    file: str | None = None  # a plot's PNG
    labels: tuple[str, ...] = ()  # what a plot is labelled with (the area, the signed integral)
