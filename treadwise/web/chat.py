"""The Chat tab: persona and model pickers, the streamed conversation, stop/retry/undo/export."""

from __future__ import annotations

import time
from collections.abc import Iterator, Mapping, Sequence
from typing import Any

import gradio as gr

from treadwise.agent.request import InvalidRequest, TurnRequest
from treadwise.agent.strategies import DEFAULT_STRATEGY, strategy_names
from treadwise.errors import FriendlyError, ModelConfigError, redact
from treadwise.models import display_name, expectation, loading_message, short_label
from treadwise.personas import DEFAULT_PERSONA, Persona, load_personas
from treadwise.settings import MAX_ITERATIONS, Settings
from treadwise.storage.plots import SharedPlots
from treadwise.tools.web import status_note as web_status_note
from treadwise.web.access import Access, accept_any
from treadwise.web.chat_keep import Keeping, link_note
from treadwise.web.client_side import BUSY_JS, COUNT_FROM, COUNTER_JS
from treadwise.web.files import ShownPlots
from treadwise.web.forget import forget_button, wire
from treadwise.web.hooks import ChatHook, ChatHooks, Choice
from treadwise.web.render import LATEX_DELIMITERS, feedback_values, render
from treadwise.web.session import ChatSession, Turn, new_session
from treadwise.web.turns import LazyAgent, TurnRunner

# One example per capability: math, calculus with a plot, tires, service coverage, a lead.
EXAMPLES = [
    ("Math", "Add 5 and 4, then square the result"),
    ("Integral + plot", "Calculate the integral of x² from 0 to 3"),
    ("Tires", "Which tires do you recommend for an SUV I mostly drive on the highway?"),
    ("Service", "Do you offer mobile tire installation in Austin?"),
    ("Lead", "I'm Ana Silva and I'd like a fleet quote. Please contact me at ana@example.com"),
]
# Every update re-sends the whole conversation and Gradio checks it on its one event loop, so
# bursts of events (fast tools, streamed words) are shown together, and running timers tick
# once a second; the final view always follows.
STREAM_INTERVAL_S = 0.15
TICK_S = 1.0
BACKOFF = 4  # an update that took t to go out is followed by the next after 4 t at least
TEMPERATURE_RANGE = (0.0, 1.0)  # the slider's; a request's temperature is checked against it
BUSY_WARNING = "A reply is still being written: press Stop first, or wait for it to finish."
Outputs = tuple[Any, Any, Any, Any]  # chatbot, Send button, Markdown export, JSON export


def _loading_note(spec: str) -> str | None:
    try:
        return loading_message(spec)
    except ModelConfigError:
        return None


def persona_cards(personas: Mapping[str, Persona]) -> str:
    return "\n".join(f"- **{p.name}**: {p.description}" for p in personas.values())


class ChatTab:
    """Builds the tab and handles its events; one instance serves every session."""

    def __init__(self, agent: LazyAgent, settings: Settings, access: Access | None = None,
                 hooks: Sequence[ChatHook] = ()):
        self.runner = TurnRunner(agent)
        self.settings = settings
        self.access = access or Access(settings)
        self.personas = load_personas(settings.personas_dir)
        self.strategies = strategy_names()  # read once: it scans the installed entry points
        self.plots_dir = settings.data_dir / "plots"
        self.plots = SharedPlots(self.plots_dir, settings.database_url)
        self.keeping = Keeping(settings)
        self.hooks = ChatHooks(hooks)  # see web/hooks.py
        self.cache_dir = ""
        self.shown: ShownPlots | None = None

    def build(self, demo: gr.Blocks) -> None:
        session = gr.State(new_session)
        public = self.settings.public
        with gr.Row(equal_height=False, elem_classes="tw-chat-row"):
            with gr.Column(scale=7, min_width=300, elem_classes="tw-conversation") as chat:
                # No thumbs, as an empty list (the page reads it once a like listener exists);
                # a chat hook may give them on load (a live experiment's visitor).
                chatbot = gr.Chatbot(
                    label="Conversation", show_label=False, elem_id="chat", height=600,
                    layout="bubble", buttons=["copy", "copy_all"], feedback_options=(),
                    allow_tags=False, sanitize_html=True, render_markdown=True,
                    latex_delimiters=LATEX_DELIMITERS, group_consecutive_messages=False,
                    placeholder="**Ask TreadWise** about tires, mobile service, Smart Tread "
                                "monitoring, or a math problem. Tool steps and plots appear "
                                "here as the assistant works.")
                self.cache_dir = chatbot.GRADIO_CACHE
                self.shown = ShownPlots(self.cache_dir)
                self.shown.serve(demo)
                with gr.Row(equal_height=True, elem_classes="tw-compose"):
                    message = gr.Textbox(
                        show_label=False, elem_id="message", lines=1, max_lines=8, scale=8,
                        autofocus=True,
                        placeholder="Type a message. Enter sends, Shift+Enter starts a new line.")
                    send = gr.Button("Send", variant="primary", elem_id="send", scale=1,
                                     min_width=80)
                gr.HTML('<div class="tw-count" aria-live="polite"></div>'
                        '<div class="tw-busy" role="status"></div>', elem_id="char-count",
                        padding=False)
                with gr.Row(elem_classes="tw-actions"):
                    stop = gr.Button("Stop", variant="stop", size="sm", elem_id="stop")
                    retry = gr.Button("Retry", size="sm", elem_id="retry")
                    undo = gr.Button("Undo", size="sm", elem_id="undo")
                    new = gr.Button("New chat", size="sm", elem_id="new-chat")
                    forget = forget_button()
                    export_md = gr.DownloadButton("Markdown", size="sm", interactive=False,
                                                  elem_id="export-md")
                    export_json = gr.DownloadButton("JSON", size="sm", interactive=False,
                                                    elem_id="export-json")
                gr.Markdown(
                    f"Messages may be up to {self.settings.max_input_chars:,} characters; a "
                    "longer one is refused before any model sees it. A react reply takes at "
                    f"most {MAX_ITERATIONS} model calls; each other strategy names its own "
                    "budget. The export buttons download the conversation. " + link_note(
                        self.settings), elem_classes="tw-note")
                gr.Examples(examples=[[text] for _, text in EXAMPLES], inputs=[message],
                            example_labels=[f"{kind}: {text}" for kind, text in EXAMPLES],
                            label="Examples")
            self.hooks.build_beside(self, session, chat)  # e.g. a panel shown instead of it
            with gr.Column(scale=3, min_width=280, elem_classes="tw-settings"):
                persona = accept_any(gr.Radio(
                    choices=[(p.name, key) for key, p in self.personas.items()],
                    value=DEFAULT_PERSONA if DEFAULT_PERSONA in self.personas
                    else next(iter(self.personas)), label="Persona", elem_id="persona-picker"))
                self.hooks.build_settings(demo, chatbot, session)
                gr.Markdown(persona_cards(self.personas), elem_classes="tw-personas")
                model = accept_any(gr.Dropdown(
                    choices=self._model_choices(admin=not public), value="offline",
                    label="Model", elem_id="model-picker",
                    info="The offline model is rule-based, not an LLM; a local LLM runs on "
                         "this machine. Providers appear when their API key is set."))
                custom = gr.Textbox(
                    label="Or any model spec", elem_id="model-spec", max_lines=1,
                    placeholder="provider:model, e.g. openai:gpt-4.1-mini", visible=not public,
                    info="Used instead of the list when filled in.")
                temperature = accept_any(gr.Slider(*TEMPERATURE_RANGE, value=0.0, step=0.05,
                                                   label="Temperature", elem_id="temperature"))
                strategy = accept_any(gr.Dropdown(
                    choices=self.strategies, value=DEFAULT_STRATEGY, label="Strategy",
                    elem_id="strategy-picker",
                    info="How the assistant thinks: react (the default reason/tools loop) or "
                         "another strategy, each with its own budget of model calls; every "
                         "stage shows as a step."))
                gr.Markdown(web_status_note(self.settings.environment), elem_classes="tw-note")
                gr.Markdown("Switching persona or model keeps the conversation; the change "
                            "applies from the next reply.", elem_classes="tw-note")

        self.hooks.build_pickers(demo, [persona, model, custom, temperature, strategy])
        # Picking a small local model says in one line what to expect of it.
        model.change(lambda spec: gr.Info(note) if (note := expectation(spec)) else None,
                     [model], None, api_visibility="private")
        outputs = [chatbot, send, export_md, export_json]
        turn_inputs = [session, persona, model, custom, temperature, strategy]
        # Send, Enter and Retry share one concurrency budget: the number of turns in flight.
        turn: dict[str, Any] = {"show_progress": "hidden", "concurrency_id": "chat-turn"}
        message.submit(self.send, [message, *turn_inputs], [chatbot, message, *outputs[1:]],
                       api_name="send", **turn)
        send.click(self.send, [message, *turn_inputs], [chatbot, message, *outputs[1:]],
                   api_visibility="private", **turn)
        for trigger in (message.submit, send.click):
            trigger(None, None, None, js=BUSY_JS % BUSY_WARNING, trigger_mode="multiple")
        retry.click(self.retry, turn_inputs, outputs, api_name="retry", **turn)
        page = [chatbot, message, send, export_md, export_json]
        undo.click(self.undo, [session], page, api_name="undo")
        new.click(self.new_conversation, [session], page, api_name="new_conversation")
        wire(self, forget, session, page)
        # The chatbot's own trash button must clear the memory too, not just the view.
        chatbot.clear(self.new_conversation, [session], page, api_visibility="private")
        stop.click(self.stop, [session], None, api_name="stop", queue=False)
        limit = self.settings.max_input_chars
        message.change(None, [message], None, js=COUNTER_JS % (limit, int(limit * COUNT_FROM)))
        if public:
            demo.load(self.personalise, None, [custom], api_visibility="private")
        # Any replica can reopen a conversation from its link (memory is in the database):
        # from the API, or in the browser with ?thread=<link> (the link is in the JSON export).
        thread = gr.Textbox(visible=False)
        gr.Button(visible=False).click(self.resume, [thread, session], page, api_name="resume")
        demo.load(self.resume_from_link, [session], page, api_visibility="private")

    def _model_choices(self, admin: bool) -> list[tuple[str, str]]:
        return [(short_label(spec), spec) for spec in self.access.model_choices(admin)]

    def personalise(self, request: gr.Request) -> Any:
        """On a public page, a signed-in admin may name any model in the custom spec field."""
        return gr.Textbox(visible=True) if self.access.is_admin(request) else gr.skip()

    def send(self, message: str, session: ChatSession, persona: str, model: str, custom: str,
             temperature: float, strategy: str, request: gr.Request) -> Iterator[tuple[Any, ...]]:
        """Run a turn for the message, emptying the box as it leaves; later updates skip it."""
        if not (message or "").strip() or session.running:
            chatbot, *rest = self._view(session)
            yield chatbot, gr.skip(), *rest  # not sent: the page says so (BUSY_JS)
            return
        box: Any = ""
        if len(message) > self.settings.max_input_chars:
            box = gr.skip()  # refused: the text stays, to be shortened
        choice = Choice(persona, model, custom, temperature, strategy)
        for final, (chatbot, *rest) in self._turn(message, session, choice, request):
            yield chatbot, gr.skip() if final else box, *rest
            box = gr.skip()

    def retry(self, session: ChatSession, persona: str, model: str, custom: str,
              temperature: float, strategy: str, request: gr.Request) -> Iterator[Outputs]:
        """Send the last message again, with the persona and model picked now."""
        if session.running or not session.turns:
            if session.running:
                gr.Warning(BUSY_WARNING)
            yield self._view(session)
            return
        last = session.turns.pop()
        self.runner.undo(last, session.thread_id)
        choice = Choice(persona, model, custom, temperature, strategy)
        for _, outputs in self._turn(last.user, session, choice, request):
            yield outputs

    def undo(self, session: ChatSession) -> tuple[Any, ...]:
        """Forget the last turn and put its message back in the box for editing."""
        if session.running or not session.turns:
            if session.running:
                gr.Warning(BUSY_WARNING)
            return (gr.skip(),) * 5
        last = session.turns.pop()
        self.runner.undo(last, session.thread_id)
        chatbot, send, *exports = self._view(session, final=True)
        return chatbot, last.user, send, *exports

    def new_conversation(self, session: ChatSession) -> tuple[Any, ...]:
        session.reset()
        chatbot, send, *exports = self._view(session, final=True)
        return chatbot, "", send, *exports

    def stop(self, session: ChatSession) -> None:
        session.stop()

    def resume(self, link: str, session: ChatSession, request: gr.Request) -> tuple[Any, ...]:
        """Show the conversation memory holds for the thread `link` opens, and continue it."""
        from treadwise.web.resume import restored_turns

        if session.running:
            gr.Warning(BUSY_WARNING)
            return (gr.skip(),) * 5
        if (thread := self.keeping.thread_of(link, session, request)) is None:
            gr.Warning("That is not a link to one of your conversations: use the `resume` "
                       "value of your JSON export.")
            return (gr.skip(),) * 5
        session.thread_id = thread
        session.turns = restored_turns(self.runner.agent.get().history(thread))
        for turn in session.turns:
            for step in turn.steps:
                self._publish(turn, step)
        chatbot, send, *exports = self._view(session, final=True)
        return chatbot, "", send, *exports

    def resume_from_link(self, session: ChatSession, request: gr.Request) -> tuple[Any, ...]:
        thread = dict(request.query_params or {}).get("thread") if request else None
        if not thread:
            return (gr.skip(),) * 5
        return self.resume(thread, session, request)

    def _request(self, session: ChatSession, choice: Choice,
                 request: gr.Request) -> TurnRequest:
        """The turn's request, from the choice (the pickers', or a hook's), checked once here:
        InvalidRequest, in words, when it must not run at all."""
        if rate := self.access.rate_refusal(session.key, request):
            raise InvalidRequest(rate)
        asked = TurnRequest.read(
            persona=choice.persona, model=choice.spec, temperature=choice.temperature,
            strategy=choice.strategy, thread_id=session.thread_id,
            personas_dir=self.settings.personas_dir, temperatures=TEMPERATURE_RANGE,
            models=self.runner.agent.injected_models())
        # A hook's model (an experiment's arm) was picked by an admin: anyone may get it.
        if not choice.arm and (refusal := self.access.model_refusal(asked.model, request)):
            raise InvalidRequest(refusal)
        return asked

    def _turn(self, message: str, session: ChatSession, choice: Choice,
              request: gr.Request) -> Iterator[tuple[bool, Outputs]]:
        """(final, outputs) as the turn goes: shown at once, then as it streams, then done."""
        self.keeping.identify(session, request)
        choice = self.hooks.choose(session, choice, request)
        try:
            asked = self._request(session, choice, request)
        except ModelConfigError as exc:
            spec = redact(choice.spec)
            known = self.personas.get(choice.persona)
            turn = Turn(user=message, persona=str(choice.persona),
                        persona_name=known.name if known else str(choice.persona), spec=spec,
                        model=display_name(spec), temperature=0.0)
            turn.failure, turn.status = FriendlyError("input_rejected", str(exc)), "error"
            session.turns.append(turn)
        else:
            turn = Turn(user=message, persona=asked.persona.key,
                        persona_name=asked.persona.name, spec=asked.model, model=asked.shown,
                        temperature=asked.settings.temperature)
            session.turns.append(turn)
            if note := _loading_note(asked.model):
                gr.Info(note)
            yield False, self._view(session, running=True)
            for _ in self.follow(turn, asked):
                yield False, self._view(session)
        self.hooks.record(turn, choice.arm)
        yield True, self._view(session, final=True)

    def follow(self, turn: Turn, asked: TurnRequest) -> Iterator[None]:
        """Apply the turn's events as they come; yield when the page should show them."""
        shown, dirty, interval = time.monotonic(), False, STREAM_INTERVAL_S
        events = self.runner.stream(turn, asked)
        try:
            for event in events:
                if event is not None:
                    dirty = self._apply(turn, event) or dirty
                since = time.monotonic() - shown
                if (dirty and since >= interval) or (turn.running and
                                                     since >= max(TICK_S, interval)):
                    before = time.monotonic()
                    yield
                    # Gradio resumes this turn once the update is out; when that takes long
                    # the server is busy, so the next updates come less often.
                    shown, dirty = time.monotonic(), False
                    interval = max(STREAM_INTERVAL_S, BACKOFF * (shown - before))
        finally:
            if turn.running:
                turn.status = "stopped"

    def _apply(self, turn: Turn, event: Any) -> bool:
        """Take in one event; True when the page should show it before the turn ends."""
        from treadwise.agent import (
            StageFinished,
            TextDelta,
            ToolFinished,
            ToolStarted,
            TurnFinished,
        )

        if isinstance(event, FriendlyError):  # the turn failed outside the agent's care
            turn.failure, turn.status = event, "error"
        elif isinstance(event, StageFinished):
            turn.stages.append((len(turn.steps), event.stage))
        elif isinstance(event, TextDelta):
            turn.streamed += event.text
            turn.answer = redact(turn.streamed)  # the final answer comes redacted; so must this
        elif isinstance(event, ToolStarted | ToolFinished):
            if all(step is not event.step for step in turn.steps):
                turn.steps.append(event.step)
                turn.step_started[event.step.id] = time.time()
                turn.streamed = turn.answer = ""  # text before a tool call was a preamble
            if isinstance(event, ToolFinished):
                self._publish(turn, event.step)
        elif isinstance(event, TurnFinished):
            self._finish(turn, event.result)
            return False
        return True

    def _finish(self, turn: Turn, result: Any) -> None:
        turn.result = result
        turn.steps = list(result.tool_calls) or turn.steps
        for step in turn.steps:
            self._publish(turn, step)
        turn.answer = result.answer
        turn.status = "error" if result.error is not None else "done"

    def _publish(self, turn: Turn, step: Any) -> None:
        if step.id in turn.plots or not step.artifacts:
            return
        found = [self.plots.find(a) for a in step.artifacts]
        shown = self.shown or ShownPlots(self.cache_dir)
        paths = [shown.publish(f, self.plots_dir) for f in found if f]
        turn.plots[step.id] = [p for p in paths if p]

    def _view(self, session: ChatSession, *, running: bool = False,
              final: bool = False) -> Outputs:
        """The page's outputs: plain values in between (a look change costs a config rebuild)."""
        send: Any = gr.Button(interactive=False) if running else "Send"
        # Gradio checks every file of every update on its event loop: the exports wait for
        # the end of the turn (they are written then anyway).
        exports: tuple[Any, Any] = (None, None)
        if final:
            finished = any(not t.running for t in session.turns)
            paths = self.keeping.exports(session, self.cache_dir) if finished else (None, None)
            send = gr.Button(interactive=True)
            exports = (gr.DownloadButton(value=paths[0], interactive=bool(paths[0])),
                       gr.DownloadButton(value=paths[1], interactive=bool(paths[1])))
        chat: Any = render(session.turns)
        if final and session.thumbs_shown:  # the thumbs of the turns kept, none of those gone
            chat = gr.Chatbot(value=chat, feedback_value=feedback_values(session.turns))
            session.thumbs_shown = any(turn.thumb for turn in session.turns)
        return chat, send, *exports
