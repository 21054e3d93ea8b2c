"""The live experiments' chat hook: a visitor's sticky arm, their turns and ratings."""

from __future__ import annotations

import dataclasses
import logging
import re
import threading
from typing import TYPE_CHECKING, Any

import gradio as gr

from experiments.live.definition import from_stored
from experiments.live.store import SCORES
from treadwise.agent.request import TurnRequest
from treadwise.settings import Settings
from treadwise.storage.leads import StoreUnavailable, thread_key
from treadwise.tools.business_results import InterestResult
from treadwise.web.access import Access, accept_any
from treadwise.web.owners import Owners
from treadwise.web.render import feedback_values, message_at
from treadwise.web.session import ChatSession, Turn, visitor_key

if TYPE_CHECKING:
    from experiments.live.definition import Arm, LiveExperiment

# The browser keeps a random visitor id in localStorage, so a reload (or a ?thread= link opened
# in the same browser) keeps the arm; the server only ever stores a hash of it.
VISITOR_JS = """() => {
  let id = null;
  try { id = localStorage.getItem("treadwise-visitor"); } catch (e) {}
  if (!id) {
    const bytes = crypto.getRandomValues(new Uint8Array(16));  // randomUUID needs https
    id = Array.from(bytes, (b) => b.toString(16).padStart(2, "0")).join("");
    try { localStorage.setItem("treadwise-visitor", id); } catch (e) {}
  }
  return [id];
}"""
VISITOR_RE = re.compile(r"[0-9a-fA-F-]{16,64}")
LEAD_TOOL = "record_customer_interest"
THUMBS = ("Like", "Dislike")
# What the chat's persona, model, temperature and strategy pickers say while an experiment
# decides who answers instead (they are disabled then).
SIDE_BY_SIDE_PICKERS = ("A side-by-side experiment is running: the two assistants it compares "
                        "answer each message, whatever these pickers say.")
ARM_PICKERS = ("A live experiment is running: it decides which assistant answers you, "
               "whatever these pickers say.")
VISITORS_KEPT = 10_000  # page sessions whose browser id is kept (see LiveChat.choose)
log = logging.getLogger(__name__)


class LiveChat:
    """Puts each visitor of a running live experiment in one arm and records what happens."""

    def __init__(self, settings: Settings, access: Access | None = None):
        self.settings = settings
        self.access = access or Access(settings)
        # Who a visitor is: the signed-in user, or the browser's signed visitor cookie, as the
        # server says; the arm is drawn from an HMAC of that under the server's secret, so no
        # id a client sends can pick its arm (see visitor).
        self.owners = Owners(settings)
        self._store: Any = None
        self.swap: list[Any] = []  # the side-by-side panel and the conversation it replaces
        self._visitors: dict[str, str] = {}  # Gradio session hash -> browser id
        self._lock = threading.Lock()

    def _remember(self, request: gr.Request | None, visitor: str) -> None:
        page = getattr(request, "session_hash", None)
        if not page:
            return
        with self._lock:
            self._visitors[page] = visitor
            if len(self._visitors) > VISITORS_KEPT:
                self._visitors.pop(next(iter(self._visitors)))

    @property
    def store(self) -> Any:
        if self._store is None:
            from experiments.live.store import open_live_store

            self._store = open_live_store(self.settings.data_dir, self.settings.database_url)
        return self._store

    def experiment(self) -> LiveExperiment | None:
        try:
            running = self.store.running()
        except StoreUnavailable as exc:
            log.warning("live experiments unavailable: %s", exc)
            return None
        return from_stored(running["definition"]) if running else None

    def decides(self) -> str | None:
        """Why the chat's pickers do not decide who answers (a live experiment runs), or None."""
        experiment = self.experiment()
        if experiment is None:
            return None
        if experiment.side_by_side:
            return SIDE_BY_SIDE_PICKERS
        return ARM_PICKERS

    def pickers(self) -> tuple[Any, ...]:
        """The chat's pickers, disabled and saying why while an experiment decides for them."""
        if (why := self.decides()) is None:
            return (gr.skip(),) * 5
        return (gr.Radio(interactive=False, info=why), gr.Dropdown(interactive=False, info=why),
                gr.Textbox(interactive=False), gr.Slider(interactive=False, info=why),
                gr.Dropdown(interactive=False, info=why))

    def build_pickers(self, demo: gr.Blocks, pickers: list[Any]) -> None:
        """Persona, model, custom spec, temperature and strategy: disabled on load while an
        experiment runs. No input: this load must not race `arrive` for the new session."""
        demo.load(self.pickers, None, pickers, api_visibility="private", show_progress="hidden")

    def arm(self, session: ChatSession) -> tuple[LiveExperiment, Arm, str] | None:
        """(experiment, arm, visitor) for the session, the arm recorded the first time. The
        visitor is the conversation's first one: a thread reopened from its link in another
        browser (or on another replica) stays in its arm."""
        experiment = self.experiment()
        if experiment is None or experiment.side_by_side:  # live_compare.py answers those
            return None
        try:
            visitor = self.store.link_thread(experiment.name, thread_key(session.thread_id),
                                             self.visitor(session))
            name = self.store.assign(experiment.name, visitor, experiment.pick(visitor).name)
        except StoreUnavailable as exc:
            log.warning("live experiment assignment failed: %s", exc)
            return None
        arm = experiment.arm(name)
        return (experiment, arm, visitor) if arm is not None else None

    def visitor(self, session: ChatSession) -> str:
        """How the experiment tables name the session's visitor (see visitor_key)."""
        return visitor_key(session, self.owners.secret)

    def identify(self, session: ChatSession, request: gr.Request | None) -> None:
        """Take the visitor the server knows (signed-in user, visitor cookie), if any."""
        if request is not None and (owner := self.owners.of_request(request)):
            session.visitor = owner

    def choose(self, session: ChatSession, choice: Any, request: gr.Request | None = None) -> Any:
        """The pickers' choice, or the visitor's arm's when an experiment is running."""
        self.identify(session, request)
        if not session.visitor and request is not None:
            # Gradio may lose a new page's session state to load events creating it at once
            # (its StateHolder is unlocked): the browser id the page sent is kept here too.
            with self._lock:
                session.visitor = self._visitors.get(getattr(request, "session_hash", ""), "")
        found = self.arm(session)
        if found is None:
            return choice
        experiment, arm, visitor = found
        return dataclasses.replace(choice, persona=arm.persona, model=arm.model, custom="",
                                   temperature=arm.temperature, strategy=arm.strategy,
                                   arm=(experiment.name, arm.name, visitor))

    def request_for(self, arm: Arm, thread_id: str) -> TurnRequest:
        """The turn request an arm answers with in the conversation `thread_id` (the
        side-by-side panel's two arms), checked once like every request."""
        return TurnRequest.read(persona=arm.persona, model=arm.model,
                                temperature=arm.temperature, strategy=arm.strategy,
                                thread_id=thread_id, personas_dir=self.settings.personas_dir)

    def record(self, turn: Turn, arm: tuple[str, str, str] | None) -> None:
        """A finished turn's events: it happened, it failed, it recorded a lead."""
        if arm is None:
            return
        turn.arm = arm
        kinds = ["turn"]
        if turn.status == "error":
            kinds.append("error")
        if any(step.name == LEAD_TOOL and step.error is None
               and isinstance(step.artifact, InterestResult) and step.artifact.outcome == "saved"
               for step in turn.steps):
            kinds.append("lead")
        try:
            for kind in kinds:
                self.store.record(arm[0], arm[2], arm[1], turn.id, kind)
        except StoreUnavailable as exc:
            log.warning("live experiment event lost: %s", exc)

    def rate(self, session: ChatSession, index: Any, liked: Any,
             request: gr.Request | None = None) -> None:
        """Store a thumb (True up, False down) for the reply at `index`; "" or None undoes it.
        The turn keeps the thumb stored, for the page to draw (render.feedback_values)."""
        found = message_at(session.turns, index)
        if found is None:
            return
        turn, reply = found
        if turn.arm is None or turn.running:
            return
        if slow := self.access.write_refusal(session.key, request):
            gr.Warning(slow)
            return
        experiment, arm, visitor = turn.arm
        try:
            stored = self.store.get(experiment)
            if stored is None or stored["status"] != "running":
                gr.Info("That experiment has ended: thank you, ratings are no longer needed.")
                return
            if liked is True or liked is False:
                self.store.record(experiment, visitor, arm, turn.id, "rating",
                                  1.0 if liked else -1.0)
                turn.thumb = (reply, THUMBS[0] if liked else THUMBS[1])
            else:
                self.store.unrate(experiment, visitor, turn.id)
                turn.thumb = None
        except StoreUnavailable as exc:
            gr.Warning(f"Your rating was not saved: {exc}.")

    def like(self, session: ChatSession, data: gr.LikeData, request: gr.Request) -> Any:
        """Store the thumb, and give the page the thumbs stored: Gradio redraws the
        conversation when a reply ends and keeps only the thumbs it was given."""
        self.rate(session, data.index, data.liked, request)
        session.thumbs_shown = True
        return gr.Chatbot(feedback_value=feedback_values(session.turns))

    def rate_api(self, index: Any, value: Any, session: ChatSession,
                 request: gr.Request) -> None:
        """The API's rating: message index and "up", "down" or "none"."""
        liked = {"up": True, "down": False}.get(str(value).strip().lower())
        self.rate(session, int(index) if isinstance(index, int | float) else None, liked, request)

    def score(self, value: Any, session: ChatSession, request: gr.Request) -> str:
        """Store the visitor's feedback score (1 to 5) for their arm; a new one replaces it."""
        score = {str(n): n for n in SCORES}.get(str(value).strip())
        if score is None:
            return "Pick a score from 1 to 5."
        if slow := self.access.write_refusal(session.key, request):
            return slow
        found = self.arm(session)
        if found is None:
            return "No experiment is running now: thank you all the same."
        experiment, arm, visitor = found
        if not any(turn.arm for turn in session.turns):
            return "Chat with the assistant first, then score the conversation."
        try:
            self.store.score(experiment.name, visitor, arm.name, score)
        except StoreUnavailable as exc:
            return f"Your score was not saved: {exc}."
        return f"Thank you: your score {score} is saved (a new score replaces it)."

    def arrive(self, visitor: Any, session: ChatSession, request: gr.Request) -> tuple[Any, ...]:
        """On page load: take the browser's visitor id; tell a visitor in an experiment which
        assistant answers them, and give their replies thumbs and the chat a score; or, in a
        side-by-side experiment, show its panel instead of the conversation."""
        if isinstance(visitor, str) and VISITOR_RE.fullmatch(visitor):
            session.visitor = visitor
        self.identify(session, request)
        if session.visitor:
            self._remember(request, session.visitor)
        skip = (gr.skip(),) * (3 + len(self.swap))
        if self.swap and (experiment := self.experiment()) and experiment.side_by_side:
            return (skip[0], gr.Markdown(SIDE_BY_SIDE_PICKERS, visible=True), skip[2],
                    gr.Column(visible=True), gr.Column(visible=False))
        found = self.arm(session)
        if found is None:
            return skip
        persona = found[1].persona
        note = (f"You are helping us compare assistants: your replies come from the "
                f"**{persona}** persona, whatever the picker says. Rate replies with the "
                "thumbs (click a thumb again to take the rating back), and score the "
                "conversation below.")
        return (gr.Chatbot(feedback_options=THUMBS), gr.Markdown(note, visible=True),
                gr.Group(visible=True), *skip[3:])

    def build_settings(self, demo: gr.Blocks, chatbot: gr.Chatbot, session: Any) -> None:
        """The note, the score and the thumbs of a visitor in an experiment (under the
        persona picker), and the page's load that puts them in their arm."""
        note = gr.Markdown(visible=False, elem_id="live-note", elem_classes="tw-note")
        with gr.Group(visible=False, elem_id="live-score") as scoring:
            score = accept_any(gr.Radio([str(n) for n in SCORES], label="How helpful was "
                                        "this conversation? (1 poor, 5 excellent)",
                                        elem_id="live-score-pick"))
            thanks = gr.Markdown(elem_id="live-score-status")
        score.input(self.score, [score, session], [thanks], api_name="score")
        visitor = gr.Textbox(visible=False)
        chatbot.like(self.like, [session], [chatbot], api_visibility="private",
                     show_progress="hidden")
        index, value = gr.Number(visible=False, precision=0), gr.Textbox(visible=False)
        gr.Button(visible=False).click(self.rate_api, [index, value, session], None,
                                       api_name="rate")
        demo.load(self.arrive, [visitor, session], [chatbot, note, scoring, *self.swap],
                  js=VISITOR_JS, api_visibility="private")

    def build_beside(self, chat: Any, session: Any, conversation: gr.Column) -> None:
        """The side-by-side panel, beside the conversation it replaces while one runs (the
        chat tab calls this before `build_settings`)."""
        from experiments.web.live_compare import ComparePanel

        panel = ComparePanel(chat, self)
        panel.build(session, conversation)
        self.swap = panel.swap
