"""Worked tool calls a small local model copies, the closest to each message shown last."""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import Any

EXAMPLES_FILE = Path(__file__).with_name("local_examples.yaml")
# Greetings and thanks: a 135M model given tools picks one even for these, so they get none.
_SMALL_TALK = re.compile(
    r"^\W*(hi|hello|hey|thanks?( you)?|thank you|bye|goodbye|ok(ay)?|good (morning|afternoon|"
    r"evening)|how are you)\b[\w\s,!.?']{0,20}$", re.I)
_STOP = frozenset("an the is are of what do does you your my me to for and in on can could would "
                  "please it this that with be".split())


def small_talk(message: str) -> bool:
    return bool(_SMALL_TALK.match(message.strip()))


@dataclass(frozen=True)
class Example:
    ask: str
    tool: str
    args: dict[str, Any]


@lru_cache(maxsize=1)
def examples() -> tuple[Example, ...]:
    from treadwise.datafiles import read_yaml_mapping

    data = read_yaml_mapping(EXAMPLES_FILE, ValueError, "examples file")
    return tuple(Example(e["ask"], e["tool"], dict(e["args"])) for e in data["examples"])


def _words(text: str) -> frozenset[str]:
    """The message's words cut to a rough stem (tires ~ tire, installation ~ install);
    numbers are left out, they say nothing about which tool is wanted."""
    return frozenset(w[:4] for w in re.findall(r"[a-z]{2,}", text.lower()) if w not in _STOP)


def closest(message: str, tool_names: Sequence[str], count: int = 3) -> list[Example]:
    """At most ``count`` examples of these tools sharing words with the message, the closest
    last: a small model copies what it read last, and unrelated examples only distract it."""
    words = _words(message)
    names = set(tool_names)
    scored = [(shared, -i, e) for i, e in enumerate(examples())
              if e.tool in names and (shared := len(words & _words(e.ask)))]
    return [e for *_, e in sorted(scored, key=lambda s: s[:2])[-count:]] if count > 0 else []
