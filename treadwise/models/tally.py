"""Counts the HTTP requests a turn makes and the seconds it waits between retries.

The counting transport sits innermost, under whichever layer retries (ours or an SDK's), so
every request that reaches the wire is seen. Counts go to the RequestTally of the current
context; code that wants them (the agent's turn) starts a tally and reads it afterwards.
"""

from __future__ import annotations

import threading
import time
from contextvars import ContextVar
from dataclasses import dataclass, field
from typing import Any

import httpx

from treadwise.models.retries import RETRY_STATUSES


@dataclass
class RequestTally:
    """HTTP requests made (retries included) and the seconds spent between a failed attempt
    and the next one."""

    attempts: int = 0
    retry_wait_s: float = 0.0
    # The body size of every request, in order: what each model call sent.
    sizes: list[int] = field(default_factory=list)
    _failed_at: float | None = field(default=None, repr=False)
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False)

    def started(self, size: int = 0) -> None:
        now = time.perf_counter()
        with self._lock:
            self.attempts += 1
            self.sizes.append(size)
            if self._failed_at is not None:
                self.retry_wait_s += now - self._failed_at
                self._failed_at = None

    def ended(self, failed: bool) -> None:
        with self._lock:
            self._failed_at = time.perf_counter() if failed else None


_TALLY: ContextVar[RequestTally | None] = ContextVar("treadwise_request_tally", default=None)


def start_tally() -> RequestTally:
    """A fresh tally for the current context (and the threads it is copied into)."""
    tally = RequestTally()
    _TALLY.set(tally)
    return tally


def current_tally() -> RequestTally | None:
    """The tally of the current context, if one was started."""
    return _TALLY.get()


def _size(request: httpx.Request) -> int:
    return int(request.headers.get("content-length") or 0)


def _failed(response: httpx.Response | None) -> bool:
    return response is None or response.status_code in RETRY_STATUSES


class CountingTransport(httpx.BaseTransport):
    """Passes every request through, noting it in the current tally."""

    def __init__(self, inner: httpx.BaseTransport):
        self.inner = inner

    def handle_request(self, request: httpx.Request) -> httpx.Response:
        tally = _TALLY.get()
        if tally is None:
            return self.inner.handle_request(request)
        tally.started(_size(request))
        response = None
        try:
            response = self.inner.handle_request(request)
            return response
        finally:
            tally.ended(_failed(response))

    def close(self) -> None:
        self.inner.close()


class AsyncCountingTransport(httpx.AsyncBaseTransport):
    """The asynchronous twin of CountingTransport."""

    def __init__(self, inner: httpx.AsyncBaseTransport):
        self.inner = inner

    async def handle_async_request(self, request: httpx.Request) -> Any:
        tally = _TALLY.get()
        if tally is None:
            return await self.inner.handle_async_request(request)
        tally.started(_size(request))
        response = None
        try:
            response = await self.inner.handle_async_request(request)
            return response
        finally:
            tally.ended(_failed(response))

    async def aclose(self) -> None:
        await self.inner.aclose()
