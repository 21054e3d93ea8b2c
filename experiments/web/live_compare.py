"""Side-by-side mode of a live experiment: two arms answer each message, the visitor picks one.

Each arm keeps its own conversation with the visitor (its own memory thread), as in Chatbot
Arena; which arm is shown first is drawn anew each turn, and the arms stay unnamed (answer 1,
answer 2) until the visitor picks, when that turn's footers show their persona and model.
"""

from __future__ import annotations

import random
import uuid
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import gradio as gr

from treadwise.errors import ModelConfigError, redact
from treadwise.models import display_name
from treadwise.storage.leads import StoreUnavailable
from treadwise.web.render import LATEX_DELIMITERS, render, safe_markdown
from treadwise.web.session import ChatSession, Turn

if TYPE_CHECKING:
    from experiments.live.definition import Arm

HIDDEN = "hidden until you pick"
# The visitor's choices as the API takes them: the first answer, the second, or neither.
CHOICES: dict[str, int | str] = {"1": 0, "2": 1, "tie": "tie", "both_bad": "both_bad"}
NOTE = ("You are helping us compare assistants: each message is answered by two of them, in a "
        "random order and unnamed. Pick the better answer (or a tie, or both bad): the names "
        "show once you pick. Only your pick is stored, never the conversation.")


@dataclass
class Round:
    """One message answered by two arms."""

    experiment: str
    arms: tuple[Arm, Arm]  # as shown: first, second
    turns: tuple[Turn, Turn]
    id: str = field(default_factory=lambda: uuid.uuid4().hex[:12])


@dataclass
class Comparison:
    """A visitor's side-by-side conversation: one memory thread per arm, the rounds shown."""

    base: str = field(default_factory=lambda: uuid.uuid4().hex)
    rounds: list[Round] = field(default_factory=list)
    running: bool = False

    def thread(self, arm: str) -> str:
        return f"{self.base}-{arm}"


def new_comparison() -> Comparison:
    return Comparison()  # gr.State takes a factory function (a dataclass would be serialised)


class ComparePanel:
    """The panel a visitor of a side-by-side experiment chats in instead of the usual one."""

    def __init__(self, tab: Any, live: Any):
        self.tab, self.live = tab, live  # the ChatTab (its agent, access, personas) and LiveChat
        self.rng = random.Random()
        self.swap: list[Any] = []

    def build(self, session: Any, conversation: gr.Column) -> None:
        state = gr.State(new_comparison)
        with gr.Column(scale=7, min_width=300, visible=False, elem_id="side-by-side") as panel:
            gr.Markdown(NOTE, elem_classes="tw-note")
            with gr.Row(equal_height=True):
                chats = [gr.Chatbot(label=f"Answer {n}", elem_id=f"sbs-answer-{n}", height=520,
                                    layout="bubble", feedback_options=(), allow_tags=False,
                                    sanitize_html=True, latex_delimiters=LATEX_DELIMITERS,
                                    group_consecutive_messages=False) for n in (1, 2)]
            with gr.Row(equal_height=True):
                message = gr.Textbox(show_label=False, lines=1, max_lines=8, scale=8,
                                     elem_id="sbs-message",
                                     placeholder="Type a message; two assistants answer.")
                send = gr.Button("Send", variant="primary", scale=1, elem_id="sbs-send")
            with gr.Row():
                buttons = {value: gr.Button(text, size="sm", elem_id=f"sbs-{value}")
                           for value, text in (("1", "Answer 1 is better"),
                                               ("2", "Answer 2 is better"),
                                               ("tie", "Tie"), ("both_bad", "Both are bad"))}
                new = gr.Button("New comparison", size="sm", elem_id="sbs-new")
            status = gr.Markdown(elem_id="sbs-status")
        turn: dict[str, Any] = {"show_progress": "hidden", "concurrency_id": "chat-turn"}
        outputs = [*chats, message, status]
        message.submit(self.send, [message, state, session], outputs, api_name="side_by_side",
                       **turn)
        send.click(self.send, [message, state, session], outputs, api_name="side_by_side_click",
                   api_visibility="private", **turn)
        for value, button in buttons.items():
            button.click(self._picker(value), [state, session], [*chats, status],
                         api_name=f"side_by_side_{value}", api_visibility="private")
        choice = gr.Textbox(visible=False)
        gr.Button(visible=False).click(self.pick, [choice, state, session], [*chats, status],
                                       api_name="side_by_side_pick")
        new.click(self.restart, [state], [*chats, status], api_name="side_by_side_new")
        # Shown instead of `conversation` by LiveChat.arrive: one load event for both, as
        # Gradio may lose a new session's state to concurrent load events.
        self.swap = [panel, conversation]

    def send(self, message: Any, state: Comparison, session: ChatSession,
             request: gr.Request) -> Iterator[tuple[Any, ...]]:
        """Both arms' answers to the message, one after the other, as they stream."""
        message = message if isinstance(message, str) else ""
        refusal = self._refusal(message, state, session, request)
        if refusal is not None:
            yield *self._view(state), gr.skip(), refusal
            return
        experiment = self.live.experiment()
        if experiment is None or not experiment.side_by_side:
            yield *self._view(state), gr.skip(), "No side-by-side experiment is running now."
            return
        arms = experiment.pair(self.rng)
        try:
            requests = [self.live.request_for(arm, state.thread(arm.name)) for arm in arms]
        except ModelConfigError as exc:  # an arm that cannot run here any more
            yield *self._view(state), gr.skip(), f"This comparison cannot run now: {exc}"
            return
        turns = tuple(self._hidden_turn(message, arm, n) for n, arm in enumerate(arms, 1))
        state.rounds.append(Round(experiment.name, arms, turns))  # type: ignore[arg-type]
        state.running = True
        try:
            yield *self._view(state), "", ""
            for arm, shown, asked in zip(arms, turns, requests, strict=True):
                for _ in self.tab.follow(shown, asked):
                    yield *self._view(state), gr.skip(), gr.skip()
                self.live.record(shown, (experiment.name, arm.name, self.live.visitor(session)))
        finally:
            state.running = False
        yield *self._view(state), gr.skip(), "Which answer is better? Pick one below."

    def _refusal(self, message: str, state: Comparison, session: ChatSession,
                 request: gr.Request) -> str | None:
        if state.running:
            return "The two answers are still being written: wait for them to finish."
        if not message.strip():
            return "Type a message first."
        limit = self.tab.settings.max_input_chars
        if len(message) > limit:
            return f"Messages may be up to {limit:,} characters: shorten this one."
        return self.tab.access.rate_refusal(session.key, request)

    def _hidden_turn(self, message: str, arm: Arm, place: int) -> Turn:
        return Turn(user=message, persona=arm.persona, persona_name=f"Answer {place}",
                    spec=redact(arm.model), model=HIDDEN, temperature=arm.temperature)

    def _picker(self, value: str) -> Any:
        """A button's handler: `pick` with its value (Gradio sees the request it needs)."""

        def pick(state: Comparison, session: ChatSession, request: gr.Request) -> tuple[Any, ...]:
            return self.pick(value, state, session, request)

        return pick

    def pick(self, choice: Any, state: Comparison, session: ChatSession,
             request: gr.Request) -> tuple[Any, ...]:
        """Store the visitor's pick for the last round, then name its two arms."""
        value = CHOICES.get(str(choice).strip().lower())
        last = state.rounds[-1] if state.rounds else None
        if last is None or state.running or value is None:
            why = ("Pick 1, 2, tie or both_bad." if value is None and last is not None
                   else "Send a message first, and wait for both answers.")
            return *self._view(state), why
        if slow := self.tab.access.write_refusal(session.key, request):
            return *self._view(state), slow
        names = (last.arms[0].name, last.arms[1].name)
        winner: str = names[value] if isinstance(value, int) else value
        try:
            found = self.live.store.get(last.experiment)
            if found is None or found["status"] != "running":
                return *self._view(state), "That experiment has ended: thank you all the same."
            self.live.store.pick(last.experiment, self.live.visitor(session), last.id, names,
                                 winner)
        except StoreUnavailable as exc:
            return *self._view(state), f"Your pick was not saved: {exc}."
        for arm, shown in zip(last.arms, last.turns, strict=True):
            persona = self.tab.personas.get(arm.persona)
            shown.persona_name = persona.name if persona else arm.persona
            shown.model = display_name(shown.spec)
        said = {0: "answer 1", 1: "answer 2", "tie": "a tie", "both_bad": "both bad"}[value]
        first, second = (t.persona_name for t in last.turns)
        return *self._view(state), safe_markdown(
            f"Thank you: you picked {said}. Answer 1 came from **{first}**, answer 2 from "
            f"**{second}**; picking again replaces your pick.")

    def restart(self, state: Comparison) -> tuple[Any, ...]:
        if state.running:
            return *self._view(state), "Wait for both answers first."
        state.base, state.rounds = uuid.uuid4().hex, []
        return *self._view(state), ""

    def _view(self, state: Comparison) -> tuple[Any, Any]:
        return (render([r.turns[0] for r in state.rounds]),
                render([r.turns[1] for r in state.rounds]))
