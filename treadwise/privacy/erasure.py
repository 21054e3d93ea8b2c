"""Erasure and access: what one conversation holds, erased or told, on the customer's word.

A conversation holds its memory (the thread's checkpoints), the leads recorded from it or for
addresses the customer gave in it as their own, and the questions recorded from it.
`erase_conversation(thread_id, store=..., memory=...)` erases all of that and returns an
`ErasureReport` saying what went; the chat's "Forget me" button, the `delete_customer_data` tool
and the agent's backstop all come here. An address the visitor never gave in this
conversation is not erased on their word (staff use `python -m treadwise leads delete`).
SQLite files are written with `secure_delete` and their write-ahead logs truncated after an
erasure, so the bytes are gone too; PostgreSQL's rows are deleted and vacuuming is the
operator's (docs/privacy.md). Other parts of the product hook in with `on_erasure` (a
conversation's resume links are revoked that way).
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from langchain_core.messages import AnyMessage, HumanMessage

from treadwise.conversation import stage_of
from treadwise.privacy import consent

if TYPE_CHECKING:
    from treadwise.storage.leads import Erased, LeadStore

log = logging.getLogger(__name__)

ErasureHook = Callable[[str], None]
ERASURE_HOOKS: list[ErasureHook] = []
on_erasure = ERASURE_HOOKS.append  # called with the thread id after each erasure


@dataclass(frozen=True)
class ErasureReport:
    """What one erasure deleted: leads (email, message), questions, and the conversation's
    memory (how many of the customer's messages it held)."""

    leads: list[dict] = field(default_factory=list)
    questions: int = 0
    messages: int = 0

    @property
    def anything(self) -> bool:
        return bool(self.leads or self.questions or self.messages)

    def describe(self) -> str:
        """"1 contact request (ana@fleetco.com: fleet pricing), 1 question and this
        conversation's 3 messages"."""
        parts = []
        if self.leads:
            shown = "; ".join(f"{row['email']}: {row['message'][:60]}" for row in self.leads)
            parts.append(f"{_count(len(self.leads), 'contact request')} ({shown})")
        if self.questions:
            parts.append(_count(self.questions, "question"))
        if self.messages:
            parts.append(f"this conversation's {_count(self.messages, 'message')}")
        if not parts:
            return "nothing"
        return parts[0] if len(parts) == 1 else ", ".join(parts[:-1]) + " and " + parts[-1]


def _count(n: int, what: str) -> str:
    return f"{n} {what}" if n == 1 else f"{n} {what}s"


def customer_messages(messages: Sequence[AnyMessage]) -> list[str]:
    """The customer's own messages of a conversation (a strategy's stage material is not)."""
    return [m.text for m in messages if isinstance(m, HumanMessage) and not stage_of(m)]


def given_addresses(messages: Sequence[AnyMessage]) -> list[str]:
    """The addresses the customer gave in the conversation as their own, each once. One typed
    in a request to erase or withdraw is not given: an address is not erased on a word."""
    found: list[str] = []
    for text in customer_messages(messages):
        if consent.refuses(text) or consent.withdraws(text) or consent.someone_else(text):
            continue
        found += [a for a in consent.own_addresses(text) if a not in found]
    return found


def remembered(memory: Any, thread_id: str) -> list[AnyMessage]:
    """The messages memory holds for a thread (none when it holds nothing or is unreadable)."""
    if memory is None:
        return []
    try:
        head = memory.get_tuple({"configurable": {"thread_id": thread_id}})
    except Exception:
        log.warning("could not read the memory of a conversation to erase", exc_info=True)
        return []
    return list(head.checkpoint["channel_values"].get("messages", [])) if head else []


def erase_records(thread_id: str, store: LeadStore, addresses: Sequence[str]) -> Erased:
    """Delete the leads and questions recorded from a conversation or for the addresses the
    customer gave in it, and make the deletion final on disk."""
    from treadwise.storage.leads import Erased

    erased = store.forget_thread(thread_id)
    leads, questions = list(erased.leads), erased.feedback
    for address in addresses:
        more = store.delete_email(address)
        leads += more.leads
        questions += more.feedback
    store.wipe()
    return Erased(leads, questions)


def erase_memory(thread_id: str, memory: Any) -> int:
    """Delete a conversation's memory (every checkpoint of it) for good; how many of the
    customer's messages it held."""
    from treadwise.storage.memory import wipe_memory

    held = len(customer_messages(remembered(memory, thread_id)))
    memory.delete_thread(thread_id)
    wipe_memory(memory)
    return held


def after_erasure(thread_id: str) -> None:
    """Tell every hook that a conversation was erased; a failing hook is logged, not raised."""
    for hook in ERASURE_HOOKS:
        try:
            hook(thread_id)
        except Exception:
            log.warning("an erasure hook failed", exc_info=True)


def erase_conversation(thread_id: str, *, store: LeadStore, memory: Any) -> ErasureReport:
    """Erase everything one conversation holds: its memory (checkpoints included), the leads
    recorded from it or for addresses given in it, its questions; then run the hooks."""
    addresses = given_addresses(remembered(memory, thread_id))
    erased = erase_records(thread_id, store, addresses)
    messages = erase_memory(thread_id, memory) if memory is not None else 0
    after_erasure(thread_id)
    return ErasureReport(erased.leads, erased.feedback, messages)


@dataclass(frozen=True)
class Holdings:
    """What one conversation holds about the customer, for "What do you have about me?"."""

    addresses: list[str]
    leads: list[dict]
    questions: int
    messages: int

    def describe(self) -> str:
        """What the customer reads: "From this conversation we hold: the chat itself (2
        of your messages); the e-mail address you gave: ...; ... Nothing else."."""
        if not (self.addresses or self.leads or self.questions or self.messages):
            return "This conversation holds nothing about you."
        parts = [f"the chat itself ({_count(self.messages, 'message')} of yours)"]
        if self.addresses:
            parts.append("the e-mail address you gave: " + ", ".join(self.addresses))
        if self.leads:
            shown = "; ".join(f"{row['email']} about {row['message'][:60]}"
                              for row in self.leads)
            parts.append(f"{_count(len(self.leads), 'contact request')} ({shown})")
        if self.questions:
            parts.append(f"{_count(self.questions, 'question')} passed on to our team")
        if not (self.addresses or self.leads or self.questions):
            parts.append("no e-mail address, contact request or question")
        return "From this conversation we hold: " + "; ".join(parts) + ". Nothing else."


def holdings(thread_id: str, *, store: LeadStore, memory: Any) -> Holdings:
    """What this conversation holds, read from memory and the store (nothing is changed)."""
    messages = remembered(memory, thread_id)
    held = store.held_for_thread(thread_id)
    return Holdings(given_addresses(messages), held.leads, held.feedback,
                    len(customer_messages(messages)))
