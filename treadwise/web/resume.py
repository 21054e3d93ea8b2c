"""Reopening a conversation on any replica: the page's turns rebuilt from the agent's memory,
for the holder of the conversation's signed link only (and, with a login, its owner only)."""

from __future__ import annotations

import re
import time
from collections.abc import Callable, Sequence

from langchain_core.messages import AIMessage, AnyMessage, HumanMessage, ToolMessage

from treadwise.agent.echo_guard import private_answer
from treadwise.errors import redact
from treadwise.settings import Settings
from treadwise.storage.link_store import LinkStore, open_link_store
from treadwise.web.server_secret import SECRET_FILE, ServerSecret, stored_secret
from treadwise.web.session import Turn

__all__ = ["SECRET_FILE", "ThreadLinks", "restored_turns", "stored_secret", "valid_thread_id"]
# What new_session() makes: 128 random bits. Only such ids can be reopened from the page, so a
# guessable thread name given to the command line (--thread T1) is never reachable from a browser.
THREAD_ID_RE = re.compile(r"[0-9a-f]{32}")
SIGNATURE_CHARS = 32  # 128 bits of HMAC-SHA256
# <thread id>.<expiry, Unix seconds>.<signature>, exactly: no other case, no padding.
LINK_RE = re.compile(rf"([0-9a-f]{{32}})\.([1-9][0-9]{{9,11}})\.([0-9a-f]{{{SIGNATURE_CHARS}}})")
RESTORED_LABEL = "restored from memory"


def valid_thread_id(value: object) -> str | None:
    return value if isinstance(value, str) and THREAD_ID_RE.fullmatch(value) else None


class ThreadLinks:
    """A conversation reopens from its link, `<thread id>.<expiry>.<signature>`: the signature
    is an HMAC of the id and expiry under the server's secret, so ids seen elsewhere (a log, a
    screen) are not enough, and a link stops working after TREADWISE_LINK_DAYS. The first
    signed-in user a link is made for owns the conversation: with a login, only they (or an
    admin) can open it; without one, the link is a password to it. Revoking (Forget me) ends
    every link of the conversation on every replica. A local page, whose one user owns every
    thread, also takes a bare id.
    """

    def __init__(self, settings: Settings, store: LinkStore | None = None,
                 clock: Callable[[], float] = time.time):
        self.settings = settings
        self.secret = ServerSecret(settings)
        self.store = store or open_link_store(settings.data_dir, settings.database_url)
        self.clock = clock

    def link(self, thread_id: str, user: str | None = None) -> str | None:
        """A fresh link to the thread, recorded as `user`'s (None: no login); None when the
        conversation's links were revoked or belong to someone else."""
        record = self.store.claim(thread_id, user or "")
        if record.revoked or (record.owner != (user or "") and not self._is_admin(user)):
            return None
        expires = int(self.clock() + self.settings.link_days * 86400)
        return f"{thread_id}.{expires}.{self._sign(thread_id, expires)}"

    def thread_of(self, link: object, user: str | None = None) -> str | None:
        """The thread a link opens for the signed-in `user` (None: no login), or None."""
        text = link if isinstance(link, str) else ""
        if match := LINK_RE.fullmatch(text):
            thread, expires, signature = match.groups()
            if not self.secret.verify("thread", f"{thread}:{expires}", signature) \
                    or int(expires) <= self.clock():
                return None
            return thread if self._may_open(thread, user) else None
        if self.settings.public or (thread := valid_thread_id(text)) is None:
            return None
        record = self.store.get(thread)  # a bare id may name a thread no link was made for
        if record is not None and (record.revoked or self.settings.auth and
                                   record.owner != (user or "") and not self._is_admin(user)):
            return None
        return thread

    def revoke(self, thread_id: str) -> None:
        """End every link to the thread, here and on every replica."""
        self.store.revoke(thread_id)

    def _may_open(self, thread: str, user: str | None) -> bool:
        record = self.store.get(thread)
        if record is None or record.revoked:
            return False
        if not self.settings.auth:
            return True
        return user is not None and (record.owner == user or self._is_admin(user))

    def _is_admin(self, user: str | None) -> bool:
        return user is not None and user in self.settings.admins

    def _sign(self, thread_id: str, expires: int) -> str:
        return self.secret.sign("thread", f"{thread_id}:{expires}", SIGNATURE_CHARS)


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
