"""Who a request comes from (a signed-in user, or a browser's visitor cookie) and the export
folders only that owner may download from."""

from __future__ import annotations

import os
import secrets
from collections.abc import Mapping
from http.cookies import SimpleCookie
from pathlib import Path
from typing import Any

from treadwise.settings import Settings
from treadwise.web.files import cache_dir
from treadwise.web.server_secret import ServerSecret

VISITOR_COOKIE = "treadwise-visitor"
VISITOR_DAYS = 365
OWNED_DIR = "owned"  # inside Gradio's cache: owned/<owner's folder>/<hash>/<file>
FILE_ROUTES = ("/gradio_api/file=", "/gradio_api/file/")
ID_CHARS, SIGNATURE_CHARS = 32, 16


def request_cookies(scope: Mapping[str, Any]) -> dict[str, str]:
    """The cookies of an ASGI request (the last of a repeated name wins, as in Starlette)."""
    jar: SimpleCookie = SimpleCookie()
    for key, value in scope.get("headers", []):
        if key.lower() == b"cookie":
            try:
                jar.load(value.decode("latin-1"))
            except Exception:  # noqa: BLE001 - a malformed cookie header names nobody
                continue
    return {name: morsel.value for name, morsel in jar.items()}


def session_user(app: Any, cookies: Mapping[str, str]) -> str | None:
    """The user Gradio signed in with the request's access-token cookie, if any."""
    tokens = getattr(app, "tokens", None) or {}
    cookie_id = getattr(app, "cookie_id", "")
    for name in (f"access-token-{cookie_id}", f"access-token-unsecure-{cookie_id}"):
        if (token := cookies.get(name)) and (user := tokens.get(token)):
            return str(user)
    return None


class Owners:
    """Owners of exports: "user:<name>" for a signed-in user, "visitor:<id>" for a browser
    holding the visitor cookie this server gave it (signed, so a client cannot make one up).
    An owner's exports go into a folder named by an HMAC of the owner, which only that owner's
    requests can name: any other user's download of the URL is refused (see OwnedFiles)."""

    def __init__(self, settings: Settings):
        self.secret = ServerSecret(settings)
        self.root = cache_dir(settings) / OWNED_DIR

    def new_visitor(self) -> str:
        visitor = secrets.token_hex(ID_CHARS // 2)
        return f"{visitor}.{self.secret.sign('visitor', visitor, SIGNATURE_CHARS)}"

    def visitor(self, cookie: str | None) -> str | None:
        """The visitor id a cookie holds, when this server signed it."""
        visitor, _, signature = (cookie or "").partition(".")
        if len(visitor) == ID_CHARS and self.secret.verify("visitor", visitor, signature,
                                                            SIGNATURE_CHARS):
            return visitor
        return None

    def owner(self, user: str | None, cookies: Mapping[str, str]) -> str | None:
        if user:
            return f"user:{user}"
        visitor = self.visitor(cookies.get(VISITOR_COOKIE))
        return f"visitor:{visitor}" if visitor else None

    def of_request(self, request: Any) -> str | None:
        """The owner of a Gradio event's request."""
        cookies = getattr(request, "cookies", None) or {}
        return self.owner(getattr(request, "username", None), cookies)

    def folder(self, owner: str) -> Path:
        return self.root / self.secret.sign("owner", owner)

    def may_read(self, path: str, owner: str | None) -> bool:
        """Whether `owner` may download the file at `path` (what follows file= in the URL):
        anything outside the owned folders, and inside them only their own."""
        # As Gradio resolves it, ".." and all (the server already decoded the URL once).
        where = Path(os.path.abspath(path))
        if not where.is_relative_to(self.root):
            return True
        parts = where.relative_to(self.root).parts
        return bool(owner and parts and parts[0] == self.folder(owner).name)


class OwnedFiles:
    """ASGI middleware of a public page: gives each browser a signed visitor cookie, and
    answers 404 to a download from an owned folder by anyone but its owner (a URL seen in a
    proxy log or passed on opens nothing)."""

    def __init__(self, app: Any, settings: Settings):
        self.app = app
        self.owners = Owners(settings)

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        cookies = request_cookies(scope)
        path = scope["path"]
        route = next((r for r in FILE_ROUTES if path.startswith(r)), None)
        if route is not None:
            owner = self.owners.owner(session_user(scope.get("app"), cookies), cookies)
            if not self.owners.may_read(path[len(route):], owner):
                from starlette.responses import PlainTextResponse

                await PlainTextResponse("Not found.", status_code=404)(scope, receive, send)
                return
        if self.owners.visitor(cookies.get(VISITOR_COOKIE)) is not None:
            await self.app(scope, receive, send)
            return
        cookie = self._visitor_cookie(scope["scheme"] == "https")

        async def with_cookie(message: Any) -> None:
            if message["type"] == "http.response.start":
                message = {**message, "headers": [*message.get("headers", []),
                                                  (b"set-cookie", cookie.encode("latin-1"))]}
            await send(message)

        await self.app(scope, receive, with_cookie)

    def _visitor_cookie(self, secure: bool) -> str:
        attributes = ["Path=/", f"Max-Age={VISITOR_DAYS * 86400}", "HttpOnly", "SameSite=Lax"]
        return "; ".join([f"{VISITOR_COOKIE}={self.owners.new_visitor()}", *attributes,
                          *(["Secure"] if secure else [])])
