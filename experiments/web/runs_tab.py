"""The Experiments tab: pick a run under results/, read its summary, charts and transcripts,
compare it with another run, and run a small sweep with one progress bar."""

from __future__ import annotations

import json
import logging
import queue
import threading
from pathlib import Path
from typing import Any

import gradio as gr

from experiments.store.folder import holds_rows
from experiments.web.runs_view import case_choices, case_index, config_choices, transcript_html
from treadwise.errors import redact
from treadwise.web.access import ADMIN_ONLY, accept_any
from treadwise.web.files import publish_png
from treadwise.web.render import safe_markdown

MAX_TABLE_ROWS = 200
# What a summary cell holds when it has nothing to say (the report's words for no value).
BLANK = frozenset({"", "n/a", "nan", "-", "unknown"})
SUMMARY_FILE = "summary.csv"
REPORT_FILE = "report.md"
# How many rows a database run had when its report here was written (a newer one is due).
REPORTED_FILE = ".reported_rows"
# The handlers a visitor of a public page may not call: runs hold whole transcripts (what
# customers typed), and sweeps write under results/ and may call paid models.
ADMIN_HANDLERS = ("refresh", "show", "pick_config", "show_case", "compare", "sweep")
log = logging.getLogger(__name__)


def _runs(results_dir: Path) -> list[Any]:
    """Run folders and, with TREADWISE_DATABASE_URL set, the database's runs (a database run
    whose folder here also holds rows is listed once, as the database's)."""
    from experiments.store import list_runs

    found: dict[str, Any] = {}
    for run in list_runs(results_dir, warn=log.warning):
        if run.id not in found or run.shared:
            found[run.id] = run
    return sorted(found.values(), key=lambda r: (r.created, r.id), reverse=True)


def run_choices(results_dir: Path) -> list[tuple[str, str]]:
    """(label, run id) of every run, newest first. A label is short enough to read whole in a
    phone's picker: the grid and when the run started (the id is the report's title)."""
    choices = []
    for run in _runs(results_dir):
        rows = f"{run.rows} case{'s' if run.rows != 1 else ''}"
        status = f", {run.status}" if run.status and run.status != "finished" else ""
        where = ", on a Dask cluster" * run.cluster + ", in the database" * run.shared
        started = f"{run.grid or 'run'} {run.created:%b %d %H:%M:%S}"
        choices.append((f"{started} ({rows}{status}{where})", run.id))
    return choices


def _plain(results_dir: Path, run_id: str | None) -> Path | None:
    """results_dir/run_id for a plain run name; anything else (a path, "..") is None."""
    if not isinstance(run_id, str) or not run_id or "/" in run_id or "\\" in run_id \
            or run_id.startswith("."):
        return None
    path = (results_dir / run_id).resolve()
    return path if path.parent == results_dir.resolve() else None


def shared(results_dir: Path, run_id: str | None) -> Any | None:
    """The database run of this name (None without a database, or for any other name)."""
    from experiments.store import shared_run

    path = _plain(results_dir, run_id)
    return None if path is None else shared_run(path.name, path.parent)


def run_dir(results_dir: Path, run_id: str | None) -> Path | None:
    """The folder of a listed run (a database run's folder here, made when first shown);
    anything else (a path, "..", an unknown id) is None."""
    path = _plain(results_dir, run_id)
    if path is None:
        return None
    if holds_rows(path):
        return path
    if (run := shared(results_dir, run_id)) is not None:
        run.folder.mkdir(parents=True, exist_ok=True)
        return path
    return path if path.is_dir() else None


def report_shared(run: Any) -> str:
    """Write a database run's report into its folder here when it has none or cases finished
    since it was written; "" or one line saying why there is no report."""
    from experiments.analyse.report import write_report

    rows, marker = run.info().rows, run.folder / REPORTED_FILE
    if (run.folder / REPORT_FILE).is_file() and marker.is_file() \
            and marker.read_text(encoding="utf-8").strip() == str(rows):
        return ""
    if rows == 0:
        return "No case of this run has finished yet."
    try:
        write_report(run)
    except (ValueError, OSError) as exc:
        return f"No report for this run: {redact(str(exc))}"
    marker.write_text(str(rows), encoding="utf-8")
    return ""


def read_table(path: Path) -> dict[str, Any]:
    """A run's configurations as its report shows them: named columns, rates as percentages,
    intervals as "64–100%" (or the report's words when there is none); a column with nothing
    to say in any row is left out."""
    import pandas as pd

    from experiments.analyse.report import cells, configuration_columns

    try:
        frame = pd.read_csv(path)
    except OSError:
        return {"headers": ["summary"], "data": [["This run has no summary yet."]]}
    except (pd.errors.EmptyDataError, pd.errors.ParserError):
        frame = pd.DataFrame()
    if frame.empty:
        return {"headers": ["summary"], "data": [["The summary is empty."]]}
    columns = configuration_columns(frame)
    try:
        rows = cells(frame.head(MAX_TABLE_ROWS), columns)
    except (KeyError, TypeError, ValueError) as exc:
        return {"headers": ["summary"], "data": [[
            f"This summary was written by an older version ({type(exc).__name__}: {exc}); "
            "write its report again with `python -m experiments report RUN`."]]}
    headers = list(columns)
    keep = [i for i in range(len(headers)) if any(row[i] not in BLANK for row in rows)]
    return {"headers": [headers[i] for i in keep], "data": [[row[i] for i in keep] for row in rows]}


def chart_files(folder: Path) -> list[tuple[Path, str]]:
    """(PNG, title) of a run's charts to show, in the report's order (its key chart first);
    a chart with nothing to show (no case errored, one temperature) is left out."""
    from experiments.analyse.charts import INDEX_FILE

    try:
        index = json.loads((folder / INDEX_FILE).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        index = None
    if not isinstance(index, list):  # charts drawn before the index: every PNG, by name
        return [(png, png.stem.replace("_", " ")) for png in sorted(folder.glob("*.png"))]
    return [(folder / str(entry["name"]), str(entry.get("title") or entry["name"]))
            for entry in index if isinstance(entry, dict) and entry.get("name")
            and not entry.get("empty") and "/" not in str(entry["name"])]


def show_run(results_dir: Path, run_id: str | None, cache_dir: str) -> tuple[Any, Any, str]:
    """(summary table, chart gallery items, report markdown) of one run.

    Charts are shown as copies, so the results folder (whose case folders hold databases)
    is never served itself.
    """
    path = run_dir(results_dir, run_id)
    if path is None:
        return {"headers": ["summary"], "data": [["Pick a run."]]}, [], ""
    if not holds_rows(path) and (run := shared(results_dir, run_id)) is not None:
        if why := report_shared(run):
            return {"headers": ["summary"], "data": [[why]]}, [], ""
    folder = path / "charts"
    charts = [(copy, title) for png, title in chart_files(folder)
              if (copy := publish_png(png, folder, cache_dir))]
    report = path / REPORT_FILE
    text = report.read_text(encoding="utf-8") if report.is_file() else "No report yet."
    return read_table(path / SUMMARY_FILE), charts, safe_markdown(text)


def _transcript(path: Path | None, case_key: str | None) -> str:
    from experiments.store import open_run

    if path is None or not case_key or not isinstance(case_key, str):
        return transcript_html(None)
    try:
        return transcript_html(open_run(path).transcript(case_key))
    except ValueError as exc:  # no such case, or (a shared run's) database unreadable
        return transcript_html(None, str(exc))


def show_cases(path: Path | None, config: str | None = None) -> tuple[Any, Any, str]:
    """(configuration picker, case picker, transcript) for a run, the first failure shown."""
    index = case_index(path) if path is not None else {}
    configs = config_choices(index)
    if not (isinstance(config, str) and config in index):
        config = configs[0][1] if configs else None
    cases = case_choices(index, config)
    case = cases[0][1] if cases else None
    return (gr.Dropdown(choices=configs, value=config), gr.Dropdown(choices=cases, value=case),
            _transcript(path, case))


class ExperimentsTab:
    """Browses sweep results and runs the offline default sweep with a progress bar."""

    def __init__(self, results_dir: Path):
        self.results_dir = results_dir.resolve()
        self._sweep_lock = threading.Lock()
        self.cache_dir = ""

    @property
    def admin_handlers(self) -> dict[str, Any]:
        """Every handler, for admins only on a public page; the page's own load shows a
        visitor an empty tab rather than an error."""
        return {**dict.fromkeys(ADMIN_HANDLERS), "load": lambda: self.empty(ADMIN_ONLY)}

    def build(self, demo: gr.Blocks) -> None:
        gr.Markdown("A sweep runs every scenario for each persona \u00d7 model \u00d7 "
                    "temperature of a grid and writes its rows, transcripts, summary and charts "
                    f"to a folder under `{self.results_dir.name}/`. The offline sweep needs no "
                    "API key.", elem_classes="tw-note")
        with gr.Row(equal_height=False, elem_classes="tw-wrap-row"):
            with gr.Column(scale=3):
                with gr.Row(equal_height=False, elem_classes="tw-wrap-row"):
                    # The pickers' values are checked by the handlers, in words: Gradio's own
                    # check of a value sent through the API logs a traceback each time.
                    runs = accept_any(gr.Dropdown(label="Run", choices=[], value=None, scale=5,
                                                  elem_id="run-picker"))
                    refresh = gr.Button("Refresh list", size="sm", scale=1, min_width=110,
                                        elem_id="runs-refresh", elem_classes="tw-inline-button")
            with gr.Column(scale=2):
                with gr.Row(equal_height=False, elem_classes="tw-wrap-row"):
                    limit = gr.Number(label="Cases (0 = the whole grid)", value=0, precision=0,
                                      minimum=0, scale=2, min_width=120, elem_id="sweep-limit")
                    start = gr.Button("Run the offline sweep", variant="primary", scale=3,
                                      elem_id="sweep-start", elem_classes="tw-inline-button")
        status = gr.Markdown(elem_id="sweep-status")
        summary = gr.Dataframe(label="Summary (one row per configuration)", interactive=False,
                               wrap=False, max_height=420, elem_id="run-summary")
        # One chart a row, each as wide as the page allows, the report's key chart first;
        # "max-content": the gallery grows to show every chart instead of scrolling inside a
        # box one and a half rows tall.
        charts = gr.Gallery(label="Charts", columns=1, height="max-content",
                            object_fit="contain", elem_id="run-charts",
                            buttons=["download", "fullscreen"])
        self.cache_dir = charts.GRADIO_CACHE
        with gr.Accordion("Report", open=False):
            report = gr.Markdown(elem_id="run-report")
        cases = self._build_transcripts()
        comparison = self._build_compare(runs)
        shown = [summary, charts, report, *cases, comparison[0]]
        quiet: dict[str, Any] = {"show_progress": "hidden"}
        refresh.click(self.refresh, [runs], [runs, *shown], api_name="runs_refresh", **quiet)
        runs.change(self.show, [runs], shown, api_name="runs_show", **quiet)
        # One progress bar, in the status line: not one over every output of the event.
        start.click(self.sweep, [limit], [runs, *shown, status], api_name="sweep",
                    concurrency_limit=1, concurrency_id="sweep", show_progress_on=[status])
        demo.load(self.load, [runs], [runs, *shown], api_visibility="private", **quiet)
        config, case, transcript = cases
        config.input(self.pick_config, [runs, config], [case, transcript],
                     api_name="transcript_config", **quiet)
        case.input(self.show_case, [runs, case], [transcript], api_name="transcript", **quiet)
        baseline, button, result, image = comparison
        button.click(self.compare, [runs, baseline], [result, image], api_name="compare")

    @staticmethod
    def _build_transcripts() -> list[Any]:
        with gr.Accordion("Transcripts: one case's whole conversation", open=False,
                          elem_id="transcripts"):
            with gr.Row(equal_height=False, elem_classes="tw-wrap-row"):
                config = accept_any(gr.Dropdown(label="Configuration", choices=[], value=None,
                                                scale=3, elem_id="transcript-config"))
                case = accept_any(gr.Dropdown(label="Scenario and repeat (failures first)",
                                              choices=[], value=None, scale=2,
                                              elem_id="transcript-case"))
            transcript = gr.HTML(transcript_html(None), elem_id="transcript-view")
        return [config, case, transcript]

    @staticmethod
    def _build_compare(runs: Any) -> list[Any]:
        with gr.Accordion("Compare with another run", open=False, elem_id="compare"):
            with gr.Row(equal_height=False, elem_classes="tw-wrap-row"):
                baseline = accept_any(gr.Dropdown(
                    label="Baseline run (A); the run picked above is B", choices=[],
                    value=None, scale=4, elem_id="compare-baseline"))
                button = gr.Button("Compare", scale=1, min_width=110,
                                   elem_id="compare-start", elem_classes="tw-inline-button")
            result = gr.Markdown(elem_id="compare-result")
            image = gr.Image(label="B - A per configuration", show_label=True,
                             interactive=False, elem_id="compare-chart", visible=True)
        return [baseline, button, result, image]

    def _view(self, run_id: str | None) -> tuple[Any, ...]:
        path = run_dir(self.results_dir, run_id)
        others = [c for c in run_choices(self.results_dir) if c[1] != run_id]
        return (*show_run(self.results_dir, run_id, self.cache_dir), *show_cases(path),
                gr.Dropdown(choices=others, value=others[0][1] if others else None))

    @staticmethod
    def empty(message: str) -> tuple[Any, ...]:
        """What `refresh` shows when there is nothing to show: no runs, and `message`."""
        nothing = gr.Dropdown(choices=[], value=None)
        return (nothing, {"headers": ["summary"], "data": [[message]]}, [], "", nothing,
                nothing, transcript_html(None), nothing)

    def load(self, current: str | None) -> tuple[Any, ...]:
        """The page's first look at the runs (quietly empty for a visitor of a public page)."""
        return self.refresh(current)

    def refresh(self, current: str | None) -> tuple[Any, ...]:
        choices = run_choices(self.results_dir)
        ids = [value for _, value in choices]
        value = current if current in ids else (ids[0] if ids else None)
        return (gr.Dropdown(choices=choices, value=value), *self._view(value))

    def show(self, run_id: str | None) -> tuple[Any, ...]:
        return self._view(run_id)

    def pick_config(self, run_id: str | None, config: str | None) -> tuple[Any, str]:
        _, case, transcript = show_cases(run_dir(self.results_dir, run_id), config)
        return case, transcript

    def show_case(self, run_id: str | None, case_key: str | None) -> str:
        return _transcript(run_dir(self.results_dir, run_id), case_key)

    def compare(self, run_b: str | None, run_a: str | None) -> tuple[str, Any]:
        from experiments.analyse.compare import CHART, compare_runs
        from experiments.analyse.tables import ReportError

        path_a, path_b = run_dir(self.results_dir, run_a), run_dir(self.results_dir, run_b)
        if path_a is None or path_b is None or path_a == path_b:
            return "Pick a run above and a different baseline run to compare it with.", None
        try:
            # Beside the runs, not in the app's working directory.
            result = compare_runs(path_a, path_b, self.results_dir)
        except (ReportError, ValueError, OSError) as exc:
            return f"These runs cannot be compared: {redact(str(exc))}", None
        text = result.report.read_text(encoding="utf-8").split("\n![", 1)[0]
        chart = publish_png(result.folder / CHART, result.folder, self.cache_dir)
        return safe_markdown(text), chart

    def sweep(self, limit: float | None,
              progress: gr.Progress = gr.Progress()) -> tuple[Any, ...]:  # noqa: B008
        skip = (gr.skip(),) * 8
        if not self._sweep_lock.acquire(blocking=False):
            return (*skip, "A sweep is already running; its results will appear when it ends.")
        try:
            run_id, message = self._run_sweep(int(limit or 0) or None, progress)
        finally:
            self._sweep_lock.release()
        if run_id is None:
            return (*skip, message)
        return (*self.refresh(run_id), message)

    def _run_sweep(self, limit: int | None, progress: gr.Progress) -> tuple[str | None, str]:
        """Run the sweep in a thread; report its progress from this one (Gradio's context)."""
        from experiments.run.runner import SweepError, run_sweep
        from experiments.store import open_run

        updates: queue.SimpleQueue[Any] = queue.SimpleQueue()
        outcome: dict[str, Any] = {}

        def work() -> None:
            try:
                outcome["run"] = run_sweep(None, out_dir=self.results_dir, progress=updates.put,
                                           limit=limit, report=False, echo=log.info)
                attempts = open_run(outcome["run"]).meta().get("attempts") or [{}]
                outcome["limit"] = attempts[-1].get("limit") or ""
                outcome["report"] = self._report(outcome["run"])
            except SweepError as exc:  # e.g. a limit below one scenario per configuration
                outcome["refused"] = redact(str(exc))
            except Exception as exc:
                log.exception("sweep failed")
                outcome["error"] = redact(f"{type(exc).__name__}: {exc}")
            finally:
                updates.put(None)

        progress(0, desc="Planning the sweep")
        threading.Thread(target=work, name="treadwise-sweep", daemon=True).start()
        while (update := updates.get()) is not None:
            progress((update.done, update.total), desc=f"{update.succeeded} passed, "
                     f"{update.failed} failed, {update.errors} errors {update.label}".strip(),
                     unit="cases")
        if "refused" in outcome:
            return None, f"Not started: {outcome['refused']}"
        if "error" in outcome:
            return None, f"The sweep stopped: {outcome['error']}"
        run = Path(outcome["run"])
        said = " ".join(filter(None, [outcome.get("limit"), outcome.get("report")]))
        return run.name, f"Sweep `{run.name}` finished. {said}".strip()

    @staticmethod
    def _report(run: Path) -> str:
        from experiments.analyse.report import write_report

        write_report(run)
        return ""
