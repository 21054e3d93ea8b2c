"""Guard rails for a page the network can reach: who may use which model, sweep, and how often."""

from __future__ import annotations

import bisect
import functools
import inspect
import ipaddress
import threading
import time
from collections import OrderedDict
from collections.abc import Callable, Mapping
from typing import Any

from treadwise.models import available_specs, parse_spec
from treadwise.settings import Settings

WINDOW_S = 60.0
ADDRESS_FACTOR = 3  # a visitor opening new tabs gets at most this many sessions' worth
# Ratings, scores and side-by-side picks a public page takes per session in a minute: far more
# than a person clicks, far fewer than a script stuffing an experiment's tables.
WRITES_PER_MINUTE = 30.0
# Keys a limiter remembers at most: each costs about 300 bytes (more with many events).
MAX_KEYS = 50_000
ADMIN_ONLY = "Only a signed-in admin may do this on a public TreadWise (see TREADWISE_ADMINS)."


class RateLimiter:
    """At most `per_minute` events per key in any sliding minute; 0 means no limit.

    Keys are kept in the order they were last used, so the idle ones are at the front: each
    call forgets the keys whose last event left the window, and past `max_keys` the least
    recently used ones, so memory stays bounded however many keys (addresses, sessions) come.
    """

    def __init__(self, per_minute: float, clock: Callable[[], float] = time.monotonic,
                 max_keys: int = MAX_KEYS):
        self.per_minute = per_minute
        self.clock = clock
        self.max_keys = max_keys
        # key -> its event times in the window, oldest first (a list: a deque costs 10x more)
        self._events: OrderedDict[str, list[float]] = OrderedDict()
        self._lock = threading.Lock()

    def __len__(self) -> int:
        return len(self._events)

    def wait_s(self, key: str, count: bool = True) -> float:
        """0 when one more event is allowed now (counted, unless `count` is False);
        otherwise the seconds to wait."""
        if self.per_minute <= 0:
            return 0.0
        now = self.clock()
        with self._lock:
            events = self._events.get(key)
            if events is not None:
                del events[:bisect.bisect_right(events, now - WINDOW_S)]
                if len(events) >= self.per_minute:
                    return WINDOW_S - (now - events[0])
            if count:
                if events is None:
                    events = self._events[key] = []
                events.append(now)
                self._events.move_to_end(key)
                self._forget(now)
            return 0.0

    def _forget(self, now: float) -> None:
        while self._events:
            oldest = next(iter(self._events.values()))
            if len(self._events) <= self.max_keys and oldest and now - oldest[-1] < WINDOW_S:
                return
            self._events.popitem(last=False)


def address_key(host: str) -> str:
    """The rate-limit key of a client address: an IPv6 client usually holds a whole /64, so
    the /64 is the key; an IPv4 address (also one mapped into IPv6) is its own key."""
    try:
        address = ipaddress.ip_address(host)
    except ValueError:
        return host
    if isinstance(address, ipaddress.IPv6Address):
        if address.ipv4_mapped is not None:
            return str(address.ipv4_mapped)
        return str(ipaddress.ip_network(f"{address}/64", strict=False))
    return str(address)


class Access:
    """What one visitor may do. On a local page (the default) everything is allowed; on a
    public one visitors get the allowed models only, no custom specs, no sweeps and a rate
    limit, and the users named in TREADWISE_ADMINS (signed in through TREADWISE_AUTH) get it all.
    """

    def __init__(self, settings: Settings, env: Mapping[str, str] | None = None):
        self.settings = settings
        self.env = env
        self.sessions = RateLimiter(settings.session_rate)
        self.addresses = RateLimiter(settings.session_rate * ADDRESS_FACTOR)
        writes = WRITES_PER_MINUTE if settings.public else 0.0
        self.writes = RateLimiter(writes)
        self.write_addresses = RateLimiter(writes * ADDRESS_FACTOR)
        self._counting = threading.Lock()

    def is_admin(self, request: Any) -> bool:
        if not self.settings.public:
            return True
        return getattr(request, "username", None) in self.settings.admins

    def model_choices(self, admin: bool) -> list[str]:
        """Specs for the picker: every provider whose key is set, or the allowed ones."""
        specs = available_specs(self.env)
        if admin:
            return specs
        allowed = set(self.settings.public_models)
        return [spec for spec in specs if spec in allowed] or ["offline"]

    def model_refusal(self, spec: str, request: Any) -> str | None:
        """Why this visitor may not use `spec` (None: they may)."""
        if self.is_admin(request):
            return None
        try:
            parse_spec(spec)
        except ValueError:
            return "That model spec is not valid."
        if spec in self.settings.public_models:
            return None
        allowed = ", ".join(self.settings.public_models)
        return f"This public TreadWise offers only these models: {allowed}."

    def rate_refusal(self, session_key: str, request: Any) -> str | None:
        """A short note when this session (or its address) sent too much in the last minute.

        The address is the peer's, or what a proxy in TREADWISE_TRUSTED_PROXIES forwarded for
        it (see forwarded.TrustedProxies), so a client cannot pick it; new sessions share
        their address's budget. A message is counted against both only when both allow it.
        """
        return self._refusal(self.sessions, self.addresses, session_key, request, "messages")

    def write_refusal(self, session_key: str, request: Any) -> str | None:
        """The same for what a visitor stores: ratings, scores and side-by-side picks."""
        return self._refusal(self.writes, self.write_addresses, session_key, request,
                             "ratings and picks")

    def _refusal(self, sessions: RateLimiter, addresses: RateLimiter, session_key: str,
                 request: Any, what: str) -> str | None:
        if self.is_admin(request) and self.settings.public:
            return None
        address = address_key(getattr(getattr(request, "client", None), "host", None)
                              or "unknown")
        with self._counting:
            crowd = addresses.wait_s(address, count=False)
            wait = crowd or sessions.wait_s(session_key, count=False)
            if not wait:
                addresses.wait_s(address)
                sessions.wait_s(session_key)
                return None
        limit = (f"{addresses.per_minute:g} {what} a minute from one address" if crowd
                 else f"{sessions.per_minute:g} {what} a minute")
        return f"Please slow down: this page answers at most {limit}. Try again in " \
               f"{max(1, round(wait))} s."


def accept_any(component: Any) -> Any:
    """Let a picker hand any value to the handler, which refuses a bad one in words.

    Gradio's own checks (a slider's range, a radio's or dropdown's choices) raise an error that
    prints a traceback in the server log for every out-of-range value sent through the API.
    The picker becomes an instance of a subclass, as Gradio rebuilds a component from its class
    when an event updates it (new choices) for one session.
    """
    cls: type = type(component)  # typed: mypy does not take type[Any] as Hashable for the cache
    component.__class__ = _accepting(cls)
    return component


@functools.cache
def _accepting(cls: type) -> type:
    # A "template" of `cls`, so the page draws it as `cls` itself (Gradio's own templates,
    # such as ClearButton, work this way).
    return type(cls.__name__, (cls,), {"__module__": cls.__module__, "is_template": True,
                                       "preprocess": lambda self, payload: payload})


class RefuseUploads:
    """ASGI middleware: the page takes no files, so a public server refuses every upload."""

    def __init__(self, app: Any):
        self.app = app

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        if scope["type"] == "http" and scope["path"].rstrip("/").endswith("/upload"):
            from starlette.responses import PlainTextResponse

            refusal = PlainTextResponse("This TreadWise takes no uploads.", status_code=403)
            await refusal(scope, receive, send)
            return
        await self.app(scope, receive, send)


def admin_only(fn: Callable[..., Any], access: Access,
               refused: Callable[[], Any] | None = None) -> Callable[..., Any]:
    """`fn` (a plain, non-generator Gradio handler) refusing visitors who are not admins:
    with an error, or quietly with what `refused()` returns (for an event of the page itself,
    such as its load, where an error would greet every visitor).

    Gradio passes a handler the request and a progress tracker by reading its signature, so
    the wrapper shows `fn`'s parameters after a leading `request` one.
    """
    import gradio as gr

    @functools.wraps(fn)
    def guarded(request: gr.Request, *args: Any, **kwargs: Any) -> Any:
        if access.is_admin(request):
            return fn(*args, **kwargs)
        if refused is not None:
            return refused()
        raise gr.Error(ADMIN_ONLY, print_exception=False)

    signature = inspect.signature(fn)
    first = inspect.Parameter("request", inspect.Parameter.POSITIONAL_OR_KEYWORD,
                              annotation=gr.Request)
    guarded.__signature__ = signature.replace(  # type: ignore[attr-defined]
        parameters=[first, *signature.parameters.values()])
    guarded.__annotations__ = {**getattr(fn, "__annotations__", {}), "request": gr.Request}
    return guarded
