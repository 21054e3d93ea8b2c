"""The math tools' artifacts: what was computed (operation, operands) and the result as values."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Literal

from treadwise.safemath.answer import Answer, Kind
from treadwise.tools.artifacts import ToolArtifact, artifact_of

PLOT_NOTE = "The shaded area is drawn in the attached plot."
Operand = str | int | float | None
MAX_BRIEF_CHARS = 40


class Calculation(ToolArtifact):
    """A math result: the operation and its operands, the statement, and its values.

    `exact` is one number in full in the engine's own notation ("1/3", "2*sqrt(2)"), usable as
    the next calculation's operand; `approx` its float; `formula` a result in the variable (a
    derivative, an antiderivative without "+ C"); `values` every value of a result with several
    (an equation's real solutions). `outcome` says which of these the result is.
    """

    operation: str
    operands: dict[str, Operand]
    statement: str
    outcome: Kind = "value"
    asked: str = ""
    shown: str = ""
    exact: str | None = None
    approx: float | None = None
    formula: str | None = None
    values: list[str] = []

    def words(self) -> str:
        return self.statement

    def brief(self) -> str:
        value = self.shown.removesuffix(" + C") if self.outcome == "formula" else self.shown
        if value and len(value) <= MAX_BRIEF_CHARS:
            return value if value.startswith("≈") else f"= {value}"
        return ""

    @property
    def line(self) -> str:
        """The statement on one line, as a step of a worked answer."""
        return " ".join(self.statement.split())


class MathResult(Calculation):
    """Arithmetic, calculus, equations, limits, analyses and programs."""

    kind: Literal["math"] = "math"


class PlotResult(Calculation):
    """plot_area: the integral, the PNG it drew (`file`) and the plot's labels."""

    kind: Literal["plot"] = "plot"
    file: str
    labels: list[str] = []

    def words(self) -> str:
        text = f"{PLOT_NOTE} {self.statement}"
        if len(self.labels) > 1:
            text += f". The plot is labelled \"{'; '.join(self.labels)}\""
        return text

    def files(self) -> list[str]:
        return [self.file]


def calculation(operation: str, operands: Mapping[str, object], answer: Answer) -> Calculation:
    """The artifact of one engine answer: a PlotResult when it drew a file."""
    given = {k: v if isinstance(v, str | int | float) or v is None else str(v)
             for k, v in operands.items()}
    fields: dict[str, Any] = {
        "operation": operation, "operands": given, "statement": answer.statement,
        "outcome": answer.kind, "asked": answer.asked, "shown": answer.shown,
        "exact": answer.exact, "approx": answer.approx, "formula": answer.formula,
        "values": list(answer.values)}
    if answer.file is not None:
        return PlotResult(file=answer.file, labels=list(answer.labels), **fields)
    return MathResult(**fields)


def calculation_of(message: object) -> Calculation | None:
    """The math artifact a ToolMessage (or a step) carries, if it is one."""
    found = artifact_of(message)
    return found if isinstance(found, Calculation) else None
