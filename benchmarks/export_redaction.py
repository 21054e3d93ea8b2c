"""Redacting the exports after every turn of a long conversation, same run.

Markdown: the whole text each time (how exports were redacted before, the baseline) vs a turn
at a time with the unchanged turns remembered (treadwise.privacy.redaction.Redactions, what
export_files does). JSON: every string and key redacted with the environment's secrets read
for each (the baseline) vs read once for the tree (redact_tree(with_keys=True), what
export_files does)."""

from __future__ import annotations

import json
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from tests.support.webapp import mixed_message
from treadwise.privacy.redaction import redact, redact_tree
from treadwise.web.chat_export import _joined, conversation_json, markdown_parts
from treadwise.web.session import ChatSession, Turn

TURNS = (30, 100)


def growing(turns: int) -> Iterator[ChatSession]:
    """One conversation, yielded after each of its `turns` turns."""
    session = ChatSession()
    for number in range(turns):
        text = mixed_message(1, number, "bench")
        session.turns.append(Turn(user=text, persona="friendly", persona_name="Friendly Advisor",
                                  spec="offline", model="offline", temperature=0.0,
                                  status="done", answer=f"You asked: {text}. " * 3))
        yield session


def conversation_seconds(turns: int, whole: bool) -> float:
    """CPU seconds redacting the export after each of `turns` turns."""
    spent = 0.0
    for session in growing(turns):
        parts = markdown_parts(session)
        started = time.process_time()
        if whole:
            redact(_joined(parts))
        else:
            _joined(session.redactions.redact_all(parts))
        spent += time.process_time() - started
    return spent


def each_string(value: Any) -> Any:
    """The JSON export's redaction before: redact() for every string and key on its own."""
    if isinstance(value, str):
        return redact(value)
    if isinstance(value, list):
        return [each_string(item) for item in value]
    if isinstance(value, dict):
        return {redact(key): each_string(item) for key, item in value.items()}
    return value


def json_seconds(turns: int, once: bool) -> float:
    """CPU seconds redacting the JSON export after each of `turns` turns."""
    spent = 0.0
    for session in growing(turns):
        tree = json.loads(json.dumps(conversation_json(session), default=str))
        started = time.process_time()
        done = redact_tree(tree, with_keys=True) if once else each_string(tree)
        spent += time.process_time() - started
        assert done
    return spent


def main() -> None:
    redact("warm up the detectors 4111 1111 1111 1111")
    for turns in TURNS:
        before, after = conversation_seconds(turns, True), conversation_seconds(turns, False)
        print(f"{turns} turns: whole text each export {before * 1000:.0f} ms, a turn at a time "
              f"{after * 1000:.0f} ms; ratio {after / before:.3f} (lower is better)")
    for turns in TURNS:
        before, after = json_seconds(turns, False), json_seconds(turns, True)
        print(f"{turns} turns, JSON: secrets read per string {before * 1000:.0f} ms, once per "
              f"export {after * 1000:.0f} ms; ratio {after / before:.2f} (lower is better)")


if __name__ == "__main__":
    main()
