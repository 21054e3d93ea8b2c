"""What a visitor keeps of a conversation: its resume link and its exports, for its owner only."""

from __future__ import annotations

import logging
import shutil
import weakref
from collections.abc import Callable
from pathlib import Path
from typing import Any

from treadwise.settings import Settings
from treadwise.storage.leads import StoreUnavailable
from treadwise.web.chat_export import export_files
from treadwise.web.owners import Owners
from treadwise.web.resume import ThreadLinks
from treadwise.web.session import ChatSession

log = logging.getLogger(__name__)


class Keeping:
    """Links and exports of every session of the page.

    With a login, a conversation's link opens only for the user who made it (or an admin);
    on a public page each owner's exports sit in a folder only that owner's requests may
    download from, and a session's older exports are deleted as new ones are written."""

    def __init__(self, settings: Settings):
        from treadwise.privacy.erasure import on_erasure

        self.settings = settings
        self.links = ThreadLinks(settings)
        self.owners = Owners(settings)
        # An erasure ("Forget me", or the customer asking in words) revokes the conversation's
        # links; held weakly, so a page that is gone leaves no hook writing to its store.
        on_erasure(_while_alive(weakref.WeakMethod(self.links.revoke)))

    def identify(self, session: ChatSession, request: Any) -> None:
        """Note who the session's requests come from (the same for all of them)."""
        username = getattr(request, "username", None)
        session.user = username if self.settings.auth and username else None
        session.owner = self.owners.of_request(request)

    def thread_of(self, link: object, session: ChatSession, request: Any) -> str | None:
        self.identify(session, request)
        try:
            return self.links.thread_of(link, session.user)
        except StoreUnavailable as exc:
            log.warning("conversation links unavailable: %s", exc)
            return None

    def exports(self, session: ChatSession, cache_dir: str) -> tuple[str | None, str | None]:
        """The session's Markdown and JSON exports, written now (None, None: none for it)."""
        if not self.settings.public:
            folder = Path(cache_dir)  # a local page's one user owns every export
        elif session.owner is not None:
            folder = self.owners.folder(session.owner)
        else:
            return None, None  # a client with no visitor cookie owns nothing to download
        try:
            resume = self.links.link(session.thread_id, session.user)
        except StoreUnavailable as exc:
            log.warning("conversation links unavailable: %s", exc)
            resume = None
        earlier = list(session.exports)
        paths = export_files(session, str(folder), resume)
        if self.settings.public:  # an export's URL lives until the next one is written
            for old in set(earlier) - set(paths):
                shutil.rmtree(Path(old).parent, ignore_errors=True)  # its <hash>/ folder
            session.exports = list(paths)
        return paths


def link_note(settings: Settings) -> str:
    """What a conversation link grants, said where the exports are."""
    who = ("only you, signed in, or an admin can open it" if settings.auth else
           "whoever has it can read and continue the conversation, so keep it like a password")
    return (f"The JSON export holds a link that reopens this conversation: {who}. It stops "
            f"working after {settings.link_days:g} days; Forget me (or asking the assistant "
            "to delete your data) ends it at once, a new chat does not.")


def _while_alive(method: weakref.WeakMethod) -> Callable[[str], None]:
    def revoke(thread_id: str) -> None:
        if (alive := method()) is not None:
            alive(thread_id)

    return revoke
