"""Redacting the Markdown export after every turn of a long conversation: the whole text each
time (how exports were redacted before, the baseline) vs a turn at a time with the unchanged
turns remembered (treadwise.privacy.redaction.Redactions, what export_files does), same run."""

from __future__ import annotations

import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from tests.support.webapp import mixed_message
from treadwise.privacy.redaction import redact
from treadwise.web.chat_export import _joined, markdown_parts
from treadwise.web.session import ChatSession, Turn

TURNS = (30, 100)


def conversation_seconds(turns: int, whole: bool) -> float:
    """CPU seconds redacting the export after each of `turns` turns."""
    session, spent = ChatSession(), 0.0
    for number in range(turns):
        text = mixed_message(1, number, "bench")
        session.turns.append(Turn(user=text, persona="friendly", persona_name="Friendly Advisor",
                                  spec="offline", model="offline", temperature=0.0,
                                  status="done", answer=f"You asked: {text}. " * 3))
        parts = markdown_parts(session)
        started = time.process_time()
        if whole:
            redact(_joined(parts))
        else:
            _joined(session.redactions.redact_all(parts))
        spent += time.process_time() - started
    return spent


def main() -> None:
    redact("warm up the detectors 4111 1111 1111 1111")
    for turns in TURNS:
        before, after = conversation_seconds(turns, True), conversation_seconds(turns, False)
        print(f"{turns} turns: whole text each export {before * 1000:.0f} ms, a turn at a time "
              f"{after * 1000:.0f} ms; ratio {after / before:.3f} (lower is better)")


if __name__ == "__main__":
    main()
