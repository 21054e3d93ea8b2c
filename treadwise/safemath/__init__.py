"""Safe math: untrusted text parsed through an allow-list, evaluated in limited worker processes."""

from __future__ import annotations

import os
import threading

from treadwise.safemath.math_errors import (
    MathBusyError,
    MathError,
    MathInputError,
    MathTimeoutError,
    MathWorkerError,
)
from treadwise.safemath.pool import MathEngine, timeout_from_env

__all__ = [
    "MathBusyError",
    "MathEngine",
    "MathError",
    "MathInputError",
    "MathTimeoutError",
    "MathWorkerError",
    "get_engine",
    "timeout_from_env",
]

_engine: MathEngine | None = None
_lock = threading.Lock()


def get_engine() -> MathEngine:
    """The process-wide engine (timeout from TREADWISE_MATH_TIMEOUT_S), made on first use.

    Its workers start on the first job, or earlier with get_engine().start(); they stop at
    interpreter exit or with get_engine().shutdown(), after which get_engine() makes a new one.
    """
    global _engine
    with _lock:
        if _engine is None or _engine.closed:
            _engine = MathEngine(timeout_s=timeout_from_env())
        return _engine


def _forget_engine_after_fork() -> None:
    # A forked child must not drive (or stop) its parent's workers; it makes its own on demand.
    global _engine, _lock
    _engine, _lock = None, threading.Lock()


os.register_at_fork(after_in_child=_forget_engine_after_fork)
