"""SQLite store for customer leads and unanswered questions (one short connection per call)."""

from __future__ import annotations

import os
import random
import sqlite3
import time
from collections.abc import Callable, Iterator
from contextlib import closing, contextmanager
from datetime import UTC, datetime
from pathlib import Path
from typing import TypeVar

from treadwise.storage.leads import (
    Erased,
    InvalidLead,
    LeadResult,
    ReadsRows,
    StoreUnavailable,
    correction,
    thread_key,
    validate_email,
    validate_lead,
    validate_question,
)
from treadwise.storage.migrations import PRODUCT

__all__ = ["InvalidLead", "LeadResult", "Store", "StoreUnavailable", "validate_email"]

T = TypeVar("T")

DB_NAME = "leads.db"
BUSY_TIMEOUT_S = 30.0  # a busy writer waits rather than losing a lead on a loaded machine


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


def retry_locked(action: Callable[[], T], wait_s: float = BUSY_TIMEOUT_S) -> T:
    """Run `action` again while SQLite says "database is locked". Processes that open a new
    file together race for the lock that switching it to WAL takes, and SQLite answers that
    race at once instead of through its busy handler, so the loser waits a moment and retries."""
    deadline = time.monotonic() + wait_s
    while True:
        try:
            return action()
        except sqlite3.OperationalError as exc:
            if "locked" not in str(exc).lower() or time.monotonic() > deadline:
                raise
        time.sleep(random.uniform(0.005, 0.05))


def truncate_wal(db: sqlite3.Connection, tries: int = 40) -> bool:
    """Checkpoint the write-ahead log into the database file and truncate it, waiting a
    little for readers of an older snapshot to finish; True when the log is empty."""
    for _ in range(tries):
        busy = retry_locked(lambda: db.execute("PRAGMA wal_checkpoint(TRUNCATE)").fetchone())
        if not busy or busy[0] == 0:
            return True
        time.sleep(0.05)
    return False


class Store(ReadsRows):
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
                # A deleted row's bytes are overwritten, not left in a free page.
                db.execute("PRAGMA secure_delete = ON")
                db.execute("BEGIN IMMEDIATE" if write else "BEGIN")
                try:
                    yield db
                    if write:
                        _check(db)
                except BaseException:
                    db.rollback()
                    raise
                db.execute("COMMIT")
        except (sqlite3.OperationalError, sqlite3.DatabaseError, OSError) as exc:
            raise _unavailable(exc, self.data_dir) from exc

    def _create(self) -> None:
        self.data_dir.mkdir(parents=True, exist_ok=True)
        retry_locked(self._create_once)
        self._ready = True

    def _create_once(self) -> None:
        with closing(sqlite3.connect(self.path, timeout=BUSY_TIMEOUT_S,
                                     isolation_level=None)) as db:
            db.execute(f"PRAGMA busy_timeout = {int(BUSY_TIMEOUT_S * 1000)}")
            # WAL lets readers run beside the single writer; the setting persists in the file.
            if db.execute("PRAGMA journal_mode").fetchone()[0] != "wal":
                db.execute("PRAGMA journal_mode = WAL")
            PRODUCT.migrate_sqlite(db)

    def add_lead(self, email: str, name: str, message: str,
                 thread: str | None = None) -> LeadResult:
        """Store a customer's interest once per (e-mail, message); InvalidLead says why not."""
        lead = validate_lead(email, name, message)
        keys = lead.keys
        with self._connect(write=True) as db:
            row = db.execute(
                "INSERT INTO leads (created_at, email, email_key, name, message, message_key)"
                " VALUES (?, ?, ?, ?, ?, ?) ON CONFLICT DO NOTHING RETURNING id",
                (self._now(), lead.email, keys[0], lead.name, lead.message, keys[1]),
            ).fetchone()
            inserted = row is not None
            if row is None:
                row = db.execute("SELECT id FROM leads WHERE email_key = ? AND message_key = ?",
                                 keys).fetchone()
            linked = _link(db, row[0], thread)
        return LeadResult(stored=inserted, duplicate=not inserted, id=row[0],
                          asked_before=linked is False)

    def replace_lead(self, old_email: str, email: str, name: str, message: str,
                     thread: str | None = None) -> LeadResult:
        """Correct the address of a stored request: the lead (old_email, message) moves to
        `email` instead of a second lead being added; without that lead it is added anew."""
        lead = validate_lead(email, name, message)
        email_key, message_key = lead.keys
        find = "SELECT id FROM leads WHERE email_key = ? AND message_key = ?"
        with self._connect(write=True) as db:
            old = db.execute(find, (old_email.strip().casefold(), message_key)).fetchone()
            taken = db.execute(find, (email_key, message_key)).fetchone()
            fix = correction(old and old[0], taken and taken[0])
            if fix.move is not None:
                db.execute("UPDATE leads SET email = ?, email_key = ?, name = ? WHERE id = ?",
                           (lead.email, email_key, lead.name, fix.move))
            if fix.drop is not None:
                _delete_leads(db, [fix.drop])
            if fix.result is not None:
                _link(db, fix.result.id, thread)
        return fix.result or self.add_lead(lead.email, lead.name, lead.message, thread)

    def add_feedback(self, question: str, thread: str | None = None) -> int:
        """Store an unanswered question for staff to follow up; returns its id."""
        question = validate_question(question)
        with self._connect(write=True) as db:
            return db.execute(
                "INSERT INTO feedback (created_at, question, thread_key) VALUES (?, ?, ?)"
                " RETURNING id", (self._now(), question, thread_key(thread)),
            ).fetchone()[0]

    def forget_thread(self, thread: str) -> Erased:
        """Delete the leads and questions one conversation gave; say what went."""
        key = thread_key(thread)
        with self._connect(write=True) as db:
            ids = [r[0] for r in db.execute(
                "SELECT lead_id FROM lead_requests WHERE thread_key = ?", (key,))]
            leads = _delete_leads(db, ids)
            gone = db.execute("DELETE FROM feedback WHERE thread_key = ?", (key,)).rowcount
        return Erased(leads, gone)

    def held_for_thread(self, thread: str) -> Erased:
        """What one conversation gave (its leads and questions), deleting nothing."""
        key = thread_key(thread)
        with self._connect(write=False) as db:
            leads = [{"email": r[0], "message": r[1]} for r in db.execute(
                "SELECT l.email, l.message FROM leads l JOIN lead_requests r ON r.lead_id = l.id"
                " WHERE r.thread_key = ? ORDER BY l.id", (key,))]
            asked = db.execute("SELECT count(*) FROM feedback WHERE thread_key = ?",
                               (key,)).fetchone()[0]
        return Erased(leads, asked)

    def wipe(self) -> None:
        """Make deletions final on disk: the write-ahead log is checkpointed into the file
        (where secure_delete zeroed what was deleted) and truncated."""
        try:
            with closing(sqlite3.connect(self.path, timeout=BUSY_TIMEOUT_S)) as db:
                db.execute("PRAGMA secure_delete = ON")
                truncate_wal(db)
        except (sqlite3.OperationalError, sqlite3.DatabaseError, OSError) as exc:
            raise _unavailable(exc, self.data_dir) from exc

    def delete_email(self, email: str) -> Erased:
        """Delete every lead of an address, and the questions of the conversations that
        gave them (the operator's `leads delete --email`)."""
        with self._connect(write=True) as db:
            ids = [r[0] for r in db.execute("SELECT id FROM leads WHERE email_key = ?",
                                            (email.strip().casefold(),))]
            threads = _threads_of(db, ids)
            leads = _delete_leads(db, ids)
            gone = sum(db.execute("DELETE FROM feedback WHERE thread_key = ?", (t,)).rowcount
                       for t in threads)
        return Erased(leads, gone)

    def purge_before(self, cutoff: datetime) -> Erased:
        """Delete leads and questions stored before `cutoff` (the retention setting)."""
        when = cutoff.astimezone(UTC).isoformat(timespec="seconds")
        with self._connect(write=True) as db:
            ids = [r[0] for r in db.execute("SELECT id FROM leads WHERE created_at < ?",
                                            (when,))]
            leads = _delete_leads(db, ids)
            gone = db.execute("DELETE FROM feedback WHERE created_at < ?", (when,)).rowcount
        return Erased(leads, gone)

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


def _check(db: sqlite3.Connection) -> None:
    """A write is kept only if the file still reads back whole: a damaged file can take a
    new row and then fail every read, and the customer would be told "saved" for nothing."""
    if db.execute("PRAGMA quick_check(1)").fetchone()[0] != "ok":
        raise StoreUnavailable("the data store is damaged (it failed its integrity check), "
                               "so nothing was saved")


def _link(db: sqlite3.Connection, lead_id: int, thread: str | None) -> bool | None:
    """Remember that `thread` asked for the lead: True when new, False when it had already,
    None without a thread."""
    if (key := thread_key(thread)) is None:
        return None
    return db.execute("INSERT INTO lead_requests (lead_id, thread_key) VALUES (?, ?)"
                      " ON CONFLICT DO NOTHING RETURNING lead_id", (lead_id, key)
                      ).fetchone() is not None


def _threads_of(db: sqlite3.Connection, ids: list[int]) -> list[str]:
    return sorted({r[0] for i in ids for r in db.execute(
        "SELECT thread_key FROM lead_requests WHERE lead_id = ?", (i,))})


def _delete_leads(db: sqlite3.Connection, ids: list[int]) -> list[dict]:
    gone = []
    for lead_id in ids:
        row = db.execute("DELETE FROM leads WHERE id = ? RETURNING email, message",
                         (lead_id,)).fetchone()
        db.execute("DELETE FROM lead_requests WHERE lead_id = ?", (lead_id,))
        if row:
            gone.append({"email": row[0], "message": row[1]})
    return gone
