"""Signing in, in front of Gradio's /login: wrong passwords slow the next try, the cookie is
Secure behind HTTPS, and a session ends after an idle time or at /logout."""

from __future__ import annotations

import hashlib
import hmac
import json
import math
import secrets
import threading
import time
from collections.abc import Callable
from typing import Any

from treadwise.settings import Settings
from treadwise.web.access import address_key
from treadwise.web.login_throttle import FORGET_S, MAX_WAIT_S, LoginThrottle
from treadwise.web.owners import request_cookies
from treadwise.web.server_secret import ServerSecret

BROWSER_COOKIE = "treadwise-signed-in"  # "this browser signed in as <user> before"
BROWSER_DAYS = 365
MAX_FORM_BYTES = 4096
HEARTBEAT = "/gradio_api/heartbeat/"  # an open tab's keep-alive is not activity
WRONG = "Incorrect credentials."
# Gradio's login page shows only its own words for a 400 and nothing for another status: this
# shows the server's reason for a refused try (a 429) above the form.
LOGIN_NOTE_JS = """<script>(() => {
  const fetch0 = window.fetch;
  window.fetch = async (...args) => {
    const response = await fetch0(...args);
    const url = new URL(String(args[0] && args[0].url || args[0]), location.href);
    if (response.status === 429 && /\\/login\\/?$/.test(url.pathname)) {
      response.clone().json().then((body) => {
        let note = document.getElementById("tw-login-wait");
        if (!note) {
          note = document.createElement("p");
          note.id = "tw-login-wait";
          note.setAttribute("role", "alert");
          const button = [...document.querySelectorAll("button")]
            .find((b) => /log\\s*in|sign\\s*in/i.test(b.textContent || ""));
          (button ? button.parentElement : document.body).prepend(note);
        }
        note.textContent = body.detail;
      }).catch(() => {});
    }
    return response;
  };
})();</script>"""


def _digest(text: str) -> bytes:
    return hashlib.sha256(text.encode()).digest()


class SignIn:
    """ASGI middleware over a Gradio app with a login (TREADWISE_AUTH).

    POST /login is answered here: a try waits as long as LoginThrottle says (429 with the
    reason and Retry-After), every name costs the same work whether it exists or not, and a
    success makes Gradio's token with one cookie: Secure behind HTTPS (a trusted proxy's
    X-Forwarded-Proto), a plain one on http (127.0.0.1). Gradio's own login would also set an
    `access-token-unsecure-` copy without Secure on every scheme. Every other request of a
    signed-in browser keeps its session alive; one idle for TREADWISE_SESSION_IDLE_MINUTES
    finds its token gone (as after /logout, which Gradio handles).
    """

    def __init__(self, app: Any, settings: Settings, throttle: LoginThrottle | None = None,
                 clock: Callable[[], float] = time.monotonic):
        self.app = app
        self.passwords = {user: _digest(password) for user, password in settings.auth}
        self.unknown = _digest(secrets.token_hex(16))  # compared against for unknown names
        self.throttle = throttle or LoginThrottle(clock)
        self.secret = ServerSecret(settings)
        self.idle_s = settings.session_idle_minutes * 60
        self.clock = clock
        self.seen: dict[str, float] = {}  # token -> its browser's last request
        self._lock = threading.Lock()

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        path, app = scope["path"].rstrip("/") or "/", scope.get("app")
        if path == "/login" and scope["method"] == "POST":
            await self._login(scope, receive, send, app)
            return
        self._expire(app, request_cookies(scope), scope["path"].startswith(HEARTBEAT))
        if path == "/" and scope["method"] == "GET":
            send = _with_script(send)
        await self.app(scope, receive, send)
        if path == "/logout":
            self._forget_ended(app)

    def _expire(self, app: Any, cookies: dict[str, str], heartbeat: bool) -> None:
        tokens = getattr(app, "tokens", None)
        if tokens is None:
            return
        cookie_id, now = getattr(app, "cookie_id", ""), self.clock()
        for name in (f"access-token-{cookie_id}", f"access-token-unsecure-{cookie_id}"):
            token = cookies.get(name)
            if not token or token not in tokens:
                continue
            with self._lock:
                last = self.seen.get(token)
                if last is not None and now - last > self.idle_s:
                    tokens.pop(token, None)
                    del self.seen[token]
                elif not heartbeat or last is None:
                    self.seen[token] = now

    def _forget_ended(self, app: Any) -> None:
        tokens = getattr(app, "tokens", None) or {}
        with self._lock:
            for token in [t for t in self.seen if t not in tokens]:
                del self.seen[token]

    async def _login(self, scope: Any, receive: Any, send: Any, app: Any) -> None:
        form = await _read_form(scope, receive)
        if form is None:
            await _json(send, 400, {"detail": "Send a user name and a password."})
            return
        user, password = form.get("username", "").strip(), form.get("password", "")
        cookies = request_cookies(scope)
        address = address_key((scope.get("client") or ("unknown",))[0])
        wait, whose = self.throttle.wait_s(user, address, self._known_browser(cookies, user))
        if wait > 0:
            seconds = math.ceil(wait)
            where = "from your address" if whose == "address" else "for this user"
            detail = (f"Too many failed sign-ins {where}: wait {seconds} s before trying "
                      f"again. Each wrong password makes the wait longer (up to "
                      f"{MAX_WAIT_S[whose] / 60:g} min); it starts afresh after "
                      f"{FORGET_S / 60:g} minutes without one.")
            await _json(send, 429, {"detail": detail}, [("retry-after", str(seconds))])
            return
        expected = self.passwords.get(user, self.unknown)
        # The same work for a name that exists and one that does not: timing tells nothing.
        if not (hmac.compare_digest(_digest(password), expected) and user in self.passwords):
            self.throttle.failed(user, address)
            await _json(send, 400, {"detail": WRONG})
            return
        token = secrets.token_urlsafe(32)
        app.tokens[token] = user
        now = self.clock()
        with self._lock:
            # Sessions idle too long are ended here too, so browsers closed without a logout
            # leave neither Gradio's token nor ours behind.
            for old in [t for t, last in self.seen.items() if now - last > self.idle_s]:
                app.tokens.pop(old, None)
                del self.seen[old]
            self.seen[token] = now
        secure = scope["scheme"] == "https"
        name = f"access-token-{app.cookie_id}" if secure else \
            f"access-token-unsecure-{app.cookie_id}"
        cookies_out = [_cookie(name, token, "/", None, secure),
                       _cookie(BROWSER_COOKIE, self._browser_mark(user), "/login",
                               BROWSER_DAYS * 86400, secure)]
        await _json(send, 200, {"success": True}, [("set-cookie", c) for c in cookies_out])

    def _browser_mark(self, user: str) -> str:
        nonce = secrets.token_hex(8)
        return f"{nonce}.{self.secret.sign('browser', f'{user}:{nonce}', 32)}"

    def _known_browser(self, cookies: dict[str, str], user: str) -> bool:
        nonce, _, signature = cookies.get(BROWSER_COOKIE, "").partition(".")
        return bool(nonce) and self.secret.verify("browser", f"{user}:{nonce}", signature)


def _cookie(name: str, value: str, path: str, max_age: int | None, secure: bool) -> str:
    parts = [f"{name}={value}", f"Path={path}", "HttpOnly", "SameSite=Lax"]
    if max_age is not None:
        parts.append(f"Max-Age={max_age}")
    if secure:
        parts.append("Secure")
    return "; ".join(parts)


async def _read_form(scope: Any, receive: Any) -> dict[str, str] | None:
    """The login form's fields (URL-encoded or multipart, as Gradio's page sends it), or None
    for a body that is not one or is larger than a login form can be."""
    from starlette.requests import Request

    body = b""
    while True:
        message = await receive()
        body += message.get("body", b"")
        if len(body) > MAX_FORM_BYTES:
            return None
        if not message.get("more_body"):
            break

    async def replay() -> dict[str, Any]:
        return {"type": "http.request", "body": body, "more_body": False}

    try:
        form = await Request(scope, replay).form(max_files=0, max_fields=8)
    except Exception:  # noqa: BLE001 - whatever the body holds, it is not a login form
        return None
    return {key: value for key, value in form.items() if isinstance(value, str)}


async def _json(send: Any, status: int, payload: dict[str, Any],
                headers: list[tuple[str, str]] | None = None) -> None:
    body = json.dumps(payload).encode()
    raw = [(b"content-type", b"application/json"), (b"content-length", str(len(body)).encode()),
           (b"cache-control", b"no-store"),
           *((k.encode(), v.encode("latin-1")) for k, v in headers or [])]
    await send({"type": "http.response.start", "status": status, "headers": raw})
    await send({"type": "http.response.body", "body": body})


def _with_script(send: Any) -> Any:
    """`send` with LOGIN_NOTE_JS put into an HTML page's head."""
    start: dict[str, Any] = {}

    async def sending(message: Any) -> None:
        if message["type"] == "http.response.start":
            kind = dict(message.get("headers", [])).get(b"content-type", b"")
            if kind.startswith(b"text/html"):
                start.update(message)
                return
        elif start and message["type"] == "http.response.body":
            if message.get("more_body"):  # a streamed page: leave it as it is
                await send(start)
                start.clear()
            else:
                body = message.get("body", b"").replace(b"</head>",
                                                        LOGIN_NOTE_JS.encode() + b"</head>", 1)
                headers = [(k, v) for k, v in start["headers"] if k != b"content-length"]
                headers.append((b"content-length", str(len(body)).encode()))
                await send({**start, "headers": headers})
                start.clear()
                message = {**message, "body": body}
        await send(message)

    return sending
