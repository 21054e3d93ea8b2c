"""HTTP plumbing shared by hosted providers: one TLS context, the environment's proxy, retries."""

from __future__ import annotations

from functools import lru_cache
from typing import Any

from treadwise.settings import Settings

_rate_limiters: dict[tuple[str, float], Any] = {}


def rate_limiter(provider_name: str, settings: Settings) -> Any:
    """One shared limiter per provider when TREADWISE_RATE_LIMIT_RPS is set, else None."""
    if settings.rate_limit_rps <= 0:
        return None
    key = (provider_name, settings.rate_limit_rps)
    if key not in _rate_limiters:
        from langchain_core.rate_limiters import InMemoryRateLimiter

        _rate_limiters[key] = InMemoryRateLimiter(
            requests_per_second=settings.rate_limit_rps, check_every_n_seconds=0.05,
            max_bucket_size=max(1.0, settings.rate_limit_rps))
    return _rate_limiters[key]


@lru_cache(maxsize=1)
def tls_context() -> Any:
    """One TLS context for every client: building one costs tens of milliseconds."""
    import httpx

    return httpx.create_ssl_context()


def proxy_for(url: str) -> str | None:
    """The proxy the environment (HTTPS_PROXY, NO_PROXY, ...) names for this endpoint."""
    import urllib.request
    from urllib.parse import urlsplit

    parts = urlsplit(url)
    if not parts.hostname or urllib.request.proxy_bypass(parts.hostname):
        return None
    proxies = urllib.request.getproxies()
    return proxies.get(parts.scheme) or proxies.get("all")


def transports(settings: Settings, endpoint: str) -> tuple[Any, Any]:
    """Retrying transports; a custom transport turns off httpx's own proxy lookup, so the
    environment's proxy for this endpoint is applied here."""
    import httpx

    from treadwise.models.retries import AsyncRetryTransport, RetryTransport
    from treadwise.models.tally import AsyncCountingTransport, CountingTransport

    options = {"max_retries": settings.max_retries, "max_wait_s": settings.max_retry_wait_s}
    proxy = proxy_for(endpoint)
    # Counting sits under the retries, so each request on the wire is seen once.
    sync = CountingTransport(httpx.HTTPTransport(verify=tls_context(), proxy=proxy))
    async_ = AsyncCountingTransport(httpx.AsyncHTTPTransport(verify=tls_context(), proxy=proxy))
    return RetryTransport(sync, **options), AsyncRetryTransport(async_, **options)
