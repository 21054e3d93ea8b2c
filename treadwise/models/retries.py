"""Bounded HTTP retries for provider clients that honour Retry-After and fail fast on long waits."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable

import httpx

from treadwise.errors import retry_after_seconds

RETRY_STATUSES = frozenset({429, 500, 502, 503, 504})

# How every retry waits unless a transport is given its own: looked up at each wait, so a test
# can swap in a recorder (tests/conftest.py's retry_waits) instead of really sleeping.
sleep: Callable[[float], None] = time.sleep
async_sleep: Callable[[float], Awaitable[None]] = asyncio.sleep


class _Policy:
    def __init__(self, max_retries: int, max_wait_s: float, backoff_s: float):
        self.max_retries = max_retries
        self.max_wait_s = max_wait_s
        self.backoff_s = backoff_s

    def wait_before_retry(self, response: httpx.Response, attempt: int) -> float | None:
        """Seconds to wait before trying again, or None to hand the response back now."""
        if response.status_code not in RETRY_STATUSES or attempt >= self.max_retries:
            return None
        wait = retry_after_seconds(response.headers)
        if wait is None:
            wait = self.backoff_s * (2 ** attempt)
        return None if wait > self.max_wait_s else wait


class RetryTransport(httpx.BaseTransport):
    """Retries 429 and 5xx a bounded number of times.

    A Retry-After longer than ``max_wait_s`` is not waited for: the response goes straight back
    so the user hears "busy, try later" at once instead of a frozen chat.
    """

    def __init__(self, inner: httpx.BaseTransport | None = None, *, max_retries: int = 2,
                 max_wait_s: float = 20.0, backoff_s: float = 0.5,
                 sleep: Callable[[float], None] | None = None):
        self.inner = inner or httpx.HTTPTransport()
        self.policy = _Policy(max_retries, max_wait_s, backoff_s)
        self.sleep = sleep

    def handle_request(self, request: httpx.Request) -> httpx.Response:
        request.read()
        attempt = 0
        while True:
            response = self.inner.handle_request(request)
            wait = self.policy.wait_before_retry(response, attempt)
            if wait is None:
                return response
            response.close()
            (self.sleep or sleep)(wait)
            attempt += 1

    def close(self) -> None:
        self.inner.close()


class AsyncRetryTransport(httpx.AsyncBaseTransport):
    """The asynchronous twin of RetryTransport, for clients that also build an async client."""

    def __init__(self, inner: httpx.AsyncBaseTransport | None = None, *, max_retries: int = 2,
                 max_wait_s: float = 20.0, backoff_s: float = 0.5,
                 sleep: Callable[[float], Awaitable[None]] | None = None):
        self.inner = inner or httpx.AsyncHTTPTransport()
        self.policy = _Policy(max_retries, max_wait_s, backoff_s)
        self.sleep = sleep

    async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
        await request.aread()
        attempt = 0
        while True:
            response = await self.inner.handle_async_request(request)
            wait = self.policy.wait_before_retry(response, attempt)
            if wait is None:
                return response
            await response.aclose()
            await (self.sleep or async_sleep)(wait)
            attempt += 1

    async def aclose(self) -> None:
        await self.inner.aclose()
