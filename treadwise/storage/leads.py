"""What every lead store shares: the interface, its errors, and the validation before a write."""

from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass
from datetime import datetime
from typing import Protocol

from treadwise.errors import redact
from treadwise.privacy.emails import ADDRESS_RE

MAX_EMAIL = 254
MAX_NAME = 100
MAX_MESSAGE = 2000
MAX_QUESTION = 2000

# Markup is stored as the text it shows, never as markup: scripts and styles go whole, tags go.
MARKUP_RE = re.compile(r"<(script|style)\b[^>]*>.*?(?:</\1\s*>|$)|<!--.*?(?:-->|$)"
                       r"|</?[A-Za-z][\w:-]*(?:\s[^<>]*)?/?>", re.IGNORECASE | re.DOTALL)
_CONTROL = re.compile(r"[\x00-\x1f\x7f]")
_CONTROL_BUT_LINES = re.compile(r"[\x00-\x08\x0b\x0c\x0e-\x1f\x7f]")


class InvalidLead(ValueError):
    """An e-mail, name, message or question that cannot be stored; the message says why."""


class StoreUnavailable(RuntimeError):
    """The data store cannot be written (read-only, full, busy); the message says which."""


@dataclass(frozen=True)
class LeadResult:
    stored: bool
    duplicate: bool
    id: int
    # The same conversation asked for this lead before. Only then may a reply say "already on
    # file": telling anyone else would reveal what the store holds for an address.
    asked_before: bool = False


@dataclass(frozen=True)
class Erased:
    """What an erasure or a retention purge deleted: the leads (email, message) and how many
    questions."""

    leads: list[dict]
    feedback: int

    def describe(self) -> str:
        """"1 contact request (ana@fleetco.com: fleet pricing) and 2 questions"."""
        parts = []
        if self.leads:
            shown = "; ".join(f"{row['email']}: {row['message'][:60]}" for row in self.leads)
            parts.append(f"{_count(len(self.leads), 'contact request')} ({shown})")
        if self.feedback:
            parts.append(_count(self.feedback, "question"))
        return " and ".join(parts) or "nothing"


def _count(n: int, what: str) -> str:
    return f"{n} {what}" if n == 1 else f"{n} {what}s"


def thread_key(thread: str | None) -> str | None:
    """How a conversation is named in the lead store: a hash, never the thread id itself
    (in public mode the id is what lets someone read the conversation)."""
    if not thread:
        return None
    return hashlib.sha256(f"treadwise-thread:{thread}".encode()).hexdigest()[:32]


@dataclass(frozen=True)
class Lead:
    """A lead that passed validation, with the keys that make a repeat the same lead."""

    email: str
    name: str
    message: str

    @property
    def keys(self) -> tuple[str, str]:
        return self.email.casefold(), same_message_key(self.message)


class LeadStore(Protocol):
    """Leads (exactly once per e-mail + message) and unanswered questions, oldest first; each
    remembers which conversations (`thread`) gave it, so a visitor can have theirs deleted."""

    def add_lead(self, email: str, name: str, message: str,
                 thread: str | None = None) -> LeadResult: ...
    def replace_lead(self, old_email: str, email: str, name: str, message: str,
                     thread: str | None = None) -> LeadResult: ...
    def add_feedback(self, question: str, thread: str | None = None) -> int: ...
    def forget_thread(self, thread: str) -> Erased: ...
    def held_for_thread(self, thread: str) -> Erased: ...
    def wipe(self) -> None: ...
    def delete_email(self, email: str) -> Erased: ...
    def purge_before(self, cutoff: datetime) -> Erased: ...
    def leads(self) -> list[dict]: ...
    def feedback(self) -> list[dict]: ...
    def lead_count(self) -> int: ...
    def feedback_count(self) -> int: ...


def validate_email(email: str) -> str:
    """The address stripped of surrounding spaces, or InvalidLead saying what is wrong."""
    email = email.strip()
    if not email:
        raise InvalidLead("an e-mail address is required")
    if len(email) > MAX_EMAIL:
        raise InvalidLead(f"the e-mail address is longer than {MAX_EMAIL} characters")
    if "\r" in email or "\n" in email:
        raise InvalidLead("the e-mail address must not contain line breaks")
    if any(char in email for char in ",;<>"):
        raise InvalidLead("give exactly one plain e-mail address (no commas, semicolons or <>)")
    if re.search(r"\s", email) or _CONTROL.search(email):
        raise InvalidLead("the e-mail address must not contain spaces or control characters")
    if not ADDRESS_RE.fullmatch(email):
        raise InvalidLead(f"{email!r} is not a valid e-mail address like name@example.com")
    return email


def validate_text(value: str, field: str, limit: int, *, required: bool, lines: bool) -> str:
    # A key, card number or password typed into a lead or question is never stored, and
    # neither is markup (a web page's <script> stays out of every export and viewer).
    value = re.sub(r"[ \t]+(?=[?.!,;:])|(?<=[ \t])[ \t]+", "",
                   MARKUP_RE.sub(" ", redact(value))).strip()
    if required and not value:
        raise InvalidLead(f"the {field} is empty")
    if len(value) > limit:
        raise InvalidLead(f"the {field} is {len(value)} characters long; the limit is {limit}")
    if (_CONTROL_BUT_LINES if lines else _CONTROL).search(value):
        what = "control characters" if lines else "line breaks or control characters"
        raise InvalidLead(f"the {field} must not contain {what}")
    return value


def validate_lead(email: str, name: str, message: str) -> Lead:
    """The lead as it will be stored, or InvalidLead saying which field is wrong and why."""
    return Lead(email=validate_email(email),
                name=validate_text(name, "name", MAX_NAME, required=False, lines=False),
                message=validate_text(message, "message", MAX_MESSAGE, required=True,
                                      lines=True))


def validate_question(question: str) -> str:
    return validate_text(question, "question", MAX_QUESTION, required=True, lines=True)


def same_message_key(message: str) -> str:
    # Case, spacing and a closing full stop do not make a new request out of a repeated one.
    text = " ".join(message.split()).casefold().rstrip(".!? ")
    return hashlib.sha256(text.encode()).hexdigest()


@dataclass(frozen=True)
class Correction:
    """What correcting a stored request's address does: move the lead to the new address,
    drop it (the new address already holds the request), or neither; `result` None means
    no lead holds the request yet and it is added anew."""

    move: int | None
    drop: int | None
    result: LeadResult | None


def correction(old: int | None, taken: int | None) -> Correction:
    """The correction given the ids of the lead at the old address and at the new one."""
    if old is not None and old == taken:
        return Correction(None, None, LeadResult(stored=False, duplicate=True, id=old))
    if old is not None and taken is None:
        return Correction(old, None, LeadResult(stored=True, duplicate=False, id=old))
    if taken is not None:
        return Correction(None, old, LeadResult(stored=old is not None, duplicate=old is None,
                                                id=taken))
    return Correction(None, None, None)


class ReadsRows:
    """The reading half every store shares, over its own `_rows(sql)` and `_count(table)`."""

    def _rows(self, sql: str) -> list[dict]:
        raise NotImplementedError

    def _count(self, table: str) -> int:
        raise NotImplementedError

    def leads(self) -> list[dict]:
        """Every lead, oldest first: id, created_at, email, name, message."""
        return self._rows("SELECT id, created_at, email, name, message FROM leads ORDER BY id")

    def feedback(self) -> list[dict]:
        """Every stored question, oldest first: id, created_at, question."""
        return self._rows("SELECT id, created_at, question FROM feedback ORDER BY id")

    def lead_count(self) -> int:
        return self._count("leads")

    def feedback_count(self) -> int:
        return self._count("feedback")
