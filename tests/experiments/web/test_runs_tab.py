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
    (run / "summary.csv").write_text(
        "label,scenarios,n,errors,success_rate,ci_low,ci_high,latency_per_call_p50_s,ttft_p50_s,"
        "mean_http_attempts,mean_input_tokens,mean_output_tokens,mean_cost_usd,mean_judge_score\n"
        "technical / offline / T=0,5,5,0,1,0.645669,1,0.0402,,0,1407,163,0,\n")
    (run / "charts" / "success_heatmap.png").write_bytes(PNG_MAGIC + b"chart")
    (run / "report.md").write_text("# Sweep report\n\n<img src=x onerror=alert(1)> all good\n")
    (run / "cases" / "case-1" / "leads.db").write_bytes(b"SQLite format 3 case@example.com")
    return tmp_path / "results"


def test_a_run_shows_its_summary_charts_and_report_and_nothing_else_is_served(results: Path):
    with serve_in_process(Settings.from_env(), results_dir=results) as url:
        client = loopback_client(url, download_files=False)
        runs, summary, charts, report, config, case, transcript, baseline = client.predict(
            None, api_name="/runs_refresh")
        assert runs["value"] == RUN
        assert runs["choices"] == [["default Jan 01 12:00:00 (1 case)", RUN]]
        # The report's readable table: named columns, percentages, "64-100%"; no raw or
        # empty column (no first token, no judge here).
        assert summary["headers"] == ["configuration", "scenarios", "cases", "errors",
                                      "success", "95% CI", "latency/call p50 (s)",
                                      "HTTP requests/case", "tokens in/out", "cost/case"]
        assert summary["data"] == [["technical / offline / T=0", "5", "5", "0", "100%",
                                    "65\u2013100%", "0.040", "0.0", "1407 / 163", "$0 (free)"]]
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
        *_, refused = client.predict(3, api_name="/sweep")
        runs, summary, charts, *_, status = client.predict(9, api_name="/sweep")
    assert refused == ("Not started: 3 cases cannot compare 9 configurations on the same "
                       "scenarios: the smallest comparable sweep is 9 cases (1 scenario each).")
    assert "finished" in status and "Case limit 9 keeps 9 cases" in status
    assert runs["value"] and (results / runs["value"] / "results.csv").exists()
    assert "success" in summary["headers"] and len(summary["data"]) == 9
    assert charts


# At the half between two shown digits: the CSV's six significant digits round them across it.
ON_THE_EDGE = {"latency_per_call_p50_s": 0.08650000000000002, "ttft_p50_s": 0.012499999}


@pytest.mark.slow
@pytest.mark.parametrize("edge", [False, True], ids=["as measured", "values on a digit's edge"])
def test_the_page_says_what_the_report_says_when_no_interval_can_be_given(
        tmp_path: Path, monkeypatch, edge: bool):
    """Two scenarios are too few for an interval: the tab's table has the report's words,
    also for a latency whose full value and the summary file's six digits round apart (the
    page reads the file, the report once formatted the full value)."""
    from experiments.analyse import report as report_module
    from experiments.web.runs_tab import read_table
    from tests.experiments.run.test_runner import HOURS, sweep, write_grid

    if edge:
        summarise = report_module.summarise
        monkeypatch.setattr(report_module, "summarise",
                            lambda df: summarise(df).assign(**ON_THE_EDGE))
    other = {**HOURS, "id": "hours_again", "turns": ["When are you open on Saturday?"]}
    made, _ = sweep(write_grid(tmp_path, [HOURS, other]), tmp_path / "results")
    report = report_module.write_report(made).read_text(encoding="utf-8")
    table = read_table(made / "summary.csv")
    section = report.split("## Configurations", 1)[1]
    row = next(line for line in section.splitlines() if line.startswith("| friendly"))
    cells = [cell.strip() for cell in row.strip("|").split(" | ")]
    headers = [h.strip() for h in section.split("\n| ", 1)[1].split("\n")[0].strip("| ")
               .split(" | ")]
    shown = dict(zip(table["headers"], table["data"][0], strict=True))
    assert shown["95% CI"] == "too few scenarios"
    written = dict(zip(headers, cells, strict=True))
    assert {h: shown[h] for h in shown} == {h: written[h] for h in shown}
    if edge:
        assert (shown["latency/call p50 (s)"], shown["first token p50 (s)"]) == ("0.086", "0.013")


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
    assert runs.choices[0][1] == made.name and "(2 cases, in the database)" in runs.choices[0][0]
    assert "success" in summary["headers"] and len(summary["data"]) == 1
    assert charts and f"Sweep report: {made.name}" in report
    assert config.choices and case.value and "hours" in transcript.lower()
    assert (tmp_path / "app-results" / made.name / "report.md").is_file()
    for hostile in ["..", f"../elsewhere/{made.name}", "nope"]:
        assert tab.show(hostile)[0]["data"] == [["Pick a run."]]
