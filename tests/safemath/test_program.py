"""Short math programs: assignments and expressions through the allow-list, nothing else."""

from __future__ import annotations

import pytest

from treadwise.safemath.jobs import run_job


def run(program: str) -> tuple[str, str]:
    """(status, the program's statement or the error) of a program run in this process."""
    status, found, _ = run_job("run_program", {"program": program}, 5.0)
    return status, found.statement if status == "ok" else found


def test_a_program_shows_each_assignment_and_its_result():
    assert run("a = 5 + 4\nb = a^2\nb") == ("ok", "a = 9\nb = 81\nResult: 81")
    status, text = run("r = sqrt(2) * pi")
    assert status == "ok" and text.endswith("≈ 4.44288294")


@pytest.mark.parametrize("program, why", [
    ("import os", "`Import` is not allowed"),
    ("x = __import__('os')", "not an allowed function"),
    ("a = (1).__class__", "attribute access"),
    # What was refused, by name: not "`this` is not an allowed function".
    ("'{0.__class__}'.format(1)", "attribute access and method calls (`.format`)"),
    ("a = sin(x).diff(x)", "attribute access and method calls (`.diff`)"),
    ("a = sqrt(2)(3)", "only the named math functions can be called"),
    ("a = [1, 2]", "lists are not allowed"),
    ("for i in x: pass", "`For` is not allowed"),
    ("def f(): return 1", "`FunctionDef` is not allowed"),
    ("a, b = 1, 2", "assign to one plain name"),
    ("sqrt = 4", "cannot be assigned"),
    ("a = undefined_name + 1", "not an allowed name"),
    ("a = 10**10**10", "too large"),
    ("a = 1\n" * 21, "more than 20 statements"),
    ("a = " + "1 + " * 1200 + "1", "too long"),
    ("", "empty"),
])
def test_anything_but_assignments_and_math_is_refused(program, why):
    status, text = run(program)
    assert status == "error" and why in text
