"""Conversation memory: a LangGraph SQLite checkpointer keyed by thread id, in the data dir."""

from __future__ import annotations

import sqlite3
from pathlib import Path

from langgraph.checkpoint.sqlite import SqliteSaver

MEMORY_FILE = "memory.db"


def open_checkpointer(data_dir: Path) -> SqliteSaver:
    """A checkpointer safe to share between threads and with other processes."""
    data_dir.mkdir(parents=True, exist_ok=True)
    conn = sqlite3.connect(data_dir / MEMORY_FILE, check_same_thread=False, timeout=30)
    conn.execute("PRAGMA journal_mode=WAL")
    conn.execute("PRAGMA busy_timeout=30000")
    saver = SqliteSaver(conn)
    saver.setup()
    return saver
