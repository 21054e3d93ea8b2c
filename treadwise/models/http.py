"""HTTP plumbing shared by hosted providers: one TLS context, the environment's proxy, retries.

Retries happen in one place for every provider: the RetryTransport of models/retries.py inside
the httpx clients built here. SDK retries are off wherever a client can be handed to the SDK.
"""

from __future__ import annotations

from functools import lru_cache
from typing import Any, cast

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


def transports(settings: Settings, endpoint: str | None) -> tuple[Any, Any]:
    """Retrying transports. A custom transport turns off httpx's own proxy lookup, so the
    environment's proxy is applied here: for the endpoint, or per request when it is unknown."""
    import httpx

    from treadwise.models.retries import AsyncRetryTransport, RetryTransport
    from treadwise.models.tally import AsyncCountingTransport, CountingTransport

    options: dict[str, Any] = {"max_retries": settings.max_retries,
                               "max_wait_s": settings.max_retry_wait_s}
    if endpoint is None:
        # Duck-typed transports: subclassing httpx's would import it with this module.
        sync_proxy = cast(httpx.BaseTransport, _EnvProxyTransport())
        async_proxy = cast(httpx.AsyncBaseTransport, _AsyncEnvProxyTransport())
        return (RetryTransport(CountingTransport(sync_proxy), **options),
                AsyncRetryTransport(AsyncCountingTransport(async_proxy), **options))
    proxy = proxy_for(endpoint)
    # Counting sits under the retries, so each request on the wire is seen once.
    sync = CountingTransport(httpx.HTTPTransport(verify=tls_context(), proxy=proxy))
    async_ = AsyncCountingTransport(httpx.AsyncHTTPTransport(verify=tls_context(), proxy=proxy))
    return RetryTransport(sync, **options), AsyncRetryTransport(async_, **options)


def http_clients(settings: Settings, endpoint: str | None) -> tuple[Any, Any]:
    """Sync and async httpx clients with the retrying transports and the provider timeout."""
    import httpx

    sync_transport, async_transport = transports(settings, endpoint)
    timeout = httpx.Timeout(settings.timeout_s, connect=min(10.0, settings.timeout_s))
    return (httpx.Client(transport=sync_transport, timeout=timeout),
            httpx.AsyncClient(transport=async_transport, timeout=timeout))


class _EnvProxyTransport:
    """Sends each request through the proxy the environment names for its host, as httpx does
    when no transport is given (used for integrations whose endpoint we cannot see)."""

    def __init__(self) -> None:
        self._by_proxy: dict[str | None, Any] = {}

    def _make(self, proxy: str | None) -> Any:
        import httpx

        return httpx.HTTPTransport(verify=tls_context(), proxy=proxy)

    def _inner(self, request: Any) -> Any:
        proxy = proxy_for(str(request.url))
        if proxy not in self._by_proxy:
            self._by_proxy[proxy] = self._make(proxy)
        return self._by_proxy[proxy]

    def handle_request(self, request: Any) -> Any:
        return self._inner(request).handle_request(request)

    def close(self) -> None:
        for transport in self._by_proxy.values():
            transport.close()


class _AsyncEnvProxyTransport(_EnvProxyTransport):
    def _make(self, proxy: str | None) -> Any:
        import httpx

        return httpx.AsyncHTTPTransport(verify=tls_context(), proxy=proxy)

    async def handle_async_request(self, request: Any) -> Any:
        return await self._inner(request).handle_async_request(request)

    async def aclose(self) -> None:
        for transport in self._by_proxy.values():
            await transport.aclose()
