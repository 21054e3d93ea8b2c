"""A message's clauses and the plan they make: "add 5 and 4, then square the result" is two
steps, and the second step's operand is the first step's result."""

from __future__ import annotations

import re
from dataclasses import dataclass

# Where one ask ends and the next begins.
_SPLIT = re.compile(r"\s*(?:[;?!]+|\.(?=\s|$)|,?\s*\b(?:and then|then|after that|next)\b"
                    r"|,\s*and\b(?=\s+(?:what|how|also|now)))\s*", re.IGNORECASE)
# Words by which a clause uses what the step before it found.
BACK_REFERENCE = re.compile(
    r"\b(?:the|that|this) (?:result|answer|sum|total|product|difference|quotient|number|value)"
    r"\b|\b(?:it|that|this)\b", re.IGNORECASE)


@dataclass(frozen=True)
class Step:
    """One clause of a message and whether it uses the result of the clause before it."""

    text: str
    uses_previous: bool = False

    def with_result(self, value: str) -> str:
        """The clause with the earlier result written in: "square the result" -> "square 9"."""
        return BACK_REFERENCE.sub(value, self.text, count=1) if self.uses_previous else self.text


def clauses(text: str) -> list[str]:
    """The message cut into its asks ("What is 2+2? And 3+3?" is two)."""
    return [part.strip(" ,") for part in _SPLIT.split(text) if part and part.strip(" ,")]


def plan(text: str) -> list[Step]:
    """The steps of a chained ask: each clause after the first that refers back to a result
    is a step of its own; a message without such a chain is one step."""
    parts = clauses(text)
    if len(parts) < 2 or not any(BACK_REFERENCE.search(p) for p in parts[1:]):
        return [Step(text)]
    return [Step(parts[0]), *(Step(p, bool(BACK_REFERENCE.search(p))) for p in parts[1:])]
