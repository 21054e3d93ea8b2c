"""A chat turn's choice (what the pickers said) and the hooks that may decide it instead.

A chat hook takes part in every turn, in this order: it builds beside the conversation, in
the settings column and on the pickers, chooses what the turn runs with, then records the
finished turn. The
experiment harness's live experiments are one (an arm decides who answers; thumbs, scores and
a side-by-side panel); web/extensions.py says how a package hands its hooks to the app.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Protocol

if TYPE_CHECKING:
    import gradio as gr

    from treadwise.web.session import ChatSession, Turn


@dataclass(frozen=True)
class Choice:
    """What the pickers said for one turn, as sent (an API caller may send anything), or
    what a hook chose instead: made into one TurnRequest, checked once, before the turn runs
    (web/chat.py)."""

    persona: str
    model: str
    custom: str
    temperature: float
    strategy: str
    arm: tuple[str, str, str] | None = None  # (experiment, arm, visitor): a chat hook decided

    @property
    def spec(self) -> str:
        """The model spec: the custom field when filled in, else the picked model."""
        return (self.custom or "").strip() or self.model or "offline"


class ChatHook(Protocol):
    """Takes part in every chat turn (see the module's docstring)."""

    def build_beside(self, chat: Any, session: Any, conversation: gr.Column) -> None:
        """Components in the chat's row, e.g. a panel shown instead of `conversation`; `chat`
        is the ChatTab (its settings, access, personas, and `follow` to run a turn)."""

    def build_settings(self, demo: gr.Blocks, chatbot: gr.Chatbot, session: Any) -> None:
        """Components under the persona picker, and the page's events that use them."""

    def build_pickers(self, demo: gr.Blocks, pickers: list[Any]) -> None:
        """Events on the persona, model, custom spec, temperature and strategy pickers, e.g.
        disabling them while the hook decides who answers instead."""

    def choose(self, session: ChatSession, choice: Choice, request: gr.Request | None) -> Choice:
        """The turn's persona, model, temperature and strategy: the pickers' `choice`, or
        another one whose `arm` says who decided instead."""
        ...

    def record(self, turn: Turn, arm: tuple[str, str, str] | None) -> None:
        """A finished turn, with the arm `choose` put it in (None: the pickers decided)."""


class ChatHooks:
    """Several chat hooks as one: each builds and records; each chooses from the choice the
    one before it made."""

    def __init__(self, hooks: Sequence[ChatHook] = ()) -> None:
        self.hooks = list(hooks)

    def build_beside(self, chat: Any, session: Any, conversation: gr.Column) -> None:
        for hook in self.hooks:
            hook.build_beside(chat, session, conversation)

    def build_settings(self, demo: gr.Blocks, chatbot: gr.Chatbot, session: Any) -> None:
        for hook in self.hooks:
            hook.build_settings(demo, chatbot, session)

    def build_pickers(self, demo: gr.Blocks, pickers: list[Any]) -> None:
        for hook in self.hooks:
            hook.build_pickers(demo, pickers)

    def choose(self, session: ChatSession, choice: Choice, request: gr.Request | None) -> Choice:
        for hook in self.hooks:
            choice = hook.choose(session, choice, request)
        return choice

    def record(self, turn: Turn, arm: tuple[str, str, str] | None) -> None:
        for hook in self.hooks:
            hook.record(turn, arm)
