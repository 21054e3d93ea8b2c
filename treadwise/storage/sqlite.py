"""SQLite store for customer leads and unanswered questions (one short connection per call)."""

from __future__ import annotations

import hashlib
import os
import re
import sqlite3
from collections.abc import Callable, Iterator
from contextlib import closing, contextmanager
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

from treadwise.emails import ADDRESS_RE

DB_NAME = "leads.db"
BUSY_TIMEOUT_S = 30.0  # a busy writer waits rather than losing a lead on a loaded machine
MAX_EMAIL = 254
MAX_NAME = 100
MAX_MESSAGE = 2000
MAX_QUESTION = 2000

_CONTROL = re.compile(r"[\x00-\x1f\x7f]")
_CONTROL_BUT_LINES = re.compile(r"[\x00-\x08\x0b\x0c\x0e-\x1f\x7f]")

_SCHEMA = """
CREATE TABLE IF NOT EXISTS leads (
    id INTEGER PRIMARY KEY,
    created_at TEXT NOT NULL,
    email TEXT NOT NULL,
    email_key TEXT NOT NULL,
    name TEXT NOT NULL,
    message TEXT NOT NULL,
    message_key TEXT NOT NULL
);
CREATE UNIQUE INDEX IF NOT EXISTS leads_once ON leads (email_key, message_key);
CREATE TABLE IF NOT EXISTS feedback (
    id INTEGER PRIMARY KEY,
    created_at TEXT NOT NULL,
    question TEXT NOT NULL
);
"""


class InvalidLead(ValueError):
    """An e-mail, name, message or question that cannot be stored; the message says why."""


class StoreUnavailable(RuntimeError):
    """The data store cannot be written (read-only, full, busy); the message says which."""


@dataclass(frozen=True)
class LeadResult:
    stored: bool
    duplicate: bool
    id: int


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


def _validate_text(value: str, field: str, limit: int, *, required: bool, lines: bool) -> str:
    value = value.strip()
    if required and not value:
        raise InvalidLead(f"the {field} is empty")
    if len(value) > limit:
        raise InvalidLead(f"the {field} is {len(value)} characters long; the limit is {limit}")
    if (_CONTROL_BUT_LINES if lines else _CONTROL).search(value):
        what = "control characters" if lines else "line breaks or control characters"
        raise InvalidLead(f"the {field} must not contain {what}")
    return value


def _same_message_key(message: str) -> str:
    # Case, spacing and a closing full stop do not make a new request out of a repeated one.
    text = " ".join(message.split()).casefold().rstrip(".!? ")
    return hashlib.sha256(text.encode()).hexdigest()


def _unavailable(exc: BaseException, data_dir: Path) -> StoreUnavailable:
    text = str(exc).lower()
    errno = getattr(exc, "errno", None)
    if (isinstance(exc, PermissionError) or errno == 30 or "readonly" in text
            or ("unable to open" in text and not os.access(data_dir, os.W_OK))):
        reason = "the data store is read-only"
    elif "is full" in text or errno in (27, 28, 122):
        reason = "the data store is full"
    elif "disk i/o" in text:
        reason = "the data store could not write to its disk (it may be full)"
    elif "locked" in text or "busy" in text:
        reason = "the data store is busy"
    else:
        # strerror, not str(exc): the path of the data dir is no business of a chat user.
        reason = f"the data store is unavailable ({getattr(exc, 'strerror', None) or exc})"
    return StoreUnavailable(reason)


class Store:
    """Leads and feedback in `data_dir/leads.db`; every call opens, commits and closes."""

    def __init__(self, data_dir: Path, clock: Callable[[], datetime] | None = None):
        self.data_dir = Path(data_dir)
        self.path = self.data_dir / DB_NAME
        self._clock = clock or (lambda: datetime.now(UTC))
        self._ready = False

    @contextmanager
    def _connect(self, *, write: bool) -> Iterator[sqlite3.Connection]:
        try:
            if not self._ready:
                self._create()
            with closing(sqlite3.connect(self.path, timeout=BUSY_TIMEOUT_S,
                                         isolation_level=None)) as db:
                db.execute(f"PRAGMA busy_timeout = {int(BUSY_TIMEOUT_S * 1000)}")
                db.execute("PRAGMA synchronous = FULL")
                db.execute("BEGIN IMMEDIATE" if write else "BEGIN")
                try:
                    yield db
                except BaseException:
                    db.rollback()
                    raise
                db.execute("COMMIT")
        except (sqlite3.OperationalError, sqlite3.DatabaseError, OSError) as exc:
            raise _unavailable(exc, self.data_dir) from exc

    def _create(self) -> None:
        self.data_dir.mkdir(parents=True, exist_ok=True)
        with closing(sqlite3.connect(self.path, timeout=BUSY_TIMEOUT_S,
                                     isolation_level=None)) as db:
            db.execute(f"PRAGMA busy_timeout = {int(BUSY_TIMEOUT_S * 1000)}")
            # WAL lets readers run beside the single writer; the setting persists in the file.
            db.execute("PRAGMA journal_mode = WAL")
            db.executescript(_SCHEMA)
        self._ready = True

    def add_lead(self, email: str, name: str, message: str) -> LeadResult:
        """Store a customer's interest once per (e-mail, message); InvalidLead says why not."""
        email = validate_email(email)
        name = _validate_text(name, "name", MAX_NAME, required=False, lines=False)
        message = _validate_text(message, "message", MAX_MESSAGE, required=True, lines=True)
        keys = (email.casefold(), _same_message_key(message))
        with self._connect(write=True) as db:
            row = db.execute(
                "INSERT INTO leads (created_at, email, email_key, name, message, message_key)"
                " VALUES (?, ?, ?, ?, ?, ?) ON CONFLICT DO NOTHING RETURNING id",
                (self._now(), email, keys[0], name, message, keys[1]),
            ).fetchone()
            if row is not None:
                return LeadResult(stored=True, duplicate=False, id=row[0])
            (existing,) = db.execute(
                "SELECT id FROM leads WHERE email_key = ? AND message_key = ?", keys
            ).fetchone()
        return LeadResult(stored=False, duplicate=True, id=existing)

    def replace_lead(self, old_email: str, email: str, name: str, message: str) -> LeadResult:
        """Correct the address of a stored request: the lead (old_email, message) moves to
        `email` instead of a second lead being added; without that lead it is added anew."""
        email = validate_email(email)
        name = _validate_text(name, "name", MAX_NAME, required=False, lines=False)
        message = _validate_text(message, "message", MAX_MESSAGE, required=True, lines=True)
        message_key = _same_message_key(message)
        with self._connect(write=True) as db:
            old = db.execute("SELECT id FROM leads WHERE email_key = ? AND message_key = ?",
                             (old_email.strip().casefold(), message_key)).fetchone()
            taken = db.execute("SELECT id FROM leads WHERE email_key = ? AND message_key = ?",
                               (email.casefold(), message_key)).fetchone()
            if old is not None and taken is None:
                db.execute("UPDATE leads SET email = ?, email_key = ?, name = ? WHERE id = ?",
                           (email, email.casefold(), name, old[0]))
                return LeadResult(stored=True, duplicate=False, id=old[0])
            if old is not None:
                # The corrected address already holds this request: keep one, drop the old.
                db.execute("DELETE FROM leads WHERE id = ?", (old[0],))
        if taken is not None:
            return LeadResult(stored=old is not None, duplicate=old is None, id=taken[0])
        return self.add_lead(email, name, message)

    def add_feedback(self, question: str) -> int:
        """Store an unanswered question for staff to follow up; returns its id."""
        question = _validate_text(question, "question", MAX_QUESTION, required=True, lines=True)
        with self._connect(write=True) as db:
            return db.execute(
                "INSERT INTO feedback (created_at, question) VALUES (?, ?) RETURNING id",
                (self._now(), question),
            ).fetchone()[0]

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

    def _rows(self, sql: str) -> list[dict]:
        with self._connect(write=False) as db:
            cursor = db.execute(sql)
            columns = [column[0] for column in cursor.description]
            return [dict(zip(columns, row, strict=True)) for row in cursor.fetchall()]

    def _count(self, table: str) -> int:
        with self._connect(write=False) as db:
            return db.execute(f"SELECT count(*) FROM {table}").fetchone()[0]

    def _now(self) -> str:
        return self._clock().isoformat(timespec="seconds")
