"""What can go wrong with a math job: bad input (the user's to fix) or the engine (ours)."""

from __future__ import annotations


class MathError(Exception):
    """Any math job that has no answer; the message is fit to show a person or a model."""


class MathInputError(MathError, ValueError):
    """The expression or arguments cannot be computed as given; the message says why."""


class MathTimeoutError(MathError):
    """A math job ran past its wall-clock limit; its worker was killed and replaced."""


class MathBusyError(MathError):
    """Every math worker is taken; the job was not started."""


class MathWorkerError(MathError):
    """A math worker died or could not start, so the job has no answer."""
