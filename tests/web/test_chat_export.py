"""The Markdown export is redacted a turn at a time, remembering what did not change
(treadwise/web/chat_export.py, treadwise/privacy/redaction.Redactions)."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.privacy.corpus_runner import load_corpus
from treadwise.privacy import redaction
from treadwise.web.chat_export import _joined, export_files, markdown_parts
from treadwise.web.session import ChatSession, Turn


def said(session: ChatSession, text: str, answer: str | None = None) -> None:
    session.turns.append(Turn(user=text, persona="friendly", persona_name="Friendly Advisor",
                              spec="offline", model="offline", temperature=0.0, status="done",
                              answer=answer if answer is not None else f"You said: {text}"))


def markdown(session: ChatSession, cache: Path) -> str:
    return Path(export_files(session, str(cache))[0]).read_text(encoding="utf-8")


def test_a_turn_at_a_time_redacts_the_corpus_as_the_whole_text_at_once() -> None:
    """Every message of the privacy corpus (secrets, ordinary, consent, erasures), typed and
    echoed in the reply: the parts redacted one by one give the text redacting it whole gives."""
    corpus = load_corpus()
    session = ChatSession()
    for group in corpus.values():
        for item in group:
            texts = [item] if isinstance(item, str) else item.get("turns", [item.get("say")])
            for text in texts:
                said(session, text)
    assert len(session.turns) > 300
    parts = markdown_parts(session)
    assert _joined(session.redactions.redact_all(parts)) == redaction.redact(_joined(parts))


def test_the_next_export_reads_only_the_new_turn(tmp_path: Path,
                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    session = ChatSession()
    for number in range(10):
        said(session, f"what is {number} + {number}?", f"It is {2 * number}.")
    markdown(session, tmp_path)
    read: list[str] = []
    real = redaction._redact
    monkeypatch.setattr(redaction, "_redact",
                        lambda text, *rest: read.append(text) or real(text, *rest))
    said(session, "my card is 4111 1111 1111 1111, book me in")
    written = markdown(session, tmp_path)
    parts = [text for text in read if text.startswith(("## Turn", "# TreadWise"))]
    # The new turn, and the heading when the minute of its time has changed; none of the ten.
    assert [p for p in parts if p.startswith("## Turn 11")] == parts[-1:] and len(parts) <= 2, \
        parts
    assert "4111" not in written and "## Turn 10" in written and "It is 18." in written


def test_erasing_the_conversation_forgets_what_its_exports_remembered(tmp_path: Path) -> None:
    session = ChatSession()
    said(session, "my password is hunter2")
    assert "hunter2" not in markdown(session, tmp_path)
    assert len(session.redactions) == 2  # the heading and the turn, as typed
    session.reset()  # what "Forget me" and a new chat do
    assert len(session.redactions) == 0


def test_a_secret_variable_set_later_is_redacted_from_remembered_turns(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    session = ChatSession()
    # In the reply only: the message is redacted anew for each export, the turn's part is not.
    said(session, "what is the shop word?", "It is treadwisebluefalcon.")
    assert "treadwisebluefalcon" in markdown(session, tmp_path)
    monkeypatch.setenv("TREADWISE_SHOP_TOKEN", "treadwisebluefalcon")
    said(session, "thanks")
    assert "treadwisebluefalcon" not in markdown(session, tmp_path)
