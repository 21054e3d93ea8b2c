"""The response cache: identical model requests answered from a local SQLite file, hits counted.

A request is identical when the model (spec, endpoint, temperature, seed, token limit), the
messages (roles, text, tool calls and results, without the random ids each run assigns) and
the offered tools are. Re-running a grid after adding a factor then pays only for new cases.
"""

from __future__ import annotations

import hashlib
import json
import sqlite3
import threading
import uuid
from collections.abc import Sequence
from contextvars import ContextVar
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from langchain_core.caches import BaseCache

CACHE_DIR = ".cache"
CACHE_FILE = "responses.sqlite"


@dataclass
class CacheTally:
    """Model calls of one case answered from the cache, and the tokens they would have cost."""

    hits: int = 0
    input_tokens: int = 0
    output_tokens: int = 0


_TALLY: ContextVar[CacheTally | None] = ContextVar("experiments_cache_tally", default=None)


def start_tally() -> CacheTally:
    """A fresh count for the current context (the case that is about to run)."""
    tally = CacheTally()
    _TALLY.set(tally)
    return tally


def _message(raw: dict[str, Any]) -> list[Any]:
    """What makes a serialized message the same request: type, text, calls, results."""
    kwargs = raw.get("kwargs", {})
    calls = [[c.get("name"), c.get("args")] for c in kwargs.get("tool_calls") or []]
    return [raw.get("id", ["?"])[-1], kwargs.get("content"), calls, kwargs.get("name"),
            kwargs.get("status")]


def request_key(prompt: str, llm_string: str, scope: str = "") -> str:
    try:
        messages = [_message(m) for m in json.loads(prompt)]
    except (ValueError, TypeError, AttributeError):
        messages = [prompt]
    text = json.dumps([scope, llm_string, messages], sort_keys=True, default=str)
    return hashlib.sha256(text.encode()).hexdigest()


class _Store:
    """One SQLite file shared by every worker thread (writes are tiny and serialised)."""

    def __init__(self, path: Path):
        path.parent.mkdir(parents=True, exist_ok=True)
        self.path = path
        self._lock = threading.Lock()
        self._db = sqlite3.connect(path, check_same_thread=False, isolation_level=None)
        self._db.execute("PRAGMA journal_mode=WAL")
        self._db.execute("PRAGMA busy_timeout=10000")
        self._db.execute("CREATE TABLE IF NOT EXISTS responses "
                         "(key TEXT PRIMARY KEY, value TEXT NOT NULL)")

    def get(self, key: str) -> str | None:
        with self._lock:
            row = self._db.execute("SELECT value FROM responses WHERE key = ?", (key,)).fetchone()
        return row[0] if row else None

    def put(self, key: str, value: str) -> None:
        with self._lock:
            self._db.execute("INSERT OR REPLACE INTO responses VALUES (?, ?)", (key, value))

    def clear(self) -> None:
        with self._lock:
            self._db.execute("DELETE FROM responses")

    def close(self) -> None:
        with self._lock:
            self._db.close()


class ResponseCache(BaseCache):
    """A LangChain cache over one SQLite file; `scoped` views add what LangChain's key leaves
    out (a copied model's token limit, the provider spec)."""

    def __init__(self, path: Path, *, scope: str = "", store: _Store | None = None):
        self.store = store or _Store(Path(path))
        self.scope = scope

    def scoped(self, scope: str) -> ResponseCache:
        return ResponseCache(self.store.path, scope=scope, store=self.store)

    def lookup(self, prompt: str, llm_string: str) -> Sequence[Any] | None:
        from langchain_core.load import loads

        raw = self.store.get(request_key(prompt, llm_string, self.scope))
        if raw is None:
            return None
        generations = loads(raw)
        tally = _TALLY.get()
        for generation in generations:
            message = getattr(generation, "message", None)
            if message is not None:
                # Each answer gets its own id: a thread may meet the same reply twice.
                message.id = f"cached-{uuid.uuid4().hex[:12]}"
                if tally is not None:
                    usage = message.usage_metadata or {}
                    tally.input_tokens += int(usage.get("input_tokens", 0))
                    tally.output_tokens += int(usage.get("output_tokens", 0))
        if tally is not None:
            tally.hits += 1
        return generations

    def update(self, prompt: str, llm_string: str, return_val: Sequence[Any]) -> None:
        from langchain_core.load import dumps

        self.store.put(request_key(prompt, llm_string, self.scope), dumps(list(return_val)))

    def clear(self, **kwargs: Any) -> None:
        self.store.clear()

    def close(self) -> None:
        self.store.close()


def cache_path(out_dir: Path) -> Path:
    """Where a results folder keeps its response cache (shared by its runs)."""
    return Path(out_dir) / CACHE_DIR / CACHE_FILE
