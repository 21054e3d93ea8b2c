"""The Chat tab: persona and model pickers, the streamed conversation, stop/retry/undo/export."""

from __future__ import annotations

import time
from collections.abc import Iterator, Mapping
from typing import Any

import gradio as gr

from treadwise.agent.strategies import DEFAULT_STRATEGY, strategy_names
from treadwise.errors import ModelConfigError, redact
from treadwise.models import available_specs, display_name, label, loading_message
from treadwise.personas import DEFAULT_PERSONA, Persona, load_personas
from treadwise.settings import MAX_ITERATIONS, Settings
from treadwise.storage.plots import SharedPlots
from treadwise.tools.web import status_note as web_status_note
from treadwise.web.export import export_files
from treadwise.web.files import publish_png
from treadwise.web.render import render
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
STREAM_INTERVAL_S = 0.15
BUSY_WARNING = "A reply is still being written: press Stop first, or wait for it to finish."
Outputs = tuple[Any, Any, Any, Any, Any]


def model_choices(env: Mapping[str, str] | None = None) -> list[tuple[str, str]]:
    """(label, spec) for the picker: the offline model, the local models installed here, then
    every provider whose key is set."""
    return [(label(spec), spec) for spec in available_specs(env)]


def _loading_note(spec: str) -> str | None:
    try:
        return loading_message(spec)
    except ModelConfigError:
        return None


def persona_cards(personas: Mapping[str, Persona]) -> str:
    return "\n".join(f"- **{p.name}**: {p.description}" for p in personas.values())


class ChatTab:
    """Builds the tab and handles its events; one instance serves every session."""

    def __init__(self, agent: LazyAgent, settings: Settings):
        self.runner = TurnRunner(agent)
        self.settings = settings
        self.personas = load_personas()
        self.plots_dir = settings.data_dir / "plots"
        self.plots = SharedPlots(self.plots_dir, settings.database_url)
        self.cache_dir = ""

    def build(self, env: Mapping[str, str] | None = None, demo: gr.Blocks | None = None) -> None:
        session = gr.State(new_session)
        with gr.Row(equal_height=False):
            with gr.Column(scale=7, min_width=480):
                chatbot = gr.Chatbot(
                    label="Conversation", show_label=False, elem_id="chat", height=600,
                    layout="bubble", buttons=["copy", "copy_all"], feedback_options=None,
                    allow_tags=False, sanitize_html=True, render_markdown=True,
                    placeholder="**Ask TreadWise** about tires, mobile service, Smart Tread "
                                "monitoring, or a math problem. Tool steps and plots appear "
                                "here as the assistant works.")
                self.cache_dir = chatbot.GRADIO_CACHE
                with gr.Row(equal_height=True):
                    message = gr.Textbox(
                        show_label=False, elem_id="message", lines=2, max_lines=8, scale=8,
                        autofocus=True,
                        placeholder="Type a message. Enter sends, Shift+Enter starts a new line.")
                    send = gr.Button("Send", variant="primary", elem_id="send", scale=1,
                                     min_width=90)
                with gr.Row(elem_classes="tw-actions"):
                    stop = gr.Button("Stop", variant="stop", size="sm", elem_id="stop")
                    retry = gr.Button("Retry", size="sm", elem_id="retry")
                    undo = gr.Button("Undo", size="sm", elem_id="undo")
                    new = gr.Button("New conversation", size="sm", elem_id="new-chat")
                    export_md = gr.DownloadButton("Export Markdown", size="sm",
                                                  interactive=False, elem_id="export-md")
                    export_json = gr.DownloadButton("Export JSON", size="sm",
                                                    interactive=False, elem_id="export-json")
                gr.Markdown(
                    f"Messages may be up to {self.settings.max_input_chars:,} characters; a "
                    "longer one is refused before any model sees it. Each reply takes at most "
                    f"{MAX_ITERATIONS} reasoning steps.", elem_classes="tw-note")
                gr.Examples(examples=[[text] for _, text in EXAMPLES], inputs=[message],
                            example_labels=[f"{kind}: {text}" for kind, text in EXAMPLES],
                            label="Examples")
            with gr.Column(scale=3, min_width=280, elem_classes="tw-settings"):
                persona = gr.Radio(
                    choices=[(p.name, key) for key, p in self.personas.items()],
                    value=DEFAULT_PERSONA if DEFAULT_PERSONA in self.personas
                    else next(iter(self.personas)), label="Persona", elem_id="persona-picker")
                gr.Markdown(persona_cards(self.personas), elem_classes="tw-personas")
                model = gr.Dropdown(
                    choices=model_choices(env), value="offline", label="Model",
                    elem_id="model-picker",
                    info="The offline model is rule-based, not an LLM. Providers appear when "
                         "their API key is set.")
                custom = gr.Textbox(
                    label="Or any model spec", elem_id="model-spec", max_lines=1,
                    placeholder="provider:model, e.g. openai:gpt-4.1-mini",
                    info="Used instead of the list when filled in.")
                temperature = gr.Slider(0.0, 1.0, value=0.0, step=0.05, label="Temperature",
                                        elem_id="temperature")
                strategy = gr.Dropdown(
                    choices=strategy_names(), value=DEFAULT_STRATEGY, label="Strategy",
                    elem_id="strategy-picker",
                    info="How the assistant thinks: react (the default reason/tools loop) or "
                         "another strategy, each with its own budget of model calls; every "
                         "stage shows as a step.")
                gr.Markdown(web_status_note(), elem_classes="tw-note")
                gr.Markdown("Switching persona or model keeps the conversation; the change "
                            "applies from the next reply.", elem_classes="tw-note")

        outputs = [chatbot, message, session, export_md, export_json]
        turn_inputs = [session, persona, model, custom, temperature, strategy]
        # Send, Enter and Retry share one concurrency budget: the number of turns in flight.
        turn = {"outputs": outputs, "show_progress": "minimal", "concurrency_id": "chat-turn"}
        message.submit(self.send, [message, *turn_inputs], api_name="send", **turn)
        send.click(self.send, [message, *turn_inputs], api_visibility="private", **turn)
        retry.click(self.retry, turn_inputs, api_name="retry", **turn)
        undo.click(self.undo, [session], outputs, api_name="undo")
        new.click(self.new_conversation, [session], outputs, api_name="new_conversation")
        # The chatbot's own trash button must clear the memory too, not just the view.
        chatbot.clear(self.new_conversation, [session], outputs, api_visibility="private")
        stop.click(self.stop, [session], None, api_name="stop", queue=False)
        # Any replica can reopen a conversation by its thread id (memory is in the database):
        # from the API, or in the browser with ?thread=<id> (the id is in the JSON export).
        thread = gr.Textbox(visible=False)
        gr.Button(visible=False).click(self.resume, [thread, session], outputs,
                                       api_name="resume")
        if demo is not None:
            demo.load(self.resume_from_link, [session], outputs, api_visibility="private")

    def send(self, message: str, session: ChatSession, persona: str, model: str,
             custom: str, temperature: float,
             strategy: str = DEFAULT_STRATEGY) -> Iterator[Outputs]:
        if not (message or "").strip():
            yield gr.skip(), gr.skip(), session, gr.skip(), gr.skip()
            return
        yield from self._turn(message, session, persona, model, custom, temperature,
                              strategy=strategy)

    def retry(self, session: ChatSession, persona: str, model: str, custom: str,
              temperature: float, strategy: str = DEFAULT_STRATEGY) -> Iterator[Outputs]:
        """Send the last message again, with the persona and model picked now."""
        if session.running or not session.turns:
            if session.running:
                gr.Warning(BUSY_WARNING)
            yield gr.skip(), gr.skip(), session, gr.skip(), gr.skip()
            return
        last = session.turns.pop()
        self.runner.undo(last, session.thread_id)
        yield from self._turn(last.user, session, persona, model, custom, temperature,
                              clear_input=False, strategy=strategy)

    def undo(self, session: ChatSession) -> Outputs:
        """Forget the last turn and put its message back in the box for editing."""
        if session.running or not session.turns:
            if session.running:
                gr.Warning(BUSY_WARNING)
            return gr.skip(), gr.skip(), session, gr.skip(), gr.skip()
        last = session.turns.pop()
        self.runner.undo(last, session.thread_id)
        return self._view(session, message=last.user, exports=True)

    def new_conversation(self, session: ChatSession) -> Outputs:
        session.reset()
        return self._view(session, message="", exports=True)

    def stop(self, session: ChatSession) -> None:
        session.stop()

    def resume(self, thread_id: str, session: ChatSession) -> Outputs:
        """Show the conversation memory holds for `thread_id` and continue it from here."""
        from treadwise.web.resume import restored_turns, valid_thread_id

        if session.running:
            gr.Warning(BUSY_WARNING)
            return gr.skip(), gr.skip(), session, gr.skip(), gr.skip()
        if (thread := valid_thread_id(thread_id)) is None:
            gr.Warning("That is not a conversation id (32 hexadecimal characters).")
            return gr.skip(), gr.skip(), session, gr.skip(), gr.skip()
        session.thread_id = thread
        session.turns = restored_turns(self.runner.agent.get().history(thread))
        for turn in session.turns:
            for step in turn.steps:
                self._publish(turn, step)
        return self._view(session, message="", exports=True)

    def resume_from_link(self, session: ChatSession, request: gr.Request) -> Outputs:
        thread = dict(request.query_params or {}).get("thread") if request else None
        if not thread:
            return gr.skip(), gr.skip(), session, gr.skip(), gr.skip()
        return self.resume(thread, session)

    def _turn(self, message: str, session: ChatSession, persona: str, model: str, custom: str,
              temperature: float, clear_input: bool = True,
              strategy: str = DEFAULT_STRATEGY) -> Iterator[Outputs]:
        spec = (custom or "").strip() or model or "offline"
        known = self.personas.get(persona)
        turn = Turn(user=message, persona=persona, persona_name=known.name if known else persona,
                    spec=spec, model=display_name(spec), temperature=float(temperature or 0.0))
        session.turns.append(turn)
        if note := _loading_note(spec):
            gr.Info(note)
        yield self._view(session, message="" if clear_input else None)
        shown = time.monotonic()
        # treadwise.agent pulls in LangGraph: imported when a turn runs, not when the page builds.
        from treadwise.agent import TurnFinished

        for event in self.runner.stream(turn, session.thread_id, message, persona=persona,
                                        model=spec, temperature=turn.temperature,
                                        strategy=strategy or DEFAULT_STRATEGY):
            self._apply(turn, event)
            # Every update re-sends the whole conversation, so bursts of events (fast tools,
            # streamed words) are shown together; the final view below always follows.
            if not isinstance(event, TurnFinished) and \
                    time.monotonic() - shown >= STREAM_INTERVAL_S:
                shown = time.monotonic()
                yield self._view(session)
        if turn.running:
            turn.status = "stopped"
        yield self._view(session, exports=True)

    def _apply(self, turn: Turn, event: Any) -> None:
        from treadwise.agent import (
            StageFinished,
            TextDelta,
            ToolFinished,
            ToolStarted,
            TurnFinished,
        )

        if isinstance(event, StageFinished):
            turn.stages.append((len(turn.steps), event.stage))
        elif isinstance(event, TextDelta):
            turn.streamed += event.text
            turn.answer = redact(turn.streamed)  # the final answer comes redacted; so must this
        elif isinstance(event, ToolStarted | ToolFinished):
            if all(step is not event.step for step in turn.steps):
                turn.steps.append(event.step)
                turn.streamed = turn.answer = ""  # text before a tool call was a preamble
            if isinstance(event, ToolFinished):
                self._publish(turn, event.step)
        elif isinstance(event, TurnFinished):
            result = event.result
            turn.steps = list(result.tool_calls) or turn.steps
            for step in turn.steps:
                self._publish(turn, step)
            turn.answer = result.answer
            turn.latency_s = result.latency_s
            turn.usage = dict(result.usage)
            turn.stopped_by_cap = result.stopped_by_cap
            if result.error is not None:
                turn.status, turn.error_type, turn.error = ("error", result.error.type,
                                                            result.error.message)
            else:
                turn.status = "done"

    def _publish(self, turn: Turn, step: Any) -> None:
        if step.id in turn.plots or not step.artifacts:
            return
        found = [self.plots.find(a) for a in step.artifacts]
        paths = [publish_png(f, self.plots_dir, self.cache_dir) for f in found if f]
        turn.plots[step.id] = [p for p in paths if p]

    def _view(self, session: ChatSession, *, message: str | None = None,
              exports: bool = False) -> Outputs:
        downloads: tuple[Any, Any] = (gr.skip(), gr.skip())
        if exports:
            finished = [t for t in session.turns if not t.running]
            if finished:
                md, js = export_files(session, self.cache_dir)
                downloads = (gr.DownloadButton(value=md, interactive=True),
                             gr.DownloadButton(value=js, interactive=True))
            else:
                downloads = (gr.DownloadButton(value=None, interactive=False),
                             gr.DownloadButton(value=None, interactive=False))
        text = gr.skip() if message is None else message
        return render(session.turns), text, session, *downloads
