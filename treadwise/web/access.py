"""Guard rails for a page the network can reach: who may use which model, sweep, and how often."""

from __future__ import annotations

import functools
import inspect
import threading
import time
from collections import deque
from collections.abc import Callable, Mapping
from typing import Any

from treadwise.models import available_specs, parse_spec
from treadwise.settings import Settings

WINDOW_S = 60.0
ADDRESS_FACTOR = 3  # a visitor opening new tabs gets at most this many sessions' worth
ADMIN_ONLY = "Only a signed-in admin may do this on a public TreadWise (see TREADWISE_ADMINS)."


class RateLimiter:
    """At most `per_minute` events per key in any sliding minute; 0 means no limit."""

    def __init__(self, per_minute: float, clock: Callable[[], float] = time.monotonic):
        self.per_minute = per_minute
        self.clock = clock
        self._events: dict[str, deque[float]] = {}
        self._lock = threading.Lock()

    def wait_s(self, key: str) -> float:
        """0 when one more event is allowed now (and count it); otherwise seconds to wait."""
        if self.per_minute <= 0:
            return 0.0
        now = self.clock()
        with self._lock:
            events = self._events.setdefault(key, deque())
            while events and now - events[0] >= WINDOW_S:
                events.popleft()
            if len(events) >= self.per_minute:
                return WINDOW_S - (now - events[0])
            events.append(now)
            if len(self._events) > 10_000:  # forget idle keys so the table stays small
                self._events = {k: v for k, v in self._events.items() if v}
            return 0.0


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
        """A short note when this session (or its address) sent too much in the last minute."""
        if self.is_admin(request) and self.settings.public:
            return None
        address = getattr(getattr(request, "client", None), "host", None) or "unknown"
        wait = self.sessions.wait_s(session_key) or self.addresses.wait_s(address)
        if not wait:
            return None
        return (f"Please slow down: this page answers at most {self.settings.session_rate:g} "
                f"messages a minute. Try again in {max(1, round(wait))} s.")


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


def admin_only(fn: Callable[..., Any], access: Access) -> Callable[..., Any]:
    """`fn` (a plain, non-generator Gradio handler) refusing visitors who are not admins.

    Gradio passes a handler the request and a progress tracker by reading its signature, so
    the wrapper shows `fn`'s parameters after a leading `request` one.
    """
    import gradio as gr

    @functools.wraps(fn)
    def guarded(request: gr.Request, *args: Any, **kwargs: Any) -> Any:
        if not access.is_admin(request):
            raise gr.Error(ADMIN_ONLY, print_exception=False)
        return fn(*args, **kwargs)

    signature = inspect.signature(fn)
    first = inspect.Parameter("request", inspect.Parameter.POSITIONAL_OR_KEYWORD,
                              annotation=gr.Request)
    guarded.__signature__ = signature.replace(  # type: ignore[attr-defined]
        parameters=[first, *signature.parameters.values()])
    guarded.__annotations__ = {**getattr(fn, "__annotations__", {}), "request": gr.Request}
    return guarded
