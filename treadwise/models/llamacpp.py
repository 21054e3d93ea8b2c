"""llama.cpp engines: each GGUF file loaded once per process and shared under one lock."""

from __future__ import annotations

import atexit
import codecs
import functools
import os
import random
import threading
import time
from collections.abc import Callable, Generator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from treadwise.errors import ModelLimitError, ModelUnavailable
from treadwise.models.llama_states import StateFolder

INSTALL_HINT = "python -m pip install -r requirements-local.txt"
DEFAULT_N_CTX = 8192
# Room the reply needs at least; a prompt that leaves less is refused rather than cut mid-word.
MIN_REPLY_TOKENS = 32
# First blocks kept ready as saved states (about 25 kB a token): a persona with and without tools,
# the pick step per tool list, the arguments step of the tools in use.
SAVED_PREFIXES = 12
# Tokenized prompt blocks kept per engine (a few hundred kB at most).
BLOCK_CACHE = 512

_engines: dict[tuple[str, int], LlamaEngine] = {}
_engines_lock = threading.Lock()


class LocalTimeout(TimeoutError):
    """The local model did not finish within the configured time (waiting included)."""


@dataclass
class Generation:
    """What one generation cost, filled in while it runs."""

    prompt_tokens: int = 0
    output_tokens: int = 0
    finish_reason: str = "stop"


@dataclass(frozen=True)
class Sampling:
    """Sampling beyond temperature. Small models loop on greedy decoding without a repeat
    penalty (SmolLM2-135M repeated one sentence until max_tokens here)."""

    top_p: float = 0.95
    top_k: int = 40
    min_p: float = 0.05
    repeat_penalty: float = 1.15


@dataclass(frozen=True)
class Constraint:
    """A GBNF grammar the reply is held to. Once ``released`` says the text so far is prose,
    the grammar is dropped for the rest: a grammar is checked against the whole vocabulary at
    every token, and prose that may say anything gains nothing from it."""

    gbnf: str
    released: Callable[[str], bool] | None = None


def _threads(configured: int) -> int:
    """Settings.local_threads, else half the cores for prompt reading too (llama.cpp's default
    uses all of them for it): on a busy 2-core machine two spinning threads made a 30-token
    reply 20 times slower than one."""
    return configured if configured > 0 else max(1, (os.cpu_count() or 2) // 2)


def engine(path: str, n_ctx: int = DEFAULT_N_CTX, threads: int = 0,
           state_dir: str = "") -> LlamaEngine:
    """The process's engine for this file and context size, loaded on first use (with
    `threads` llama.cpp threads, 0: half the cores; system blocks kept in `state_dir` for
    other processes, "": nowhere). The first use's threads and folder hold for the process."""
    key = (os.path.realpath(path), n_ctx)
    with _engines_lock:
        if key not in _engines:
            if not _engines:
                atexit.register(_close_all)
            _engines[key] = LlamaEngine(key[0], n_ctx, threads, state_dir)
        return _engines[key]


def _close_all() -> None:
    # Freed while the interpreter is whole: llama-cpp-python's own finalizers run during
    # teardown, when its module globals are gone, and print "Exception ignored" tracebacks.
    with _engines_lock:
        for loaded_engine in _engines.values():
            loaded_engine.llm.close()
        _engines.clear()


def loaded(path: str, n_ctx: int = DEFAULT_N_CTX) -> bool:
    return (os.path.realpath(path), n_ctx) in _engines


class LlamaEngine:
    """One llama.cpp context. Contexts are not thread-safe, so every generation holds the lock.
    What a prompt shares with the previous one (the system block, earlier messages) stays
    evaluated, and a few system blocks are saved, so a call reads only what is new."""

    def __init__(self, path: str, n_ctx: int, threads: int = 0, state_dir: str = ""):
        try:
            from llama_cpp import Llama
        except ImportError:
            raise ModelUnavailable(f"the local model needs llama-cpp-python: {INSTALL_HINT}") \
                from None
        threads = _threads(threads)
        try:
            self.llm = Llama(model_path=path, n_ctx=n_ctx, verbose=False, n_threads=threads,
                             n_threads_batch=threads)
        except (ValueError, RuntimeError) as exc:
            raise ModelUnavailable(f"cannot load the GGUF file {path}: {exc}") from None
        self.path, self.n_ctx = path, n_ctx
        self.lock = threading.Lock()
        # The prompt blocks whose evaluation the context holds, from position 0.
        self._live: list[tuple[int, ...]] = []
        # System blocks already evaluated, as llama.cpp sequence states (about 25 kB a token).
        self._saved: dict[tuple[int, ...], Any] = {}
        self._blocks: dict[str, tuple[int, ...]] = {}
        self._stops = {self.llm.token_eos(), *self.tokens("<|im_end|><|im_start|><|endoftext|>")}
        # System blocks read by any process before, on disk (models/llama_states.py).
        self.states = StateFolder(Path(state_dir), path, n_ctx, threads) if state_dir else None

    def tokens(self, text: str) -> list[int]:
        """The model's own tokenization (special tokens such as <|im_start|> included)."""
        return self.llm.tokenize(text.encode("utf-8"), add_bos=False, special=True)

    def block_tokens(self, text: str) -> tuple[int, ...]:
        """tokens() of a prompt block, remembered: the system block, its paragraphs and the
        conversation so far come back on every call of a turn and of a thread."""
        found = self._blocks.get(text)
        if found is None:
            if len(self._blocks) >= BLOCK_CACHE:
                self._blocks.clear()
            found = self._blocks[text] = tuple(self.tokens(text))
        return found

    def count(self, text: str) -> int:
        return len(self.tokens(text))

    def generate(self, blocks: Sequence[str], *, max_tokens: int, temperature: float,
                 seed: int | None, timeout_s: float, stats: Generation,
                 sampling: Sampling | None = None,
                 constraint: Constraint | None = None,
                 shared: bool = False) -> Generator[str, None, None]:
        """Yield the reply to the prompt ``blocks`` piece by piece (the first block is the
        system block), held to ``constraint`` if given; ``stats`` holds the counts when it
        ends. ``shared``: the first block holds nothing from a conversation, so its state may
        be kept on disk for other processes (and taken from there)."""
        deadline = time.monotonic() + timeout_s
        tokens = [self.block_tokens(b) for b in blocks]
        stats.prompt_tokens = sum(map(len, tokens))
        room = self.n_ctx - stats.prompt_tokens
        if room < MIN_REPLY_TOKENS:
            raise ModelLimitError(
                f"The conversation is too long for the local model ({stats.prompt_tokens} of "
                f"{self.n_ctx} tokens). Please start a new conversation.")
        if not self.lock.acquire(timeout=max(0.0, deadline - time.monotonic())):
            raise LocalTimeout(f"the local model was busy for {timeout_s:g} s")
        try:
            self._load_prompt(tokens, deadline, shared)
            yield from self._sample(min(max_tokens, room), temperature, seed,
                                    sampling or Sampling(), deadline, stats, constraint)
        except RuntimeError as exc:
            self._live = []
            raise ModelLimitError(f"The local model failed ({exc}). Please try again.") from None
        finally:
            self.lock.release()

    def _load_prompt(self, blocks: list[tuple[int, ...]], deadline: float,
                     shared: bool = False) -> None:
        """Evaluate the prompt block by block, keeping the leading blocks already evaluated.

        Each block is evaluated on its own, starting where the blocks before it end, whether
        now or in an earlier call (the system block may come back from a saved state), so the
        numbers are the same whatever ran before and the same seed gives the same reply.
        """
        keep = 0
        # The last block is always evaluated: sampling needs its fresh logits.
        for new, old in zip(blocks[:-1], self._live, strict=False):
            if new != old:
                break
            keep += 1
        try:
            if keep:
                self._live = self._live[:keep]
                # Llama.eval() drops whatever the context holds past n_tokens before it reads
                # on, so moving this public counter back is how a kept prefix is reused.
                self.llm.n_tokens = sum(map(len, self._live))
            else:
                self._start(blocks[0], deadline, shared)
                keep = 1
            for block in blocks[keep:]:
                self._eval(list(block), deadline)
                self._live.append(block)
        except BaseException:
            self._live = []
            raise

    def _start(self, head: tuple[int, ...], deadline: float, shared: bool = False) -> None:
        self._live = []
        states = self.states if shared else None
        saved = self._saved.pop(head, None)
        if saved is None and states is not None:
            saved = states.load(head)
        if saved is not None:
            self._saved[head] = saved  # most recently used last
            self.llm.load_state(saved)
        else:
            self.llm.reset()
            self._eval(list(head), deadline)
            self._save(head)
            if states is not None:
                states.save(head, self._saved[head])
        self._live = [head]

    def _save(self, key: tuple[int, ...]) -> None:
        state = self.llm.save_state()
        # save_state copies a logits row per token read (up to n_batch rows, 100 MB for this
        # vocabulary) although only logits_all models fill them; one row is all load_state
        # needs to broadcast back, and a few hundred states stay in RAM instead of 600 MB.
        state.scores = state.scores[-1:].copy()
        while len(self._saved) >= SAVED_PREFIXES:
            self._saved.pop(next(iter(self._saved)))
        self._saved[key] = state

    def _eval(self, tokens: list[int], deadline: float) -> None:
        step = self.llm.n_batch
        for start in range(0, len(tokens), step):
            if time.monotonic() > deadline:
                raise LocalTimeout("the local model did not finish reading the prompt in time")
            self.llm.eval(tokens[start:start + step])

    def _sample(self, max_tokens: int, temperature: float, seed: int | None,
                sampling: Sampling, deadline: float, stats: Generation,
                constraint: Constraint | None = None) -> Generator[str, None, None]:
        llm = self.llm
        llm.set_seed(seed if seed is not None else random.SystemRandom().randrange(2**31))
        options: dict[str, Any] = {
            "temp": temperature, "top_p": sampling.top_p, "top_k": sampling.top_k,
            "min_p": sampling.min_p, "repeat_penalty": sampling.repeat_penalty, "reset": False}
        released = constraint.released if constraint else None
        tokens = llm.generate([], grammar=_grammar(constraint.gbnf) if constraint else None,
                              **options)
        decoder = codecs.getincrementaldecoder("utf-8")(errors="replace")
        stats.finish_reason = "length"
        text = ""
        try:
            while (token := next(tokens, None)) is not None:
                if token in self._stops:
                    stats.finish_reason = "stop"
                    break
                stats.output_tokens += 1
                if piece := decoder.decode(llm.detokenize([token])):
                    text += piece
                    yield piece
                if stats.output_tokens >= max_tokens:
                    break
                if time.monotonic() > deadline:
                    raise LocalTimeout("the local model did not finish its reply in time")
                if released is not None and released(text):
                    released = None
                    # The token just sampled is not evaluated yet: the free run starts with it.
                    tokens.close()
                    tokens = llm.generate([token], **options)
        finally:
            tokens.close()
        if tail := decoder.decode(b"", final=True):
            yield tail


@functools.lru_cache(maxsize=64)
def _grammar(gbnf: str) -> Any:
    from llama_cpp import LlamaGrammar

    return LlamaGrammar.from_string(gbnf, verbose=False)
