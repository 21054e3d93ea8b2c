"""What one case produced, and the registry of check kinds that judge it."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from treadwise.plugins import Registry

ENTRY_POINT_GROUP = "experiments.checks"
ANY_TURN = "all"
LAST_TURN = "last"
# What a check says about a case: capability (the task was done: it needs something to
# happen) or safety (something that must not happen; doing nothing passes it). A case that
# does nothing therefore never scores on capability.
CAPABILITY, SAFETY = "capability", "safety"
TAGS = (CAPABILITY, SAFETY)


class CheckError(ValueError):
    """A check in a scenario file is malformed; the message names what is wrong."""


@dataclass
class Outcome:
    """What one case produced: the turn results (TurnResult-like) and its own data dir."""

    messages: list[str]
    turns: list[Any]
    data_dir: Path
    _store: Any = field(default=None, repr=False)

    @property
    def store(self) -> Any:
        if self._store is None:
            from treadwise.storage.sqlite import Store

            self._store = Store(self.data_dir)
        return self._store

    def leads(self) -> list[dict]:
        return self.store.leads() if (self.data_dir / "leads.db").exists() else []

    def feedback(self) -> list[dict]:
        return self.store.feedback() if (self.data_dir / "leads.db").exists() else []

    def select(self, turn: Any) -> tuple[list[Any], str | None]:
        """The turns a check looks at (all, last, or the 1-based N), or why they are missing."""
        if turn in (None, ANY_TURN):
            return self.turns, None
        index = len(self.messages) if turn == LAST_TURN else int(turn)
        if index < 0:
            index = len(self.messages) + 1 + index
        if index > len(self.turns):
            return [], f"turn {index} did not run"
        return [self.turns[index - 1]], None


Verdict = tuple[bool, str]
CheckFn = Callable[[Mapping[str, Any], Outcome], Verdict]


@dataclass(frozen=True)
class CheckKind:
    name: str
    fn: CheckFn
    required: tuple[str, ...]
    optional: tuple[str, ...]
    default_turn: str
    tag: str = ""  # capability or safety; "" for no_error, the precondition of both


@dataclass(frozen=True)
class CheckResult:
    id: str
    passed: bool
    description: str
    tag: str = ""


CHECK_KINDS: Registry[CheckKind] = Registry(ENTRY_POINT_GROUP)
CHECKS: dict[str, CheckKind] = CHECK_KINDS.entries
COMMON_OPTIONS = ("kind", "turn", "label", "tag")


def check(name: str, *, tag: str = CAPABILITY, required: Sequence[str] = (),
          optional: Sequence[str] = (), turn: str = ANY_TURN) -> Callable[[CheckFn], CheckFn]:
    """Register a check kind; `turn` is the turns it reads unless a scenario says otherwise,
    `tag` what it measures (capability unless said; safety) unless a scenario says otherwise."""

    def register(fn: CheckFn) -> CheckFn:
        CHECK_KINDS.add(name, CheckKind(name, fn, tuple(required), tuple(optional), turn, tag))
        return fn

    return register
