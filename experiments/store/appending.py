"""An append-only file that several threads write whole records to."""

from __future__ import annotations

import os
import threading
from pathlib import Path


class AppendFile:
    """Each record goes out in one write and is flushed, so a kill leaves at most one partial
    record at the end (which the reader's repair cuts off); closing syncs it to disk."""

    def __init__(self, path: Path, newline: str | None = None):
        self._lock = threading.Lock()
        self._handle = Path(path).open("a", encoding="utf-8", newline=newline)

    def append(self, record: str) -> None:
        with self._lock:
            self._handle.write(record)
            self._handle.flush()

    def close(self) -> None:
        with self._lock:
            if not self._handle.closed:
                self._handle.flush()
                os.fsync(self._handle.fileno())
                self._handle.close()
