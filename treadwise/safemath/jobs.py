"""One math job under a time budget: the operation registry, run_job, and alarm-bounded steps."""

from __future__ import annotations

import importlib
import inspect
import signal
import sys
import threading
import time
from collections.abc import Callable
from contextvars import ContextVar
from dataclasses import dataclass
from typing import Any, TypeVar

from treadwise.safemath.math_errors import MathInputError

OPERATIONS: dict[str, Callable[..., object]] = {}
# The modules whose @operation functions make up the engine, by family.
FAMILIES = ("treadwise.safemath.arithmetic", "treadwise.safemath.calculus",
            "treadwise.safemath.solving", "treadwise.safemath.program")

T = TypeVar("T")


def load_operations() -> dict[str, Callable[..., object]]:
    """Every registered operation; importing the families registers them."""
    for family in FAMILIES:
        importlib.import_module(family)
    return OPERATIONS


def operation(function: Callable[..., T]) -> Callable[..., T]:
    """Register a math operation under its function name (the tool of the same name calls it)."""
    OPERATIONS[function.__name__] = function
    return function


@dataclass
class _Job:
    """The running job's time budget, read by attempt."""

    deadline: float
    alarms: bool
    interrupted: bool = False
    in_step: bool = False


_JOB: ContextVar[_Job | None] = ContextVar("treadwise_math_job", default=None)


class OutOfTime(BaseException):
    """Raised by the step alarm; a BaseException so library code's `except Exception` lets it by."""


def run_job(op: str, kwargs: dict[str, Any], timeout_s: float, *,
            alarms: bool = False) -> tuple[str, Any, bool]:
    """Run one operation: ("ok", result, retire) or ("error", message, retire).

    `retire` asks the worker to exit after replying, because the job was interrupted or ran out
    of memory and sympy's caches may be in a strange state.
    """
    function = load_operations().get(op)
    if function is None:
        return "error", f"unknown math operation {op!r}", False
    try:
        inspect.signature(function).bind(**kwargs)
    except TypeError as exc:
        return "error", f"wrong arguments for {op}: {exc}", False
    # Leave a little of the caller's wall-clock budget for formatting and the reply.
    job = _Job(deadline=time.monotonic() + timeout_s * 0.9 - 0.1, alarms=alarms)
    token = _JOB.set(job)
    try:
        return "ok", function(**kwargs), job.interrupted
    except MathInputError as exc:
        return "error", str(exc), job.interrupted
    except OutOfTime:
        return "error", _too_slow(timeout_s), True
    except RecursionError:
        return "error", "the expression is nested too deeply to compute", True
    except MemoryError:
        return "error", "the calculation ran out of memory; try a simpler expression", True
    except Exception as exc:  # noqa: BLE001 - any sympy failure is reported, never raised
        return "error", _failed(exc), job.interrupted
    finally:
        _JOB.reset(token)


def _too_slow(timeout_s: float) -> str:
    return f"the calculation took too long (over {timeout_s:g} s); try a simpler expression"


def _failed(exc: BaseException) -> str:
    return f"could not compute this ({type(exc).__name__}); try rewriting the expression"


def drop_missed_alarm(unraisable: Any) -> None:
    """sys.unraisablehook for the workers: an alarm that rang inside a callback Python cannot
    raise from (a weakref's, a __del__) is printed as "Exception ignored" with a traceback, and
    attempt()'s next ring, 50 ms later, ends the step anyway; anything else is reported."""
    if not isinstance(unraisable.exc_value, OutOfTime):
        sys.__unraisablehook__(unraisable)


def attempt(step: Callable[[], T], share: float = 1.0) -> T | None:
    """Run `step` within `share` of the job's remaining time; None when that time runs out.

    Only the worker arms the alarm (it owns its main thread); elsewhere the step just runs.
    """
    job = _JOB.get()
    if job is None or not job.alarms or job.in_step:
        return step()
    if threading.current_thread() is not threading.main_thread():
        return step()
    seconds = (job.deadline - time.monotonic()) * share
    if seconds <= 0.01:
        return None
    armed = True

    def ring(signum: int, frame: object) -> None:
        if armed:
            raise OutOfTime

    previous = signal.signal(signal.SIGALRM, ring)
    # It rings again every 50 ms in case library code swallowed the first one.
    signal.setitimer(signal.ITIMER_REAL, seconds, 0.05)
    job.in_step = True
    try:
        return step()
    except OutOfTime:
        job.interrupted = True
        return None
    finally:
        armed = False
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)
        job.in_step = False


def quietly(step: Callable[[], T], share: float = 1.0) -> T | None:
    """Like attempt, and also None when sympy gives up on the step with an error."""
    try:
        return attempt(step, share)
    except MathInputError:
        raise
    except (NotImplementedError, ValueError, TypeError, AttributeError, ArithmeticError):
        return None
