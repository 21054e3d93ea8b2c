"""The chat page's "Forget me" button: erase what this conversation holds, then say what went."""

from __future__ import annotations

import logging
from pathlib import Path
from typing import TYPE_CHECKING, Any

import gradio as gr

if TYPE_CHECKING:
    from treadwise.web.session import ChatSession

log = logging.getLogger(__name__)
BUSY = "A reply is still being written: press Stop first, then Forget me."


def forget_button() -> gr.Button:
    """The visible control, next to New chat (rendered where it is made)."""
    return gr.Button("Forget me", size="sm", elem_id="forget-me", variant="secondary")


def wire(tab: Any, button: gr.Button, session: gr.State, page: list[Any]) -> None:
    """Clicking erases this conversation (memory, its leads and questions, its exports);
    `tab` is the ChatTab, whose runner holds the agent."""
    button.click(lambda state: forget_me(tab, state), [session], page, api_name="forget_me")


def forget_me(tab: Any, session: ChatSession) -> tuple[Any, ...]:
    """Erase everything this conversation holds, start afresh, and show what was erased (the
    account is shown once and kept nowhere)."""
    if session.running:
        gr.Warning(BUSY)
        return (gr.skip(),) * 5
    try:
        report = tab.runner.agent.get().forget(session.thread_id)
    except Exception as exc:  # noqa: BLE001 - a failed erasure is said, never claimed
        log.warning("Forget me failed: %s", type(exc).__name__)
        gr.Warning("I couldn't erase this conversation right now; nothing was deleted. "
                   "Please try again in a moment.")
        return (gr.skip(),) * 5
    for path in session.exports:
        Path(path).unlink(missing_ok=True)
    session.reset()
    said = (f"I've erased {report.describe()}. Nothing of this conversation is kept, and "
            "nobody will contact you." if report.anything else
            "There was nothing to erase: this conversation held nothing about you.")
    gr.Info(said)
    notice = [{"role": "assistant", "content": said}]
    return notice, "", gr.Button(interactive=True), \
        gr.DownloadButton(value=None, interactive=False), \
        gr.DownloadButton(value=None, interactive=False)
