"""Reopening a conversation on any replica: the page's turns rebuilt from the agent's memory,
for the holder of the conversation's signed link only."""

from __future__ import annotations

import hashlib
import hmac
import os
import re
import secrets
import threading
from collections.abc import Sequence
from pathlib import Path

from langchain_core.messages import AIMessage, AnyMessage, HumanMessage, ToolMessage

from treadwise.agent.echo_guard import private_answer
from treadwise.errors import redact
from treadwise.settings import Settings
from treadwise.web.session import Turn

# What new_session() makes: 128 random bits. Only such ids can be reopened from the page, so a
# guessable thread name given to the command line (--thread T1) is never reachable from a browser.
THREAD_ID_RE = re.compile(r"[0-9a-f]{32}")
SIGNATURE_CHARS = 32  # 128 bits of HMAC-SHA256
LINK_RE = re.compile(rf"([0-9a-f]{{32}})\.([0-9a-f]{{{SIGNATURE_CHARS}}})")
SECRET_FILE = "secret.key"
RESTORED_LABEL = "restored from memory"


def valid_thread_id(value: object) -> str | None:
    value = value.strip().lower() if isinstance(value, str) else ""
    return value if THREAD_ID_RE.fullmatch(value) else None


class ThreadLinks:
    """A conversation reopens from its link, `<thread id>.<signature>`: the signature is an
    HMAC of the id under the server's secret, so only the visitor the link was given to (in
    their export) can reopen it; ids seen elsewhere (a log, a screen) are not enough. A local
    page, whose one user owns every thread, also takes a bare id.

    The secret is TREADWISE_SECRET_KEY, or one generated into the data dir on first use; replicas
    sharing a database must share TREADWISE_SECRET_KEY for a link to open on each of them.
    """

    def __init__(self, settings: Settings):
        self.settings = settings
        self._secret: bytes | None = None
        self._lock = threading.Lock()

    def link(self, thread_id: str) -> str:
        return f"{thread_id}.{self._sign(thread_id)}"

    def thread_of(self, link: object) -> str | None:
        """The thread a link opens, or None when it is not a link to one of them."""
        text = link.strip().lower() if isinstance(link, str) else ""
        if match := LINK_RE.fullmatch(text):
            thread, signature = match.groups()
            return thread if hmac.compare_digest(signature, self._sign(thread)) else None
        return None if self.settings.public else valid_thread_id(text)

    def _sign(self, thread_id: str) -> str:
        digest = hmac.new(self._key(), f"thread:{thread_id}".encode(), hashlib.sha256)
        return digest.hexdigest()[:SIGNATURE_CHARS]

    def _key(self) -> bytes:
        with self._lock:
            if self._secret is None:
                configured = self.settings.secret_key
                self._secret = (configured.encode() if configured
                                else stored_secret(self.settings.ensure_data_dir()))
            return self._secret


def stored_secret(folder: Path) -> bytes:
    """The secret kept in `folder`, made on first use. Processes sharing the folder agree:
    the file appears whole (linked into place) or not at all, and the first one wins."""
    path = folder / SECRET_FILE
    if not path.exists():
        draft = folder / f".{SECRET_FILE}.{os.getpid()}.{secrets.token_hex(4)}"
        descriptor = os.open(draft, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        with os.fdopen(descriptor, "w") as handle:
            handle.write(secrets.token_hex(32))
        try:
            os.link(draft, path)
        except FileExistsError:
            pass
        finally:
            draft.unlink()
    return path.read_text().strip().encode()


def restored_turns(messages: Sequence[AnyMessage]) -> list[Turn]:
    """One finished Turn per user message in memory: its tool steps and the last answer."""
    turns: list[Turn] = []
    for message in messages:
        if isinstance(message, HumanMessage):
            turns.append(Turn(user=message.text, persona="", persona_name="Earlier reply",
                              spec="", model=RESTORED_LABEL, temperature=0.0, status="done"))
        elif turns and isinstance(message, AIMessage):
            _add_calls(turns[-1], message)
        elif turns and isinstance(message, ToolMessage):
            _add_result(turns[-1], message)
    return turns


def _add_calls(turn: Turn, message: AIMessage) -> None:
    from treadwise.agent import ToolStep

    for call in message.tool_calls:
        turn.steps.append(ToolStep(id=call.get("id") or "", name=call.get("name") or "?",
                                   args=dict(call.get("args") or {})))
    if text := message.text.strip():
        # Memory keeps what the model wrote; the page shows what the customer was shown.
        turn.answer = private_answer(redact(text))


def _add_result(turn: Turn, message: ToolMessage) -> None:
    from treadwise.agent.agent import record_tool_result

    record_tool_result(turn.steps, message)
