"""The sweep runner end to end: the default grid, kill and resume, providers over loopback."""

from __future__ import annotations

import csv
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
import yaml

from experiments.define.grid import load_grid
from experiments.define.scenarios import DEFAULT_SCENARIOS, load_scenarios
from experiments.run.runner import Progress, SweepError, run_sweep
from experiments.store.folder import read_meta
from experiments.store.records_file import RECORDS_FILE, read_records
from experiments.store.results_file import RESULTS_FILE, read_rows
from tests.support.cli import experiments
from tests.support.loopback import OpenAIServer
from tests.support.webapp import ROOMY_MATH_S

PNG_SIGNATURE = b"\x89PNG\r\n\x1a\n"
HOURS = {"id": "hours", "category": "information query", "turns": ["What are your opening hours?"],
         "checks": [{"kind": "tools_called", "tools": ["get_business_info"]},
                    {"kind": "answer_matches", "pattern": "Monday"}]}


def write_grid(folder: Path, own: list[dict] | None = None, **fields) -> Path:
    """A grid file in `folder`, with its own scenario file when `own` scenarios are given."""
    grid = {"personas": ["friendly"], "models": ["offline"], "temperatures": [0.0],
            "repeats": 1, "concurrency": 2, "timeout_s": 10, **fields}
    if own is not None:
        (folder / "scenarios.yaml").write_text(yaml.safe_dump({"scenarios": own}))
        grid["scenarios"] = {"file": "scenarios.yaml"}
    path = folder / "grid.yaml"
    path.write_text(yaml.safe_dump(grid))
    return path


def sweep(grid: Path, out: Path, **options) -> tuple[Path, list[str]]:
    lines: list[str] = []
    options.setdefault("report", False)
    run_dir = run_sweep(grid, out_dir=out, progress=lambda p: None, echo=lines.append,
                        **options)
    return run_dir, lines


def cli(repo: Path, *args: str, timeout: float = 240,
        process: bool = False) -> subprocess.CompletedProcess:
    """`python -m experiments ARGS` in `repo`: in this process (tests/support/cli.py), or as a
    real process where starting one is what the test is about."""
    if not process:
        return experiments(*args, cwd=repo)
    return subprocess.run([sys.executable, "-m", "experiments", *args], cwd=repo,
                          capture_output=True, text=True, timeout=timeout, check=False)


def valid_png(path: Path) -> bool:
    import matplotlib.image

    data = path.read_bytes()
    if not data.startswith(PNG_SIGNATURE) or len(data) < 10_000:
        return False
    pixels = matplotlib.image.imread(path)
    return float(pixels[..., :3].std()) > 0.02


@pytest.mark.slow
def test_default_grid_runs_with_no_key_through_the_cli(repo, tmp_path):
    started = time.perf_counter()
    done = cli(repo, "run", "--out", str(tmp_path), timeout=280, process=True)
    assert done.returncode == 0, done.stderr[-2000:]
    (run_dir,) = [p for p in tmp_path.iterdir() if p.is_dir()]
    scenarios = load_scenarios(DEFAULT_SCENARIOS)
    rows = read_rows(run_dir / RESULTS_FILE)
    assert len(rows) == 3 * 3 * len(scenarios) * 3
    assert len({r["case_key"] for r in rows}) == len(rows)
    assert {r["model_spec"] for r in rows} == {"offline"}
    assert all(r["error_type"] == "" for r in rows)
    assert "cells: 9" in done.stderr and "success" in done.stderr
    summary = list(csv.DictReader((run_dir / "summary.csv").open()))
    assert len(summary) == 9
    charts = sorted((run_dir / "charts").glob("*.png"))
    assert len(charts) >= 6 and all(valid_png(c) for c in charts)
    report = (run_dir / "report.md").read_text()
    assert all(f"](charts/{c.name})" in report for c in charts)
    assert "offline (rule-based, not an LLM)" in report
    for copy in ("grid.yaml", "scenarios.yaml", "prices.yaml", "meta.json"):
        assert (run_dir / copy).exists()
    assert read_meta(run_dir)["status"] == "finished"
    print(f"default sweep through the CLI: {time.perf_counter() - started:.1f} s")


@pytest.mark.slow
def test_a_killed_sweep_resumes_without_running_any_case_twice(repo, tmp_path):
    grid = write_grid(tmp_path, personas=["friendly", "technical", "cautious"],
                      temperatures=[0.0, 1.0], repeats=2, concurrency=2,
                      scenarios={"file": str(DEFAULT_SCENARIOS),
                                 "categories": ["information query", "tire recommendation",
                                                "service inquiry", "lead collection",
                                                "unknown question"]})
    total = len(load_grid(grid).cases())
    out = tmp_path / "results"
    child = subprocess.Popen([sys.executable, "-m", "experiments", "run", "--grid", str(grid),
                              "--out", str(out), "--no-report"], cwd=repo,
                             stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    deadline = time.monotonic() + 120
    rows_before: list = []
    while time.monotonic() < deadline and child.poll() is None:
        found = list(out.glob(f"*/{RECORDS_FILE}"))
        rows_before = read_records(found[0]) if found else []
        if len(rows_before) >= 15:
            break
        time.sleep(0.02)
    child.send_signal(signal.SIGKILL)
    child.wait(timeout=30)
    (run_dir,) = list(out.iterdir())
    rows_before = read_records(run_dir / RECORDS_FILE)  # kept as each case finished
    assert 15 <= len(rows_before) < total, "the sweep must be killed midway"
    assert not (run_dir / RESULTS_FILE).exists()  # the export is written when a run ends
    assert read_meta(run_dir)["status"] == "running"
    listing = cli(repo, "list", "--out", str(out))
    assert run_dir.name in listing.stdout and listing.stdout.rstrip().endswith("interrupted")

    done = cli(repo, "run", "--resume", str(run_dir), "--no-report")
    assert done.returncode == 0, done.stderr[-2000:]
    assert f"already done: {len(rows_before)}" in done.stderr
    rows = read_records(run_dir / RECORDS_FILE)
    keys = [r.case_key for r in rows]
    assert len(rows) == total
    assert len(set(keys)) == total
    assert {c.key for c in load_grid(grid).cases()} == set(keys)
    # Rows finished before the kill are kept as they were, not run again.
    assert rows[:len(rows_before)] == rows_before
    assert [r["case_key"] for r in read_rows(run_dir / RESULTS_FILE)] == keys
    meta = read_meta(run_dir)
    assert meta["status"] == "finished" and len(meta["attempts"]) == 2


def test_resume_skips_finished_cases_and_ignores_a_half_written_row(tmp_path):
    grid = write_grid(tmp_path, [HOURS], personas=["friendly", "technical"], repeats=3)
    run_dir, _ = sweep(grid, tmp_path / "out", limit=2)
    first = read_rows(run_dir / RESULTS_FILE)
    assert len(first) == 2
    with (run_dir / RECORDS_FILE).open("a") as handle:
        handle.write(f'{{"run_id":"r","case_key":"{first[0]["case_key"][:-1]}9","answer":"cut')
    run_dir, lines = sweep(None, tmp_path / "out", resume=run_dir)
    rows = read_rows(run_dir / RESULTS_FILE)
    assert len(rows) == 6 and len({r["case_key"] for r in rows}) == 6
    assert len(read_records(run_dir / RECORDS_FILE)) == 6  # the cut line is gone
    assert rows[:2] == first
    assert any("already done: 2" in line for line in lines)


def test_a_run_that_is_still_running_cannot_be_resumed_twice(tmp_path):
    from experiments.store.folder import locked

    grid = write_grid(tmp_path, [HOURS], repeats=2)
    run_dir, _ = sweep(grid, tmp_path / "out", limit=1)
    with locked(run_dir), pytest.raises(SweepError, match="is being run right now by pid"):
        sweep(None, tmp_path / "out", resume=run_dir)
    assert len(read_rows(run_dir / RESULTS_FILE)) == 1
    run_dir, _ = sweep(None, tmp_path / "out", resume=run_dir)
    assert len(read_rows(run_dir / RESULTS_FILE)) == 2


def test_resume_rejects_a_folder_that_is_not_a_run(tmp_path):
    with pytest.raises(SweepError, match="not a run folder"):
        run_sweep(None, resume=tmp_path, progress=lambda p: None, echo=lambda line: None)


def test_progress_reports_every_case_with_the_success_count(tmp_path):
    grid = write_grid(tmp_path, [HOURS], repeats=3)
    seen: list[Progress] = []
    run_sweep(grid, out_dir=tmp_path / "out", progress=seen.append, report=False,
              echo=lambda line: None)
    assert seen[-1] == Progress(3, 3, 3, 0, seen[-1].label, 0)
    assert [p.done for p in seen] == [0, 1, 2, 3]
    assert seen[-1].success_rate == 1.0


def test_a_sweep_uses_its_settings_math_time_limit_in_a_process_that_ran_math_before(
        tmp_path, monkeypatch):
    """The process's math pool starts with the limit of its first user; a later sweep in the
    same process (the app's Experiments tab, a test) still gets its own settings' limit."""
    scenario = [s for s in yaml.safe_load(DEFAULT_SCENARIOS.read_text())["scenarios"]
                if s["id"] == "math_integral_plot"]
    grid = write_grid(tmp_path, scenario, repeats=1, concurrency=1, keep_cases="none")
    # The first limit is roomy: at the 5 s default, a machine running the suite twice at once
    # starved this integral and its plot past it (the second limit is what is under test).
    monkeypatch.setenv("TREADWISE_MATH_TIMEOUT_S", str(ROOMY_MATH_S))
    first, _ = sweep(grid, tmp_path / "roomy")
    monkeypatch.setenv("TREADWISE_MATH_TIMEOUT_S", "0.001")
    second, _ = sweep(grid, tmp_path / "tight")
    (ran,), (cut,) = read_rows(first / RESULTS_FILE), read_rows(second / RESULTS_FILE)
    assert ran["success"] == "True", ran["answer"]
    assert cut["success"] == "False" and "over 0.001 s" in cut["answer"], cut["answer"]


@pytest.mark.slow
def test_every_case_has_its_own_data_dir(tmp_path, monkeypatch):
    # Each case must plot; three at once on a loaded machine can starve a plot past the 5 s
    # default (seen with the suite run twice at once: "ran integrate", no plot).
    monkeypatch.setenv("TREADWISE_MATH_TIMEOUT_S", str(ROOMY_MATH_S))
    scenarios = [s for s in yaml.safe_load(DEFAULT_SCENARIOS.read_text())["scenarios"]
                 if s["id"] in ("lead_single", "math_integral_plot")]
    grid = write_grid(tmp_path, scenarios, repeats=3, concurrency=3, keep_cases="all")
    run_dir, _ = sweep(grid, tmp_path / "out")
    rows = read_rows(run_dir / RESULTS_FILE)
    assert all(r["success"] == "True" for r in rows), \
        [(r["check_details"], r["answer"][:300]) for r in rows if r["success"] != "True"]
    cases = run_dir / "cases"
    assert sorted(p.name for p in cases.iterdir()) == sorted(r["case_key"] for r in rows)
    plots = sorted(cases.glob("*-math_integral_plot-*/plots/*.png"))
    assert len(plots) == 3 and all(p.read_bytes().startswith(PNG_SIGNATURE) for p in plots)
    assert not (cases / "plots").exists() and not (cases / "leads.db").exists()
    from treadwise.storage.sqlite import Store

    for folder in cases.glob("*-lead_single-*"):
        assert [lead["email"] for lead in Store(folder).leads()] == ["ana@fleetco.com"]


def test_only_failed_cases_keep_what_they_wrote_by_default(tmp_path):
    lead = next(s for s in yaml.safe_load(DEFAULT_SCENARIOS.read_text())["scenarios"]
                if s["id"] == "lead_single")
    grid = write_grid(tmp_path, [lead, {**lead, "id": "lead_wrong", "checks": [
        {"kind": "answer_matches", "pattern": "Ulaanbaatar"}]}, HOURS])
    run_dir, _ = sweep(grid, tmp_path / "out")
    # The passing lead case wrote a database too, but only the failure keeps its folder; a
    # case that wrote nothing never had one.
    (kept,) = (run_dir / "cases").iterdir()
    assert kept.name.endswith("-lead_wrong-r1") and (kept / "leads.db").exists()


@pytest.mark.slow
def test_budget_stops_launching_new_cases(tmp_path):
    grid = write_grid(tmp_path, [HOURS], repeats=12, concurrency=1, budget={"max_calls": 5})
    run_dir, lines = sweep(grid, tmp_path / "out", report=True)
    rows = read_rows(run_dir / RESULTS_FILE)
    assert len(rows) == 3  # 2 model calls a case: the third case crosses 5
    meta = read_meta(run_dir)
    assert meta["status"] == "stopped_by_budget"
    assert meta["budget_stop"]["not_launched"] == 9
    assert "max_calls 5 reached" in meta["budget_stop"]["reason"]
    assert any("stopped launching new cases" in line for line in lines)
    assert "The budget stopped the sweep early" in (run_dir / "report.md").read_text()


def test_a_provider_without_a_key_is_skipped_with_one_line(tmp_path):
    grid = write_grid(tmp_path, [HOURS], models=["offline", "openai:gpt-4o-mini"])
    run_dir, lines = sweep(grid, tmp_path / "out")
    skipped = [line for line in lines if "skipped" in line]
    assert len(skipped) == 1 and "OPENAI_API_KEY" in skipped[0]
    assert {r["model_spec"] for r in read_rows(run_dir / RESULTS_FILE)} == {"offline"}
    assert "OPENAI_API_KEY" in json.dumps(read_meta(run_dir)["skipped_models"])


def test_strict_fails_instead_of_skipping(repo, tmp_path):
    grid = write_grid(tmp_path, [HOURS], models=["offline", "google_genai:gemini-2.0-flash"])
    done = cli(repo, "run", "--grid", str(grid), "--out", str(tmp_path / "out"), "--strict")
    assert done.returncode == 2
    assert "GOOGLE_API_KEY" in done.stderr and "Traceback" not in done.stderr
    assert not list((tmp_path / "out").glob("*/results.csv"))


def test_a_bad_grid_is_one_line_and_exit_2(repo, tmp_path):
    grid = write_grid(tmp_path, [HOURS], personas=["pirate"])
    done = cli(repo, "run", "--grid", str(grid), "--out", str(tmp_path / "out"))
    assert done.returncode == 2
    assert "unknown persona 'pirate'" in done.stderr and "Traceback" not in done.stderr


def openai_env(monkeypatch: pytest.MonkeyPatch, server: OpenAIServer) -> None:
    monkeypatch.setenv("OPENAI_BASE_URL", server.url + "/v1")
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-not-a-real-key")


def test_report_and_list_commands(repo, tmp_path):
    grid = write_grid(tmp_path, [HOURS])
    run_dir, _ = sweep(grid, tmp_path / "out")
    done = cli(repo, "report", str(run_dir))
    assert done.returncode == 0, done.stderr
    assert Path(done.stdout.strip()) == run_dir / "report.md"
    listing = cli(repo, "list", "--out", str(tmp_path / "out"))
    assert run_dir.name in listing.stdout and "report" in listing.stdout
    missing = cli(repo, "report", str(tmp_path / "nowhere"))
    assert missing.returncode == 2 and "no records.jsonl" in missing.stderr


def test_rows_carry_provenance(tmp_path):
    import treadwise

    grid = write_grid(tmp_path, [HOURS])
    run_dir, _ = sweep(grid, tmp_path / "out")
    (row,) = read_rows(run_dir / RESULTS_FILE)
    assert row["run_id"] == run_dir.name
    assert row["package_version"] == treadwise.__version__
    assert len(row["git_commit"]) == 40 or row["git_commit"] == "unknown"
    assert row["tool_sequence"] == '[["get_business_info"]]'
    assert int(row["response_words"]) == len(row["answer"].split()) > 0
    assert row["cost_usd"] == "0.0" and row["seed"].isdigit()
    assert os.path.exists(run_dir / "grid.yaml")


def test_a_case_whose_row_cannot_be_typed_is_an_error_row_not_a_hung_sweep(tmp_path,
                                                                         monkeypatch):
    from experiments.run import case_record

    usage = case_record._usage

    def half_a_token(ctx, case, turns, cache):
        found = usage(ctx, case, turns, cache)
        return {**found, "input_tokens": 2.5} if case.repeat == 1 and turns else found

    monkeypatch.setattr(case_record, "_usage", half_a_token)
    run_dir, _ = sweep(write_grid(tmp_path, [HOURS], repeats=2), tmp_path / "out")
    first, second = sorted(read_rows(run_dir / RESULTS_FILE), key=lambda r: r["repeat"])
    assert (first["status"], first["error_type"]) == ("error", "harness")
    assert "record could not be built: ValidationError" in first["error_message"]
    assert second["status"] == "ok" and read_meta(run_dir)["status"] == "finished"


def test_a_local_models_cases_go_to_workers_offering_it_whatever_its_settings():
    from experiments.run.placement import resource

    assert resource("local:smollm2?decoding=free&routing=tool") == "local:smollm2"
    assert resource("local:/models/x.gguf") == "local:/models/x.gguf"


@pytest.mark.slow  # a new process and a sweep in it, to see what it imported
def test_a_sweep_on_one_machine_never_imports_dask(repo, tmp_path):
    """Dask is for `--cluster` only: a new process running a sweep here (and the app's runs
    tab) never imports it, which cost every sweep's start 0.6 s when planning did."""
    grid = write_grid(tmp_path, [HOURS])
    code = ("import sys, experiments.web.runs_tab; from experiments.cli import main; "
            f"assert main(['run', '--grid', {str(grid)!r}, '--out', {str(tmp_path / 'out')!r}, "
            "'--no-report']) == 0; "
            "print(sorted(m for m in ('dask', 'distributed') if m in sys.modules))")
    done = subprocess.run([sys.executable, "-c", code], cwd=repo, capture_output=True, text=True,
                          timeout=240)
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.strip().splitlines()[-1] == "[]"
