"""Evaluated system blocks of a local model, kept on disk: a new process (the next CLI answer, a
restarted app, another worker) loads what an earlier one read instead of reading it again.

Reading a 1 200-token system block costs SmolLM2-135M about 9 s of one core here; loading its
saved state (about 25 kB a token) takes milliseconds. A state is only ever used for the exact
tokens, model file, context size and thread count that made it, and it is the same bytes
llama.cpp's own save gave, so replies are what the block's evaluation would have given. The
files are plain arrays (numpy's format without pickles): a file that does not read back is
deleted and the block is read again. Nothing here may fail a turn: a folder that cannot be
written is simply not used.

Only first blocks that hold nothing from a conversation come here (LlamaEngine.generate's
`shared`): the tool lists and packaged examples of the pick and arguments steps, and the
persona's own who-speaks text (local_prompts.persona_speaks). What a customer wrote never
reaches this folder, so erasing a customer has nothing to find in it.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from treadwise.replace_file import STAGING_SUFFIX, replacing

# The folder's size cap; the least recently used states go first.
DEFAULT_LIMIT_BYTES = 512 * 2**20
SUFFIX = ".npz"
STALE_PART_S = 3600  # a half-written file this old belongs to no living writer
# What a state file holds and how (LlamaEngine._save's trimmed logits, the arrays below); part of
# every state's key, so a change to it, made with this number raised, never loads an older file.
FORMAT = 1


class StateFolder:
    """Saved llama.cpp states of one model file, context size and thread count."""

    def __init__(self, folder: Path, model_path: str, n_ctx: int, threads: int,
                 limit_bytes: int = DEFAULT_LIMIT_BYTES):
        import llama_cpp

        self.folder, self.limit_bytes = Path(folder), limit_bytes
        stat = os.stat(model_path)
        self.identity = "|".join(map(str, (
            FORMAT, os.path.realpath(model_path), stat.st_size, stat.st_mtime_ns, n_ctx,
            threads, llama_cpp.__version__)))

    def path(self, tokens: Sequence[int]) -> Path:
        digest = hashlib.sha256(self.identity.encode())
        digest.update(",".join(map(str, tokens)).encode())
        return self.folder / f"{digest.hexdigest()[:40]}{SUFFIX}"

    def load(self, tokens: Sequence[int]) -> Any | None:
        """The saved state after exactly `tokens`, or None (never saved, or unreadable)."""
        import numpy as np
        from llama_cpp.llama import LlamaState

        path = self.path(tokens)
        if not path.is_file():
            return None
        try:
            with np.load(path, allow_pickle=False) as data:
                if not np.array_equal(data["tokens"], np.asarray(tokens, dtype=np.int64)):
                    raise ValueError("saved for other tokens")
                state = LlamaState(
                    input_ids=data["input_ids"], scores=data["scores"],
                    n_tokens=int(data["n_tokens"]), llama_state=data["llama_state"].tobytes(),
                    llama_state_size=int(data["llama_state"].size), seed=int(data["seed"]))
        except Exception:  # noqa: BLE001 - any damage (cut short, garbled, foreign) reads again
            with contextlib.suppress(OSError):
                path.unlink()
            return None
        with contextlib.suppress(OSError):
            os.utime(path)  # recently used: kept when the folder is trimmed
        return state

    def save(self, tokens: Sequence[int], state: Any) -> None:
        """Keep `state` (after exactly `tokens`), then trim the folder to its cap."""
        import numpy as np

        try:
            self.folder.mkdir(parents=True, exist_ok=True)
            with replacing(self.path(tokens), binary=True) as out:  # whole, also for readers
                np.savez(out, tokens=np.asarray(tokens, dtype=np.int64),
                         input_ids=state.input_ids, scores=state.scores,
                         n_tokens=np.int64(state.n_tokens), seed=np.int64(state.seed),
                         llama_state=np.frombuffer(state.llama_state, dtype=np.uint8,
                                                   count=state.llama_state_size))
        except OSError:
            return
        self.trim()

    def trim(self) -> None:
        """Delete the least recently used states while the folder is over its cap, and what a
        process that died while writing left behind."""
        files, now = [], time.time()
        for path in self.folder.iterdir():
            with contextlib.suppress(OSError):
                found = path.stat()
                if path.suffix == STAGING_SUFFIX and now - found.st_mtime > STALE_PART_S:
                    path.unlink()
                elif path.suffix == SUFFIX:
                    files.append((found.st_mtime_ns, found.st_size, path))
        total = sum(size for _, size, _ in files)
        for _, size, path in sorted(files):
            if total <= self.limit_bytes:
                break
            with contextlib.suppress(OSError):
                path.unlink()
                total -= size
