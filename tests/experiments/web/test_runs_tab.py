"""The Experiments tab: runs listed, summary and charts shown, a sweep run from the page."""

from __future__ import annotations

import json
from pathlib import Path

import httpx
import pytest

from experiments.web.runs_tab import run_dir
from tests.support.webapp import loopback_client, serve_in_process
from treadwise.settings import Settings
from treadwise.web.files import PNG_MAGIC

RUN = "20260101-120000-default-abcd"


@pytest.fixture
def results(tmp_path: Path) -> Path:
    run = tmp_path / "results" / RUN
    (run / "charts").mkdir(parents=True)
    (run / "cases" / "case-1").mkdir(parents=True)
    (run / "meta.json").write_text(json.dumps({"created": "2026-01-01T12:00:00+00:00",
                                               "grid_name": "default", "status": "finished"}))
    (run / "results.csv").write_text("case_key,success\nk1,True\n")
    (run / "summary.csv").write_text("persona,model,success_rate\ntechnical,offline,1\n")
    (run / "charts" / "success_heatmap.png").write_bytes(PNG_MAGIC + b"chart")
    (run / "report.md").write_text("# Sweep report\n\n<img src=x onerror=alert(1)> all good\n")
    (run / "cases" / "case-1" / "leads.db").write_bytes(b"SQLite format 3 case@example.com")
    return tmp_path / "results"


def test_a_run_shows_its_summary_charts_and_report_and_nothing_else_is_served(results: Path):
    with serve_in_process(Settings.from_env(), results_dir=results) as url:
        client = loopback_client(url, download_files=False)
        runs, summary, charts, report, config, case, transcript, baseline = client.predict(
            None, api_name="/runs_refresh")
        assert runs["value"] == RUN and RUN in runs["choices"][0][0]
        assert summary["headers"] == ["persona", "model", "success_rate"]
        assert summary["data"] == [["technical", "offline", "1"]]
        chart = charts[0]["image"]
        assert httpx.get(f"{url}gradio_api/file={chart['path']}").content.startswith(PNG_MAGIC)
        assert "&lt;img" in report and "all good" in report
        assert config["choices"] == [] and "Pick a configuration" in transcript
        for private in [results / RUN / "cases" / "case-1" / "leads.db",
                        results / RUN / "charts" / "success_heatmap.png",
                        results / RUN / "results.csv"]:
            assert httpx.get(f"{url}gradio_api/file={private}").status_code != 200


def test_only_listed_run_folders_can_be_opened(results: Path):
    assert run_dir(results, RUN) == (results / RUN).resolve()
    for hostile in ["..", "../results", f"{RUN}/cases", "/etc", ".hidden", "", None, "nope"]:
        assert run_dir(results, hostile) is None


@pytest.mark.slow
def test_a_small_sweep_runs_from_the_page_and_its_results_appear(tmp_path: Path):
    results = tmp_path / "results"
    with serve_in_process(Settings.from_env(), results_dir=results) as url:
        client = loopback_client(url, download_files=False)
        runs, summary, charts, *_, status = client.predict(3, api_name="/sweep")
    assert "finished" in status
    assert runs["value"] and (results / runs["value"] / "results.csv").exists()
    assert "success_rate" in summary["headers"] and summary["data"]
    assert charts


def test_a_database_run_is_listed_reported_and_read_from_another_machines_folder(
        tmp_path: Path, database_url: str, monkeypatch):
    """A run kept in PostgreSQL (as a cluster run is with TREADWISE_DATABASE_URL) made on one
    machine: the app's results folder elsewhere has none of its files, yet the tab lists it,
    writes and shows its report, and reads its transcripts from the database."""
    from experiments.web.runs_tab import ExperimentsTab
    from tests.experiments.run.test_runner import HOURS, sweep, write_grid

    monkeypatch.setenv("TREADWISE_DATABASE_URL", database_url)
    made, _ = sweep(write_grid(tmp_path, [HOURS], repeats=2), tmp_path / "elsewhere")
    assert not (made / "results.csv").exists()  # its rows are in the database only
    tab = ExperimentsTab(tmp_path / "app-results")
    tab.cache_dir = str(tmp_path / "web-cache")  # the served copies of charts, as the app sets
    runs, summary, charts, report, config, case, transcript, _ = tab.refresh(None)
    assert runs.value == made.name
    assert runs.choices == [(f"{made.name} (2 cases, in the database)", made.name)]
    assert "success_rate" in summary["headers"] and len(summary["data"]) == 1
    assert charts and f"Sweep report: {made.name}" in report
    assert config.choices and case.value and "hours" in transcript.lower()
    assert (tmp_path / "app-results" / made.name / "report.md").is_file()
    for hostile in ["..", f"../elsewhere/{made.name}", "nope"]:
        assert tab.show(hostile)[0]["data"] == [["Pick a run."]]
