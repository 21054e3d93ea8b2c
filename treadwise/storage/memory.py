"""Conversation memory: a LangGraph checkpointer keyed by thread id (SQLite or PostgreSQL)."""

from __future__ import annotations

import logging
import sqlite3
import uuid
from collections.abc import Iterator, Sequence
from contextlib import nullcontext
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from langgraph.checkpoint.base import BaseCheckpointSaver, CheckpointTuple
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.checkpoint.sqlite import SqliteSaver

from treadwise.storage.sqlite import retry_locked, truncate_wal

MEMORY_FILE = "memory.db"
STORAGE_ERRORS = (sqlite3.OperationalError, sqlite3.DatabaseError, OSError)
log = logging.getLogger(__name__)


class ResilientSaver(BaseCheckpointSaver):
    """Checkpoints that fall back to memory when the store refuses writes.

    A full or read-only data dir, or a database gone away, must not end the conversation: from
    the first refused write on, checkpoints live in memory for the rest of the process (and a
    warning says so). `errors` are the exceptions that mean "the store is unavailable".
    """

    def __init__(self, primary: BaseCheckpointSaver | None,
                 errors: tuple[type[BaseException], ...] = STORAGE_ERRORS):
        super().__init__(serde=primary.serde if primary else None)
        self.primary = primary
        self.errors = errors
        self.fallback = InMemorySaver()
        self.degraded = primary is None

    def _degrade(self, error: BaseException) -> None:
        if not self.degraded:
            from treadwise.errors import redact

            log.warning("conversation memory now kept in RAM only: %s", redact(str(error)))
        self.degraded = True

    def _write(self, method: str, *args: Any) -> Any:
        if not self.degraded and self.primary is not None:
            try:
                return getattr(self.primary, method)(*args)
            except self.errors as error:
                self._degrade(error)
        return getattr(self.fallback, method)(*args)

    def put(self, config: Any, checkpoint: Any, metadata: Any, new_versions: Any) -> Any:
        return self._write("put", config, checkpoint, metadata, new_versions)

    def put_writes(self, config: Any, writes: Sequence[tuple[str, Any]], task_id: str,
                   task_path: str = "") -> None:
        self._write("put_writes", config, writes, task_id, task_path)

    def get_tuple(self, config: Any) -> CheckpointTuple | None:
        if self.degraded and (found := self.fallback.get_tuple(config)):
            return found
        if self.primary is None:
            return None
        try:
            return self.primary.get_tuple(config)
        except self.errors as error:
            self._degrade(error)
            return None

    def list(self, config: Any, *, filter: dict[str, Any] | None = None, before: Any = None,
             limit: int | None = None) -> Iterator[CheckpointTuple]:
        source = self.fallback if self.degraded or self.primary is None else self.primary
        yield from source.list(config, filter=filter, before=before, limit=limit)

    def delete_thread(self, thread_id: str) -> None:
        self.fallback.delete_thread(thread_id)
        if self.primary is not None:
            self._write("delete_thread", thread_id)

    def get_next_version(self, current: Any, channel: Any) -> Any:
        return (self.primary or self.fallback).get_next_version(current, channel)


# 100-nanosecond steps from the UUID epoch (1582-10-15) to the Unix epoch.
UUID_EPOCH_STEPS = 0x01B21DD213814000


def checkpoint_time(checkpoint_id: str) -> datetime | None:
    """When a checkpoint was written: LangGraph's ids are time-ordered UUIDv6 values."""
    try:
        value = uuid.UUID(checkpoint_id)
    except ValueError:
        return None
    if value.version != 6:
        return None
    steps = ((value.int >> 96) << 28) | (((value.int >> 80) & 0xFFFF) << 12) \
        | ((value.int >> 64) & 0x0FFF)
    return datetime.fromtimestamp((steps - UUID_EPOCH_STEPS) / 1e7, UTC)


def _latest_checkpoints(saver: BaseCheckpointSaver) -> list[tuple[str, str]]:
    """(thread_id, newest checkpoint id) of every stored conversation."""
    sql = "SELECT thread_id, max(checkpoint_id) AS newest FROM checkpoints GROUP BY thread_id"
    if isinstance(saver, SqliteSaver):
        with saver.cursor(transaction=False) as cur:
            return [(row[0], row[1]) for row in cur.execute(sql).fetchall()]
    from langgraph.checkpoint.postgres import PostgresSaver
    from psycopg_pool import ConnectionPool

    if not isinstance(saver, PostgresSaver):
        raise TypeError(f"cannot list the conversations kept by a {type(saver).__name__}")
    pool = saver.conn  # a pool or one connection
    with pool.connection() if isinstance(pool, ConnectionPool) else nullcontext(pool) as conn:
        return [(row["thread_id"], row["newest"]) for row in conn.execute(sql).fetchall()]


def purge_conversations(saver: ResilientSaver, cutoff: datetime) -> int:
    """Delete every conversation whose newest message is older than `cutoff`; how many."""
    if saver.primary is None or saver.degraded:
        return 0
    old = [thread for thread, newest in _latest_checkpoints(saver.primary)
           if (when := checkpoint_time(newest)) is not None and when < cutoff]
    for thread in old:
        saver.delete_thread(thread)
    return len(old)


def wipe_memory(saver: BaseCheckpointSaver) -> None:
    """Make a deletion from SQLite memory final on disk: the write-ahead log checkpointed into
    the file (secure_delete zeroed the deleted rows there) and truncated. PostgreSQL's rows
    are gone from every query at once; vacuuming them out of its files is the operator's."""
    primary = saver.primary if isinstance(saver, ResilientSaver) else saver
    if not isinstance(primary, SqliteSaver):
        return
    with primary.lock:
        truncate_wal(primary.conn)


def open_checkpointer(data_dir: Path, database_url: str | None = None) -> ResilientSaver:
    """A checkpointer safe to share between threads and with other processes: PostgreSQL
    when a URL is given (every replica sees every thread), else SQLite in the data dir."""
    if database_url:
        return _postgres_checkpointer(database_url)
    try:
        data_dir.mkdir(parents=True, exist_ok=True)
        conn = sqlite3.connect(data_dir / MEMORY_FILE, check_same_thread=False, timeout=30)
        retry_locked(lambda: conn.execute("PRAGMA journal_mode=WAL"))
        # WAL with NORMAL sync cannot corrupt and survives a crashed process; only a power cut
        # may lose the last turns. A full sync per write held the saver's one lock for an fsync
        # and made concurrent sessions queue on the disk (leads keep full sync).
        conn.execute("PRAGMA synchronous=NORMAL")
        conn.execute("PRAGMA busy_timeout=30000")
        # An erased conversation's bytes are overwritten, not left in free pages.
        conn.execute("PRAGMA secure_delete=ON")
        saver = SqliteSaver(conn)
        saver.setup()
    except STORAGE_ERRORS as error:
        log.warning("cannot keep conversations in %s (%s); using RAM only", data_dir, error)
        return ResilientSaver(None)
    return ResilientSaver(saver)


def _postgres_checkpointer(url: str) -> ResilientSaver:
    import psycopg
    from langgraph.checkpoint.postgres import PostgresSaver
    from langgraph.checkpoint.serde.jsonplus import JsonPlusSerializer

    from treadwise.storage.leads import StoreUnavailable
    from treadwise.storage.postgres import describe, shared_pool

    try:
        pool = shared_pool(url)
    except StoreUnavailable as error:
        log.warning("cannot keep conversations in %s (%s); using RAM only, so other replicas "
                    "will not see them", describe(url), error)
        return ResilientSaver(None)
    # A shared database is a wider door than a local file: only message and other safe types
    # are rebuilt from a checkpoint, so a row written by an intruder cannot run code here.
    serde = JsonPlusSerializer(allowed_msgpack_modules=None)
    # PoolTimeout is an OperationalError: a database that stops answering degrades to RAM.
    errors = (psycopg.OperationalError, psycopg.InterfaceError)
    return ResilientSaver(PostgresSaver(pool, serde=serde), errors=errors)
