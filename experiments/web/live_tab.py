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
# Below this many visitors who picked, a side-by-side report shows no ranking: one visitor's
# picks bootstrap to intervals of zero width. The statistics (experiments/live) own the
# minimum: once their report says its own (MIN_PICKERS), the page uses it.
MIN_PICKERS = 10
NOT_ENOUGH = "Not enough picks yet"


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
            text = shown_report(report(self.live.store, chosen))
            data = events_csv(self.live.store, chosen).encode()
        except (ValueError, StoreUnavailable) as exc:
            return safe_markdown(f"No report: {exc}"), gr.DownloadButton(interactive=False)
        path = save_to_cache(data, f"live-{chosen}-events.csv", self.cache_dir)
        return safe_markdown(text), gr.DownloadButton(value=path, interactive=True)


def shown_report(result: Any) -> str:
    """The report's text; for a side-by-side experiment with too few visitors who picked, what
    they picked and when the ranking will show, instead of estimates the picks cannot carry."""
    from experiments.live import report as live

    minimum = getattr(live, "MIN_PICKERS", MIN_PICKERS)
    text = result.text()
    if not result.experiment.side_by_side or result.pickers >= minimum \
            or NOT_ENOUGH.lower() in text.lower():
        return text
    experiment = result.experiment
    lines = [f"# Live experiment {experiment.name} (side by side, {result.status}, "
             f"{result.pickers} visitor{'s' if result.pickers != 1 else ''} picked)", "",
             f"**{NOT_ENOUGH}**: the ranking, its strengths and their intervals show from "
             f"{minimum} visitors who picked; fewer cannot tell the arms apart.", "",
             "| pair | first won | second won | tie | both bad |", "|---|---:|---:|---:|---:|"]
    lines += [f"| {p.arms[0]} vs {p.arms[1]} | {p.wins[0]} | {p.wins[1]} | {p.ties} | "
              f"{p.both_bad} |" for p in result.pairs]
    return "\n".join(lines)
