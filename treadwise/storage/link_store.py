"""Conversation links' owners and revocations, shared by every replica (SQLite or PostgreSQL).

A row is (thread hash, owner, created, revoked): the thread id itself, which opens the
conversation, is never stored, and the owner is a signed-in user's name ("" without a login).
"""

from __future__ import annotations

import sqlite3
from collections.abc import Callable, Iterator
from contextlib import closing, contextmanager
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from treadwise.storage.leads import StoreUnavailable, thread_key

BUSY_TIMEOUT_S = 30.0


@dataclass(frozen=True)
class LinkRecord:
    owner: str
    revoked: bool


class LinkStore:
    """The SQL both backends run; subclasses supply a cursor and the parameter mark."""

    mark = "?"

    def __init__(self, clock: Callable[[], datetime] | None = None):
        self._clock = clock or (lambda: datetime.now(UTC))

    @contextmanager
    def _cursor(self) -> Iterator[Callable[[str, tuple], list[dict]]]:
        raise NotImplementedError

    def _run(self, sql: str, params: tuple = ()) -> list[dict]:
        with self._cursor() as run:
            return run(sql.replace("?", self.mark), params)

    def claim(self, thread: str, owner: str) -> LinkRecord:
        """The link record of `thread`: made for `owner` the first time, as it was ever after
        (a conversation keeps its first owner, and a revoked one stays revoked)."""
        key = thread_key(thread)
        self._run("INSERT INTO conversation_links (thread, owner, created_at) VALUES (?, ?, ?) "
                  "ON CONFLICT (thread) DO NOTHING",
                  (key, owner, self._clock().isoformat(timespec="seconds")))
        found = self.get(thread)
        assert found is not None
        return found

    def get(self, thread: str) -> LinkRecord | None:
        rows = self._run("SELECT owner, revoked_at FROM conversation_links WHERE thread = ?",
                         (thread_key(thread),))
        return LinkRecord(rows[0]["owner"], rows[0]["revoked_at"] is not None) if rows else None

    def revoke(self, thread: str) -> None:
        """No link to `thread` opens any more, on any replica; one never made cannot be."""
        key, now = thread_key(thread), self._clock().isoformat(timespec="seconds")
        self._run("INSERT INTO conversation_links (thread, owner, created_at, revoked_at) "
                  "VALUES (?, '', ?, ?) ON CONFLICT (thread) DO UPDATE SET revoked_at = "
                  "excluded.revoked_at", (key, now, now))


class SqliteLinkStore(LinkStore):
    """Links beside the leads, in `data_dir/leads.db` (the product's migration chain makes
    the table, m009); every call opens, commits and closes."""

    def __init__(self, data_dir: Path, clock: Callable[[], datetime] | None = None):
        from treadwise.storage.sqlite import DB_NAME

        super().__init__(clock)
        self.path = Path(data_dir) / DB_NAME
        self._ready = False

    def _open(self) -> sqlite3.Connection:
        db = sqlite3.connect(self.path, timeout=BUSY_TIMEOUT_S, isolation_level=None)
        db.row_factory = sqlite3.Row
        db.execute(f"PRAGMA busy_timeout = {int(BUSY_TIMEOUT_S * 1000)}")
        return db

    @contextmanager
    def _cursor(self) -> Iterator[Callable[[str, tuple], list[dict]]]:
        from treadwise.storage.sqlite import retry_locked

        try:
            if not self._ready:
                self.path.parent.mkdir(parents=True, exist_ok=True)
                retry_locked(self._create)
                self._ready = True
            with closing(self._open()) as db:
                db.execute("BEGIN IMMEDIATE")
                try:
                    yield lambda sql, params: [dict(row) for row in db.execute(sql, params)]
                except BaseException:
                    db.rollback()
                    raise
                db.execute("COMMIT")
        except (sqlite3.OperationalError, sqlite3.DatabaseError, OSError) as exc:
            raise StoreUnavailable(f"the conversation link store is unavailable ({exc})") from exc

    def _create(self) -> None:
        from treadwise.storage.migrations import PRODUCT

        with closing(self._open()) as db:
            if db.execute("PRAGMA journal_mode").fetchone()[0] != "wal":
                db.execute("PRAGMA journal_mode = WAL")
            PRODUCT.migrate_sqlite(db)


class PostgresLinkStore(LinkStore):
    """Links in PostgreSQL (migration m009), shared by every replica."""

    mark = "%s"

    def __init__(self, pool: Any, clock: Callable[[], datetime] | None = None):
        super().__init__(clock)
        self.pool = pool

    @contextmanager
    def _cursor(self) -> Iterator[Callable[[str, tuple], list[dict]]]:
        import psycopg

        from treadwise.storage.postgres import unavailable

        def run(sql: str, params: tuple) -> list[dict]:
            cursor = conn.execute(sql, params)
            return list(cursor.fetchall()) if cursor.description else []

        try:
            with self.pool.connection() as conn, conn.transaction():
                yield run
        except psycopg.Error as exc:
            raise unavailable(exc) from exc


def open_link_store(data_dir: Path, database_url: str | None = None) -> LinkStore:
    """PostgreSQL when a URL is given (the schema migrated on first use), else SQLite."""
    if database_url:
        from treadwise.storage.postgres import shared_pool

        return PostgresLinkStore(shared_pool(database_url))
    return SqliteLinkStore(data_dir)


def revoke_links(thread_id: str, data_dir: Path, database_url: str | None = None) -> None:
    """Revoke every resume link of a conversation ("Forget me", an erasure): call it with the
    thread id and the settings' data dir and database URL."""
    open_link_store(data_dir, database_url).revoke(thread_id)
