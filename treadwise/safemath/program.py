"""Short math programs: assignments and expressions only, each built through the parser's
allow-list, so a model's program runs in the sandbox like any other calculation."""

from __future__ import annotations

import ast
import re
from typing import TYPE_CHECKING

from treadwise.safemath.answer import Answer
from treadwise.safemath.display import show
from treadwise.safemath.jobs import operation
from treadwise.safemath.math_errors import MathInputError
from treadwise.safemath.notation import CONSTANTS, FUNCTIONS, MAX_CHARS
from treadwise.safemath.parser import _Builder, _check_shape
from treadwise.safemath.values import approx_value, exact_text

if TYPE_CHECKING:
    import sympy

MAX_STATEMENTS = 20
NAME_RE = re.compile(r"[A-Za-z_][A-Za-z0-9_]{0,23}")
# Everyday operator spellings a model may use; the rest of the notation is Python's.
_OPERATORS = str.maketrans({"^": "**", "×": "*", "·": "*", "÷": "/", "−": "-"})
ALLOWED_STATEMENTS = ("one statement per line: `name = expression`, or a final expression; "
                      "the expressions use numbers, + - * / ** %, and the math functions")


class _ProgramBuilder(_Builder):
    """The parser's expression builder, where names the program assigned hold their values."""

    def __init__(self, source: str, values: dict[str, sympy.Expr]):
        super().__init__(source)
        self.values = values

    def _name(self, name: str) -> sympy.Expr:
        if name in self.values:
            return self.values[name]
        return super()._name(name)


def _statements(program: str) -> tuple[str, list[ast.stmt]]:
    if not isinstance(program, str):
        raise MathInputError("the program must be text")
    source = program.translate(_OPERATORS).strip()
    if not source:
        raise MathInputError("the program is empty; write one assignment per line")
    if len(source) > MAX_CHARS:
        raise MathInputError(f"the program is too long (the limit is {MAX_CHARS:,} characters)")
    try:
        tree = ast.parse(source, mode="exec")
    except SyntaxError as exc:
        raise MathInputError(f"could not read line {exc.lineno} of the program; "
                             f"{ALLOWED_STATEMENTS}") from None
    except (RecursionError, MemoryError, ValueError):
        raise MathInputError("the program is too complex to read") from None
    _check_shape(tree)
    if len(tree.body) > MAX_STATEMENTS:
        raise MathInputError(f"the program has more than {MAX_STATEMENTS} statements")
    return source, tree.body


def _target(statement: ast.Assign) -> str:
    if len(statement.targets) != 1 or not isinstance(statement.targets[0], ast.Name):
        raise MathInputError(f"line {statement.lineno}: assign to one plain name, like a = 5 + 4")
    name = statement.targets[0].id
    if not NAME_RE.fullmatch(name) or name in FUNCTIONS or name in CONSTANTS:
        raise MathInputError(f"line {statement.lineno}: `{name}` cannot be assigned; "
                             "use a short name such as a, total or step1")
    return name


@operation
def run_program(program: str) -> Answer:
    """Run a short program: each line's value shown, then the result (the last line's value)."""
    source, statements = _statements(program)
    values: dict[str, sympy.Expr] = {}
    lines: list[str] = []
    result = None
    for statement in statements:
        if isinstance(statement, ast.Assign):
            name = _target(statement)
            result = values[name] = _ProgramBuilder(source, values).build(statement.value, 0)
            lines.append(f"{name} = {show(result)}")
        elif isinstance(statement, ast.Expr):
            result = _ProgramBuilder(source, values).build(statement.value, 0)
        else:
            raise MathInputError(f"line {statement.lineno}: `{type(statement).__name__}` is "
                                 f"not allowed; {ALLOWED_STATEMENTS}")
    if result is None:
        raise MathInputError("the program computes nothing")
    return Answer("\n".join([*lines, f"Result: {show(result)}"]), "value", "Result",
                  show(result), exact=exact_text(result), approx=approx_value(result))
