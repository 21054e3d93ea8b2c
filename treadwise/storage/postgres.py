"""PostgreSQL store for leads, feedback and plots, over one connection pool per process."""

from __future__ import annotations

import logging
import os
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from datetime import UTC, datetime
from typing import Any, TypeAlias, cast
from urllib.parse import urlsplit

import psycopg
from psycopg.rows import DictRow, dict_row
from psycopg_pool import ConnectionPool, PoolTimeout

from treadwise.errors import redact
from treadwise.storage.leads import (
    Erased,
    Lead,
    LeadResult,
    ReadsRows,
    StoreUnavailable,
    correction,
    thread_key,
    validate_lead,
    validate_question,
)
from treadwise.storage.migrations import migrate

CONNECT_TIMEOUT_S = 5  # a dead or unroutable server is an error after this, never a hang
POOL_TIMEOUT_S = 10.0  # the longest a call waits for a free connection
POOL_MAX = 10  # the app runs 8 turns at once; memory takes one connection at a time
log = logging.getLogger(__name__)

# Every connection is made with connection_kwargs(), so its rows are dicts.
Pool: TypeAlias = "ConnectionPool[psycopg.Connection[DictRow]]"
_pools: dict[tuple[int, str], Pool] = {}
_pools_lock = threading.Lock()


def describe(url: str) -> str:
    """The URL as it may be shown: user, host, port and database; never the password."""
    parts = urlsplit(url)
    try:
        port = f":{parts.port}" if parts.port else ""
    except ValueError:  # a port that is not a number: say so rather than fail while reporting
        port = ":(invalid port)"
    user = f"{parts.username}@" if parts.username else ""
    return f"{parts.scheme}://{user}{parts.hostname or ''}{port}{parts.path}"


def unavailable(exc: BaseException) -> StoreUnavailable:
    """What a chat user may read about a database failure (the log gets the details)."""
    if isinstance(exc, PoolTimeout):
        reason = f"the database is busy or unreachable (no connection within {POOL_TIMEOUT_S:g} s)"
    elif isinstance(exc, psycopg.errors.DiskFull):
        reason = "the database is full"
    elif isinstance(exc, psycopg.errors.ReadOnlySqlTransaction):
        reason = "the database is read-only"
    elif isinstance(exc, psycopg.OperationalError | psycopg.InterfaceError):
        reason = "the database is unreachable"
    else:
        reason = f"the database refused the write ({type(exc).__name__})"
    return StoreUnavailable(reason)


def connection_kwargs() -> dict[str, Any]:
    # What LangGraph's PostgresSaver documents: autocommit, dict rows, statements prepared at
    # once (behind PgBouncer in transaction mode, use a version with prepared statement support).
    return {"autocommit": True, "prepare_threshold": 0, "row_factory": dict_row,
            "connect_timeout": CONNECT_TIMEOUT_S}


def open_pool(url: str, *, max_size: int = POOL_MAX) -> Pool:
    """A pool on `url` with the schema migrated, or StoreUnavailable within the timeouts."""
    try:
        # One plain connection first: a refused or failed login is reported at once, with its
        # reason, instead of as a pool timeout after retrying in the background.
        with psycopg.connect(url, **connection_kwargs()) as conn:
            applied = migrate(conn)
    except psycopg.Error as exc:
        log.warning("cannot use the database %s: %s", describe(url),
                    redact(str(exc)).strip().splitlines()[0] if str(exc) else type(exc).__name__)
        raise unavailable(exc) from exc
    if applied:
        log.info("database %s migrated: %s", describe(url), ", ".join(applied))
    pool = ConnectionPool(url, min_size=1, max_size=max_size, kwargs=connection_kwargs(),
                          timeout=POOL_TIMEOUT_S, check=ConnectionPool.check_connection,
                          name="treadwise", open=False)
    try:
        pool.open(wait=True, timeout=CONNECT_TIMEOUT_S)
    except PoolTimeout as exc:
        pool.close()
        raise unavailable(exc) from exc
    return cast(Pool, pool)


def shared_pool(url: str) -> Pool:
    """This process's pool for `url`, opened (and the schema migrated) on first use.

    Keyed by process id too: a forked child must open its own connections, never reuse the
    sockets of its parent's pool.
    """
    key = (os.getpid(), url)
    with _pools_lock:
        if key not in _pools:
            _pools[key] = open_pool(url)
        return _pools[key]


def close_pools() -> None:
    """Close every pool this process opened (tests, and a clean shutdown)."""
    with _pools_lock:
        pools = [pool for (pid, _), pool in _pools.items() if pid == os.getpid()]
        _pools.clear()
    for pool in pools:
        pool.close()


class PostgresStore(ReadsRows):
    """Leads and feedback in PostgreSQL, shared by every replica; same behaviour as SQLite's."""

    def __init__(self, pool: Pool, clock: Callable[[], datetime] | None = None):
        self.pool = pool
        self._clock = clock or (lambda: datetime.now(UTC))

    @classmethod
    def connect(cls, url: str, clock: Callable[[], datetime] | None = None) -> PostgresStore:
        return cls(shared_pool(url), clock)

    @contextmanager
    def _transaction(self) -> Iterator[psycopg.Connection[DictRow]]:
        try:
            with self.pool.connection() as conn, conn.transaction():
                yield conn
        except psycopg.Error as exc:
            log.warning("database call failed: %s", redact(str(exc)).strip()[:300])
            raise unavailable(exc) from exc

    def add_lead(self, email: str, name: str, message: str,
                 thread: str | None = None) -> LeadResult:
        """Store a customer's interest once per (e-mail, message), whichever replica asks."""
        lead = validate_lead(email, name, message)
        email_key, message_key = lead.keys
        with self._transaction() as conn:
            # Two replicas inserting the same key at once: the second waits for the first to
            # commit, then does nothing, and the SELECT (a new snapshot) finds the first's row.
            row = conn.execute(
                "INSERT INTO leads (created_at, email, email_key, name, message, message_key)"
                " VALUES (%s, %s, %s, %s, %s, %s) ON CONFLICT DO NOTHING RETURNING id",
                (self._clock(), lead.email, email_key, lead.name, lead.message, message_key),
            ).fetchone()
            inserted = row is not None
            if row is None:
                row = _one(conn.execute(
                    "SELECT id FROM leads WHERE email_key = %s AND message_key = %s",
                    (email_key, message_key)))
            linked = _link(conn, row["id"], thread)
        return LeadResult(stored=inserted, duplicate=not inserted, id=row["id"],
                          asked_before=linked is False)

    def replace_lead(self, old_email: str, email: str, name: str, message: str,
                     thread: str | None = None) -> LeadResult:
        """Correct the address of a stored request: the lead (old_email, message) moves to
        `email` instead of a second lead being added; without that lead it is added anew."""
        lead = validate_lead(email, name, message)
        try:
            return self._replace(old_email.strip().casefold(), lead, thread)
        except StoreUnavailable as exc:
            # Another replica stored the corrected lead between our look and our update: the
            # second look finds it and keeps one.
            if not isinstance(exc.__cause__, psycopg.errors.UniqueViolation):
                raise
            return self._replace(old_email.strip().casefold(), lead, thread)

    def _replace(self, old_key: str, lead: Lead, thread: str | None) -> LeadResult:
        email_key, message_key = lead.keys
        find = "SELECT id FROM leads WHERE email_key = %s AND message_key = %s FOR UPDATE"
        with self._transaction() as conn:
            old = conn.execute(find, (old_key, message_key)).fetchone()
            taken = conn.execute(find, (email_key, message_key)).fetchone()
            fix = correction(old["id"] if old else None, taken["id"] if taken else None)
            if fix.move is not None:
                conn.execute("UPDATE leads SET email = %s, email_key = %s, name = %s"
                             " WHERE id = %s", (lead.email, email_key, lead.name, fix.move))
            if fix.drop is not None:
                conn.execute("DELETE FROM leads WHERE id = %s", (fix.drop,))
            if fix.result is not None:
                _link(conn, fix.result.id, thread)
        return fix.result or self.add_lead(lead.email, lead.name, lead.message, thread)

    def add_feedback(self, question: str, thread: str | None = None) -> int:
        """Store an unanswered question for staff to follow up; returns its id."""
        question = validate_question(question)
        with self._transaction() as conn:
            return _one(conn.execute(
                "INSERT INTO feedback (created_at, question, thread_key) VALUES (%s, %s, %s)"
                " RETURNING id", (self._clock(), question, thread_key(thread))))["id"]

    def forget_thread(self, thread: str) -> Erased:
        """Delete the leads and questions one conversation gave; say what went."""
        key = thread_key(thread)
        with self._transaction() as conn:
            leads = conn.execute(
                "DELETE FROM leads WHERE id IN (SELECT lead_id FROM lead_requests"
                " WHERE thread_key = %s) RETURNING email, message", (key,)).fetchall()
            gone = conn.execute("DELETE FROM feedback WHERE thread_key = %s", (key,)).rowcount
        return Erased([dict(row) for row in leads], gone)

    def held_for_thread(self, thread: str) -> Erased:
        """What one conversation gave (its leads and questions), deleting nothing."""
        key = thread_key(thread)
        with self._transaction() as conn:
            leads = conn.execute(
                "SELECT l.email, l.message FROM leads l JOIN lead_requests r ON r.lead_id = l.id"
                " WHERE r.thread_key = %s ORDER BY l.id", (key,)).fetchall()
            asked = _one(conn.execute("SELECT count(*) AS n FROM feedback WHERE thread_key = %s",
                                      (key,)))["n"]
        return Erased([dict(row) for row in leads], asked)

    def wipe(self) -> None:
        """Deleted rows are gone from every query at once; their bytes leave the files when
        PostgreSQL vacuums them, which is the operator's to schedule (docs/privacy.md)."""

    def delete_email(self, email: str) -> Erased:
        """Delete every lead of an address, and the questions of the conversations that
        gave them (the operator's `leads delete --email`)."""
        with self._transaction() as conn:
            gone = conn.execute(
                "DELETE FROM feedback WHERE thread_key IN (SELECT r.thread_key FROM"
                " lead_requests r JOIN leads l ON l.id = r.lead_id WHERE l.email_key = %s)",
                (email.strip().casefold(),)).rowcount
            leads = conn.execute("DELETE FROM leads WHERE email_key = %s"
                                 " RETURNING email, message",
                                 (email.strip().casefold(),)).fetchall()
        return Erased([dict(row) for row in leads], gone)

    def purge_before(self, cutoff: datetime) -> Erased:
        """Delete leads and questions stored before `cutoff` (the retention setting)."""
        with self._transaction() as conn:
            leads = conn.execute("DELETE FROM leads WHERE created_at < %s"
                                 " RETURNING email, message", (cutoff,)).fetchall()
            gone = conn.execute("DELETE FROM feedback WHERE created_at < %s",
                                (cutoff,)).rowcount
        return Erased([dict(row) for row in leads], gone)

    def save_plot(self, name: str, png: bytes) -> None:
        with self._transaction() as conn:
            conn.execute("INSERT INTO plots (name, png) VALUES (%s, %s) ON CONFLICT DO NOTHING",
                         (name, png))

    def load_plot(self, name: str) -> bytes | None:
        with self._transaction() as conn:
            row = conn.execute("SELECT png FROM plots WHERE name = %s", (name,)).fetchone()
        return bytes(row["png"]) if row else None

    def _rows(self, sql: str) -> list[dict]:
        with self._transaction() as conn:
            rows = conn.execute(sql).fetchall()
        # The same text SQLite keeps, so an export reads the same whichever store wrote it.
        return [{**row, "created_at": row["created_at"].astimezone(UTC)
                 .isoformat(timespec="seconds")} for row in rows]

    def _count(self, table: str) -> int:
        with self._transaction() as conn:
            return _one(conn.execute(f"SELECT count(*) AS n FROM {table}"))["n"]


def _one(cursor: psycopg.Cursor[DictRow]) -> DictRow:
    """The row of a statement that returns one (RETURNING, count(*), a row just seen)."""
    row = cursor.fetchone()
    if row is None:  # another replica deleted it between our two statements
        raise StoreUnavailable("the record changed while it was being saved; please try again")
    return row


def _link(conn: psycopg.Connection[DictRow], lead_id: int, thread: str | None) -> bool | None:
    """Remember that `thread` asked for the lead: True when new, False when it had already,
    None without a thread."""
    if (key := thread_key(thread)) is None:
        return None
    return conn.execute("INSERT INTO lead_requests (lead_id, thread_key) VALUES (%s, %s)"
                        " ON CONFLICT DO NOTHING RETURNING lead_id", (lead_id, key)
                        ).fetchone() is not None
