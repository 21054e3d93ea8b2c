"""The client behind a trusted proxy: one hop back, an IP address or nothing."""

from __future__ import annotations

import ipaddress
from collections.abc import Sequence
from typing import Any

SCHEMES = {"http": ("http", "ws"), "https": ("https", "wss")}


def _header(scope: dict[str, Any], name: bytes) -> str:
    """Every value of one request header, joined with commas as the HTTP spec allows."""
    return ",".join(value.decode("latin-1") for key, value in scope.get("headers", [])
                    if key.lower() == name)


def forwarded_client(header: str) -> str | None:
    """The address a trusted proxy appended to X-Forwarded-For: the last entry, when it is an
    IP address. What comes before it was written by the client (or proxies nobody vouches
    for), and anything else (a host name, "unknown", a port) names nobody."""
    last = header.rsplit(",", 1)[-1].strip()
    try:
        return str(ipaddress.ip_address(last))
    except ValueError:
        return None


class TrustedProxies:
    """ASGI middleware: a request from one of `proxies` (addresses or networks) is taken to
    come from the client its X-Forwarded-For names one hop back, over the scheme its
    X-Forwarded-Proto names (http or https); every other request keeps its own peer and scheme.

    The server (uvicorn) is told to trust nobody's headers (see `gradio_app.trust_proxies`):
    its own reading walks the list back past every trusted address and takes any string, so
    "1.2.3.4, 127.0.0.1" from a local process, or "evil-0", would name a new client each time.
    """

    def __init__(self, app: Any, proxies: Sequence[str] = ()):
        self.app = app
        self.networks = [ipaddress.ip_network(proxy, strict=False) for proxy in proxies]

    def trusted(self, host: str) -> bool:
        try:
            address = ipaddress.ip_address(host)
        except ValueError:
            return False
        if isinstance(address, ipaddress.IPv6Address) and address.ipv4_mapped is not None:
            address = address.ipv4_mapped
        return any(address in network for network in self.networks)

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        peer = scope.get("client") if scope["type"] in ("http", "websocket") else None
        if peer and self.trusted(peer[0]):
            scope = dict(scope)
            if client := forwarded_client(_header(scope, b"x-forwarded-for")):
                scope["client"] = (client, 0)
            proto = _header(scope, b"x-forwarded-proto").rsplit(",", 1)[-1].strip().lower()
            if proto in SCHEMES:
                scope["scheme"] = SCHEMES[proto][scope["type"] == "websocket"]
        await self.app(scope, receive, send)
