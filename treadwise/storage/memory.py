"""Conversation memory: a LangGraph SQLite checkpointer keyed by thread id, in the data dir."""

from __future__ import annotations

import logging
import sqlite3
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

from langgraph.checkpoint.base import BaseCheckpointSaver, CheckpointTuple
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.checkpoint.sqlite import SqliteSaver

MEMORY_FILE = "memory.db"
STORAGE_ERRORS = (sqlite3.OperationalError, sqlite3.DatabaseError, OSError)
log = logging.getLogger(__name__)


class ResilientSaver(BaseCheckpointSaver):
    """SQLite checkpoints that fall back to memory when the disk refuses writes.

    A full or read-only data dir must not end the conversation: from the first refused write
    on, checkpoints live in memory for the rest of the process (and a warning says so).
    """

    def __init__(self, primary: SqliteSaver | None):
        super().__init__(serde=primary.serde if primary else None)
        self.primary = primary
        self.fallback = InMemorySaver()
        self.degraded = primary is None

    def _degrade(self, error: BaseException) -> None:
        if not self.degraded:
            log.warning("conversation memory now kept in RAM only: %s", error)
        self.degraded = True

    def _write(self, method: str, *args: Any) -> Any:
        if not self.degraded and self.primary is not None:
            try:
                return getattr(self.primary, method)(*args)
            except STORAGE_ERRORS as error:
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
        except STORAGE_ERRORS as error:
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


def open_checkpointer(data_dir: Path) -> ResilientSaver:
    """A checkpointer safe to share between threads and with other processes."""
    try:
        data_dir.mkdir(parents=True, exist_ok=True)
        conn = sqlite3.connect(data_dir / MEMORY_FILE, check_same_thread=False, timeout=30)
        conn.execute("PRAGMA journal_mode=WAL")
        # WAL with NORMAL sync cannot corrupt and survives a crashed process; only a power cut
        # may lose the last turns. A full sync per write held the saver's one lock for an fsync
        # and made concurrent sessions queue on the disk (leads keep full sync).
        conn.execute("PRAGMA synchronous=NORMAL")
        conn.execute("PRAGMA busy_timeout=30000")
        saver = SqliteSaver(conn)
        saver.setup()
    except STORAGE_ERRORS as error:
        log.warning("cannot keep conversations in %s (%s); using RAM only", data_dir, error)
        return ResilientSaver(None)
    return ResilientSaver(saver)
