"""What installed packages add to the page: tabs beside Chat and hooks into every chat turn.

The app knows no plugin by name. A package declares a function (a `Plug`) under the
entry-point group ``treadwise.web``; `create_app` calls it with the page's settings and access
rules and gets back an `Extension`: tabs
(each of sections, every section naming the handlers a public page keeps for admins) and chat
hooks (web/hooks.py: one may decide who answers a turn, take ratings, or show a panel instead
of the conversation). The experiment harness plugs in its Experiments tab and live
experiments this way; without it installed the app is the chat alone.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Protocol

from treadwise.plugins import Registry
from treadwise.web.access import Access, admin_only
from treadwise.web.hooks import ChatHook

if TYPE_CHECKING:
    import gradio as gr

    from treadwise.settings import Settings

ENTRY_POINT_GROUP = "treadwise.web"
log = logging.getLogger(__name__)


class Section(Protocol):
    """A part of a tab: it builds its components and handlers inside the tab."""

    def build(self, demo: gr.Blocks) -> None: ...

    @property
    def admin_handlers(self) -> Mapping[str, Callable[[], Any] | None]:
        """The methods a visitor of a public page may not call, each with what it answers
        them quietly instead of an error (None: the error), for events of the page itself."""
        ...


@dataclass
class Tab:
    """A tab beside Chat: its title, its page id (tests and links find it by that), sections."""

    title: str
    id: str
    sections: Sequence[Section]


@dataclass
class Extension:
    """What one package adds to the page."""

    tabs: list[Tab] = field(default_factory=list)
    chat_hooks: list[ChatHook] = field(default_factory=list)


@dataclass(frozen=True)
class PageContext:
    """What a plug is given: the page's settings and its access rules (admins, rate limits)."""

    settings: Settings
    access: Access


Plug = Callable[[PageContext], Extension]
PLUGS: Registry[Plug] = Registry(ENTRY_POINT_GROUP)


def extensions(page: PageContext, plugs: Mapping[str, Plug] | None = None) -> list[Extension]:
    """What each plug adds to the page (by default every installed one, by name). One that
    cannot load (a package it needs is not installed) is left out with a line in the log: the
    chat app runs without it."""
    found = []
    for name in PLUGS.names() if plugs is None else plugs:
        try:
            plug = PLUGS.get(name) if plugs is None else plugs[name]
            if plug is not None:
                found.append(plug(page))
        except ImportError as exc:
            log.warning("the page runs without %s: %s", name, exc)
    return found


def guard(section: Section, access: Access) -> None:
    """Make the section's admin handlers refuse anyone else (a public page calls this before
    the section builds, so every event it registers is the guarded one)."""
    for name, quietly in section.admin_handlers.items():
        setattr(section, name, admin_only(getattr(section, name), access, refused=quietly))
