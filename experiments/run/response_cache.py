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


# LangChain serializes a model once and keeps the result, so values set on a copy later (the
# case's seed, a variation's token limit) are stale in its key: they come from the scope.
STALE = ("seed", "max_tokens", "max_output_tokens", "max_completion_tokens")


def _model(llm_string: str) -> str:
    model, sep, params = llm_string.partition("---")
    try:
        data = json.loads(model)
        for name in STALE:
            data.get("kwargs", {}).pop(name, None)
        model = json.dumps(data, sort_keys=True)
    except (ValueError, AttributeError):
        pass
    return model + sep + params


def request_key(prompt: str, llm_string: str, scope: str = "") -> str:
    messages: list[Any]  # each message's identifying parts, or the prompt text as it came
    try:
        messages = [_message(m) for m in json.loads(prompt)]
    except (ValueError, TypeError, AttributeError):
        messages = [prompt]
    text = json.dumps([scope, _model(llm_string), messages], sort_keys=True, default=str)
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
    """A LangChain cache over one SQLite file. LangChain's key describes a model by the
    arguments it was built with, so a copy's token limit and the seed set per case are
    missing from it: views add them (`scoped` per configuration, `seeded` per case)."""

    def __init__(self, path: Path, *, scope: str = "", seed: int | None = None,
                 store: _Store | None = None):
        self.store = store or _Store(Path(path))
        self.scope = scope
        self.seed = seed

    def scoped(self, scope: str) -> ResponseCache:
        return ResponseCache(self.store.path, scope=scope, store=self.store)

    def seeded(self, seed: int | None) -> ResponseCache:
        return ResponseCache(self.store.path, scope=self.scope, seed=seed, store=self.store)

    def _key(self, prompt: str, llm_string: str) -> str:
        return request_key(prompt, llm_string, f"{self.scope}|seed={self.seed}")

    def lookup(self, prompt: str, llm_string: str) -> Sequence[Any] | None:
        from langchain_core.messages import messages_from_dict
        from langchain_core.outputs import ChatGeneration

        raw = self.store.get(self._key(prompt, llm_string))
        if raw is None:
            return None
        tally = _TALLY.get()
        generations = []
        for message in messages_from_dict(json.loads(raw)):
            # Each answer gets its own id: a thread may meet the same reply twice.
            message.id = f"cached-{uuid.uuid4().hex[:12]}"
            generations.append(ChatGeneration(message=message))
            if tally is not None:
                usage = getattr(message, "usage_metadata", None) or {}
                tally.input_tokens += int(usage.get("input_tokens", 0))
                tally.output_tokens += int(usage.get("output_tokens", 0))
        if tally is not None:
            tally.hits += 1
        return generations

    def update(self, prompt: str, llm_string: str, return_val: Sequence[Any]) -> None:
        from langchain_core.messages import messages_to_dict

        messages = [g.message for g in return_val if hasattr(g, "message")]
        if messages and len(messages) == len(return_val):  # chat replies only
            self.store.put(self._key(prompt, llm_string),
                           json.dumps(messages_to_dict(messages), default=str))

    def clear(self, **kwargs: Any) -> None:
        self.store.clear()

    def close(self) -> None:
        self.store.close()


def cache_path(out_dir: Path) -> Path:
    """Where a results folder keeps its response cache (shared by its runs)."""
    return Path(out_dir) / CACHE_DIR / CACHE_FILE
