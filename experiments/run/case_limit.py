"""A case limit that keeps a sweep comparable: it trims repeats first, then whole scenarios, never
configurations, and says what it left out."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from experiments.define.grid import Case


class LimitTooSmall(ValueError):
    """The limit is below one scenario for every configuration."""


@dataclass(frozen=True)
class Trimmed:
    """The cases a limit keeps, and what it says about the ones it left out ("" for none)."""

    cases: list[Case]
    note: str = ""


def _plural(count: int, word: str) -> str:
    return f"{count} {word}{'' if count == 1 else 's'}"


def _span(numbers: Sequence[int]) -> str:
    """"repeat 2" or "repeats 2-3" (or "repeats 2, 4" when they are not consecutive)."""
    numbers = sorted(numbers)
    if len(numbers) == 1:
        return f"repeat {numbers[0]}"
    if numbers == list(range(numbers[0], numbers[-1] + 1)):
        return f"repeats {numbers[0]}\u2013{numbers[-1]}"
    return "repeats " + ", ".join(map(str, numbers))


def trim(cases: Sequence[Case], limit: int | None) -> Trimmed:
    """At most `limit` of `cases` (in the grid's order, repeat by repeat, scenario by
    scenario), taken a whole scenario at a time: every configuration answers the same
    scenarios, so they can be compared. LimitTooSmall when not even one scenario fits."""
    cases = list(cases)
    if limit is None or len(cases) <= limit:
        return Trimmed(cases)
    blocks: dict[tuple[int, str], list[Case]] = {}
    for case in cases:
        blocks.setdefault((case.repeat, case.scenario.id), []).append(case)
    configurations = len({case.cell for case in cases})
    kept: list[Case] = []
    for block in blocks.values():
        if len(kept) + len(block) > limit:
            break
        kept.extend(block)
    smallest = len(next(iter(blocks.values())))
    if not kept:
        raise LimitTooSmall(
            f"{_plural(limit, 'case')} cannot compare {configurations} configurations on the "
            f"same scenarios: the smallest comparable sweep is {smallest} cases (1 scenario "
            "each).")
    return Trimmed(kept, _note(limit, cases, kept, configurations, smallest))


def _note(limit: int, cases: list[Case], kept: list[Case], configurations: int,
          smallest: int) -> str:
    scenarios = list(dict.fromkeys(case.scenario.id for case in cases))
    kept_scenarios = {case.scenario.id for case in kept}
    repeats = sorted({case.repeat for case in cases})
    kept_repeats = sorted({case.repeat for case in kept})
    left = []
    if dropped := [r for r in repeats if r not in kept_repeats]:
        left.append(_span(dropped))
    if missing := len(scenarios) - len(kept_scenarios):
        left.append(f"{missing} of {len(scenarios)} scenarios")
    last = kept_repeats[-1]
    partial = {case.scenario.id for case in kept if case.repeat == last}
    if len(kept_repeats) > 1 and len(partial) < len(kept_scenarios):
        left.append(f"{_span([last])} of {len(kept_scenarios) - len(partial)} scenarios")
    each = (f"; the smallest comparable sweep is {smallest} cases, 1 scenario each"
            if len(kept_scenarios) == 1 and len(kept_repeats) == 1 else "")
    return (f"Case limit {limit} keeps {_plural(len(kept), 'case')}: all {configurations} "
            f"configurations on the same {_plural(len(kept_scenarios), 'scenario')} "
            f"({_span(kept_repeats)}{each}); left out: {' and '.join(left)} (resume the run "
            "for the rest).")
