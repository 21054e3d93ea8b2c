"""A local model's calls held to the conversation: grounded values, the one retry, two steps."""

from __future__ import annotations

from collections.abc import Sequence

from langchain_core.messages import BaseMessage, ToolMessage

from treadwise.models.tool_grammar import Held


def held(history: Sequence[BaseMessage], tools: Sequence[str]) -> Held:
    """The values each declared argument of these tools may take: those the conversation
    grounds (numbers the customer wrote or results found, cities they named, ...)."""
    from treadwise.evidence.arguments import held_values
    from treadwise.evidence.conversation import Evidence

    evidence = Evidence.of(history)
    return {name: held_values(name, evidence) for name in tools}


def retrying(results: Sequence[ToolMessage]) -> bool:
    """The turn's only result is the grounding guard's refusal: the one retry picks again."""
    from treadwise.evidence.arguments import REFUSAL_KEY

    return len(results) == 1 and bool(results[0].additional_kwargs.get(REFUSAL_KEY))


def next_step(question: str, results: Sequence[ToolMessage]) -> str | None:
    """A two-step ask's next step once the one before has a result: "add 5 and 4, then square
    the result" -> "square 9" (its operand is that result, a grounded value)."""
    from treadwise.evidence.clauses import plan
    from treadwise.tools.math_results import calculation_of

    steps = plan(question)
    done = [r for r in results if r.status != "error"]
    # A refused try before a step's result is the one retry's business, not a stop.
    if len(steps) < 2 or not done or results[-1].status == "error" or len(done) >= len(steps):
        return None
    found = calculation_of(done[-1])
    if found is None or found.exact is None:
        return None
    return steps[len(done)].with_result(str(found.exact))


def chain(question: str, results: Sequence[ToolMessage]) -> list[str]:
    """Each step's statement once a two-step ask has a result for every step ("5 + 4 = 9",
    "9² = 81"); [] for any other turn."""
    from treadwise.evidence.clauses import plan
    from treadwise.tools.math_results import calculation_of

    steps = plan(question)
    found = [calculation_of(r) for r in results if r.status != "error"]
    if len(steps) < 2 or len(found) != len(steps) or results[-1].status == "error" \
            or any(f is None or not f.statement for f in found):
        return []
    return [f.statement for f in found if f is not None]
