"""The Experiments tab's live section: create, stop and report a live A/B experiment (admins)."""

from __future__ import annotations

from typing import Any

import gradio as gr

from experiments.live.definition import EXAMPLE
from experiments.web.live_chat import LiveChat
from treadwise.settings import Settings
from treadwise.storage.leads import StoreUnavailable
from treadwise.web.render import safe_markdown

# A live experiment decides what visitors are answered by, and its report is the business's:
# creating, stopping and reading one are for admins (a public page guards these handlers).
LIVE_HANDLERS = ("create", "stop", "report")


class LiveTab:
    """One live experiment at a time: its YAML in, its report and CSV out."""

    def __init__(self, settings: Settings, live: LiveChat | None = None):
        self.live = live or LiveChat(settings)
        self.cache_dir = ""

    @property
    def admin_handlers(self) -> dict[str, Any]:
        return dict.fromkeys(LIVE_HANDLERS)

    def build(self, demo: gr.Blocks) -> None:
        with gr.Accordion("Live experiment: A/B test personas and models on real visitors",
                          open=False, elem_id="live"):
            gr.Markdown("While an experiment runs, each visitor is put in one arm (a hash of "
                        "their browser, the same on every replica and after a reload), is "
                        "answered by that arm's persona and model, and may rate replies with a "
                        "thumb and score the conversation (1-5). With `side_by_side: true`, "
                        "two arms answer each message unnamed and the visitor picks one; the "
                        "report ranks the arms (Bradley-Terry). Only ids, kinds and numbers "
                        "are stored: no message text.",
                        elem_classes="tw-note")
            definition = gr.Code(EXAMPLE, language="yaml", label="Definition (YAML)",
                                 elem_id="live-definition")
            with gr.Row(equal_height=True):
                name = gr.Textbox(label="Experiment (empty: the running one)", max_lines=1,
                                  scale=3, elem_id="live-name")
                create = gr.Button("Create and start", variant="primary", scale=1,
                                   elem_id="live-create")
                stop = gr.Button("Stop", variant="stop", scale=1, elem_id="live-stop")
                report = gr.Button("Report", scale=1, elem_id="live-report-button")
            status = gr.Markdown(elem_id="live-status")
            text = gr.Markdown(elem_id="live-report")
            csv = gr.DownloadButton("Events (CSV)", interactive=False, elem_id="live-csv")
            self.cache_dir = csv.GRADIO_CACHE
        create.click(self.create, [definition], [status, name], api_name="live_create")
        stop.click(self.stop, [name], [status], api_name="live_stop")
        report.click(self.report, [name], [text, csv], api_name="live_report")

    def _name(self, name: Any) -> str:
        if isinstance(name, str) and name.strip():
            return name.strip()
        running = self.live.store.running()
        if running is None:
            raise ValueError("no live experiment is running: name one")
        return running["name"]

    def create(self, text: Any) -> tuple[str, Any]:
        from experiments.live.definition import LiveError, parse_experiment

        try:
            experiment = parse_experiment(str(text or ""))
            self.live.store.create(experiment.name, experiment.model_dump())
        except (LiveError, ValueError, StoreUnavailable) as exc:
            return safe_markdown(f"Not started: {exc}"), gr.skip()
        arms = ", ".join(arm.name for arm in experiment.arms)
        return (safe_markdown(f"Live experiment **{experiment.name}** is running: arms {arms}."),
                experiment.name)

    def stop(self, name: Any) -> str:
        try:
            chosen = self._name(name)
            self.live.store.stop(chosen)
        except (ValueError, StoreUnavailable) as exc:
            return safe_markdown(f"Not stopped: {exc}")
        return safe_markdown(f"Live experiment **{chosen}** is stopped.")

    def report(self, name: Any) -> tuple[str, Any]:
        from experiments.live.report import events_csv, report
        from treadwise.web.files import save_to_cache

        try:
            chosen = self._name(name)
            text = report(self.live.store, chosen).text()
            data = events_csv(self.live.store, chosen).encode()
        except (ValueError, StoreUnavailable) as exc:
            return safe_markdown(f"No report: {exc}"), gr.DownloadButton(interactive=False)
        path = save_to_cache(data, f"live-{chosen}-events.csv", self.cache_dir)
        return safe_markdown(text), gr.DownloadButton(value=path, interactive=True)
