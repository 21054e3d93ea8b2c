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

from experiments.analyse.report import write_report
from experiments.define.grid import load_grid
from experiments.define.scenarios import DEFAULT_SCENARIOS, load_scenarios
from experiments.run.runner import Progress, SweepError, run_sweep
from experiments.store.folder import read_meta
from experiments.store.results_file import RESULTS_FILE, read_rows
from treadwise.testing.loopback import OpenAIServer, Reply, scripted, tool_then_answer

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


def cli(repo: Path, *args: str, timeout: float = 240) -> subprocess.CompletedProcess:
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
    done = cli(repo, "run", "--out", str(tmp_path), timeout=280)
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
    rows_before: list[dict] = []
    while time.monotonic() < deadline and child.poll() is None:
        found = list(out.glob(f"*/{RESULTS_FILE}"))
        rows_before = read_rows(found[0]) if found else []
        if len(rows_before) >= 15:
            break
        time.sleep(0.02)
    child.send_signal(signal.SIGKILL)
    child.wait(timeout=30)
    (run_dir,) = list(out.iterdir())
    rows_before = read_rows(run_dir / RESULTS_FILE)
    assert 15 <= len(rows_before) < total, "the sweep must be killed midway"
    assert read_meta(run_dir)["status"] == "running"
    listing = cli(repo, "list", "--out", str(out))
    assert run_dir.name in listing.stdout and listing.stdout.rstrip().endswith("interrupted")

    done = cli(repo, "run", "--resume", str(run_dir), "--no-report")
    assert done.returncode == 0, done.stderr[-2000:]
    assert f"already done: {len(rows_before)}" in done.stderr
    rows = read_rows(run_dir / RESULTS_FILE)
    keys = [r["case_key"] for r in rows]
    assert len(rows) == total
    assert len(set(keys)) == total
    assert {c.key for c in load_grid(grid).cases()} == set(keys)
    # Rows finished before the kill are kept as they were, not run again.
    assert rows[:len(rows_before)] == rows_before
    meta = read_meta(run_dir)
    assert meta["status"] == "finished" and len(meta["attempts"]) == 2


def test_resume_skips_finished_cases_and_ignores_a_half_written_row(tmp_path):
    grid = write_grid(tmp_path, [HOURS], personas=["friendly", "technical"], repeats=3)
    run_dir, _ = sweep(grid, tmp_path / "out", limit=2)
    first = read_rows(run_dir / RESULTS_FILE)
    assert len(first) == 2
    with (run_dir / RESULTS_FILE).open("a") as handle:
        handle.write(f'r,{first[0]["case_key"][:-1]}9,x,hours,1,friendly,"cut off')
    run_dir, lines = sweep(None, tmp_path / "out", resume=run_dir)
    rows = read_rows(run_dir / RESULTS_FILE)
    assert len(rows) == 6 and len({r["case_key"] for r in rows}) == 6
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


def test_every_case_has_its_own_data_dir(tmp_path):
    scenarios = [s for s in yaml.safe_load(DEFAULT_SCENARIOS.read_text())["scenarios"]
                 if s["id"] in ("lead_single", "math_integral_plot")]
    grid = write_grid(tmp_path, scenarios, repeats=3, concurrency=3, keep_cases="all")
    run_dir, _ = sweep(grid, tmp_path / "out")
    rows = read_rows(run_dir / RESULTS_FILE)
    assert all(r["success"] == "True" for r in rows), [r["check_details"] for r in rows]
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


def test_a_429_with_retry_after_is_absorbed(tmp_path, monkeypatch):
    answer = tool_then_answer("get_business_info", {"topic": "opening hours"})
    brain = scripted(Reply(status=429, headers={"Retry-After": "1"}), answer)
    with OpenAIServer(brain) as server:
        openai_env(monkeypatch, server)
        grid = write_grid(tmp_path, [HOURS], models=["openai:gpt-4o-mini"], max_retries=2)
        started = time.perf_counter()
        run_dir, _ = sweep(grid, tmp_path / "out")
        elapsed = time.perf_counter() - started
        requests = list(server.requests)
    (row,) = read_rows(run_dir / RESULTS_FILE)
    assert row["success"] == "True", row["check_details"]
    assert row["error_type"] == ""
    assert len(requests) == 3  # the refused call, its retry, then the answer
    assert requests[0] == requests[1]
    assert elapsed >= 1.0
    assert row["provider"] == "openai" and row["model"] == "gpt-4o-mini"
    assert int(row["input_tokens"]) == 22 and float(row["cost_usd"]) > 0
    # The wait is visible beside the latency, and so is the refused request (this one test
    # really waits the 1 s: the row's retry_wait_s is measured, not taken from the header).
    assert row["http_attempts"] == "3" and float(row["retry_wait_s"]) >= 1.0
    assert float(row["ttft_s"]) >= 1.0


def test_a_model_that_only_fails_gives_error_rows_and_the_sweep_completes(tmp_path,
                                                                          monkeypatch):
    answer = tool_then_answer("get_business_info", {"topic": "opening hours"})

    def brain(request: dict) -> Reply:
        return Reply(status=500) if request.get("model") == "broken-model" else answer(request)

    with OpenAIServer(brain) as server:
        openai_env(monkeypatch, server)
        grid = write_grid(tmp_path, [HOURS], models=["openai:good-model", "openai:broken-model"],
                          repeats=2, max_retries=1, max_retry_wait_s=1)
        run_dir, _ = sweep(grid, tmp_path / "out", report=True)
        broken_requests = [r for r in server.requests if r["model"] == "broken-model"]
    rows = read_rows(run_dir / RESULTS_FILE)
    assert len(rows) == 4
    good = [r for r in rows if r["model"] == "good-model"]
    bad = [r for r in rows if r["model"] == "broken-model"]
    assert [r["success"] for r in good] == ["True", "True"]
    assert all(r["status"] == "error" and r["error_type"] == "provider_error" for r in bad)
    assert all(r["success"] == "False" for r in bad)
    assert all("HTTP 500" in r["error_message"] for r in bad)
    assert len(broken_requests) == 4  # each case: the call and its one retry
    # The retried request shows in the row even though no model call came back.
    assert [(r["http_attempts"], r["model_calls"]) for r in bad] == [("2", "0"), ("2", "0")]
    assert read_meta(run_dir)["status"] == "finished"
    report = (run_dir / "report.md").read_text()
    assert "provider_error x2" in report
    # The broken model's errors are not failures: no success rate is made up for it.
    # (No capability or safety rate either: the capability and safe behaviour columns.)
    assert ("| friendly / openai:broken-model / T=0 / baseline | 0 | 0 | 2 | n/a | n/a | "
            "n/a (n/a) | n/a (n/a) | n/a |") in report


def test_a_hanging_provider_times_out_per_call(tmp_path, monkeypatch):
    with OpenAIServer(lambda request: Reply(hang=True)) as server:
        openai_env(monkeypatch, server)
        grid = write_grid(tmp_path, [HOURS], models=["openai:gpt-4o-mini"], timeout_s=1,
                          max_retries=0)
        run_dir, _ = sweep(grid, tmp_path / "out")
    (row,) = read_rows(run_dir / RESULTS_FILE)
    assert row["error_type"] == "timeout" and "within 1 s" in row["error_message"]


def test_variations_reach_the_provider(tmp_path, monkeypatch):
    answer = tool_then_answer("get_business_info", {"topic": "opening hours"})
    with OpenAIServer(answer) as server:
        openai_env(monkeypatch, server)
        grid = write_grid(tmp_path, [HOURS], models=["openai:gpt-4o-mini"], variations={
            "baseline": {}, "terse": {"system_suffix": "Answer in one line.", "max_tokens": 64}})
        run_dir, _ = sweep(grid, tmp_path / "out")
        requests = list(server.requests)
    rows = read_rows(run_dir / RESULTS_FILE)
    assert {r["variation"] for r in rows} == {"baseline", "terse"}
    terse = [r for r in requests if "Answer in one line." in r["messages"][0]["content"]]
    plain = [r for r in requests if r not in terse]
    assert len(terse) == 2 and len(plain) == 2
    assert all(r.get("max_completion_tokens", r.get("max_tokens")) == 64 for r in terse)
    assert all("max_completion_tokens" not in r and "max_tokens" not in r for r in plain)
    seeds = {r.get("seed") for r in requests}
    assert None not in seeds and len(seeds) == 2  # one seed per case, derived from its key


def test_rate_limits_apply_only_to_the_provider_they_name(tmp_path, monkeypatch):
    from experiments.run.cases import ModelPool, sweep_settings

    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-not-a-real-key")
    monkeypatch.setenv("TREADWISE_RATE_LIMIT_RPS", "3")
    limited = load_grid(write_grid(tmp_path, [HOURS], models=["openai:a"],
                                   rate_limits={"openai": 2.5}))
    pool = ModelPool(limited, sweep_settings(limited, tmp_path))
    assert pool.prepare(limited.models, limited.temperatures) == {}
    assert pool.copy_for(limited.cells()[0]).rate_limiter.requests_per_second == 2.5
    free = load_grid(write_grid(tmp_path, [HOURS], models=["openai:a"],
                                rate_limits={"google_genai": 1}))
    pool = ModelPool(free, sweep_settings(free, tmp_path))
    pool.prepare(free.models, free.temperatures)
    assert pool.copy_for(free.cells()[0]).rate_limiter is None
    assert sweep_settings(free, tmp_path).timeout_s == 10


def test_report_and_list_commands(repo, tmp_path):
    grid = write_grid(tmp_path, [HOURS])
    run_dir, _ = sweep(grid, tmp_path / "out")
    done = cli(repo, "report", str(run_dir))
    assert done.returncode == 0, done.stderr
    assert Path(done.stdout.strip()) == run_dir / "report.md"
    listing = cli(repo, "list", "--out", str(tmp_path / "out"))
    assert run_dir.name in listing.stdout and "report" in listing.stdout
    missing = cli(repo, "report", str(tmp_path / "nowhere"))
    assert missing.returncode == 2 and "no results.csv" in missing.stderr


def test_rows_carry_provenance(tmp_path):
    import treadwise

    grid = write_grid(tmp_path, [HOURS])
    run_dir, _ = sweep(grid, tmp_path / "out")
    (row,) = read_rows(run_dir / RESULTS_FILE)
    assert row["run_id"] == run_dir.name
    assert row["package_version"] == treadwise.__version__
    assert len(row["git_commit"]) == 40 or row["git_commit"] == "unknown"
    assert row["tool_sequence"] == "get_business_info"
    assert int(row["response_words"]) == len(row["answer"].split()) > 0
    assert row["cost_usd"] == "0.0" and row["seed"].isdigit()
    assert os.path.exists(run_dir / "grid.yaml")


def test_errors_are_apart_from_failures_and_retry_errors_reruns_only_them(tmp_path,
                                                                          monkeypatch):
    answer = tool_then_answer("get_business_info", {"topic": "opening hours"})
    healthy = {"now": False}

    def brain(request: dict) -> Reply:
        user = next(m["content"] for m in request["messages"] if m["role"] == "user")
        if "broken" in user and not healthy["now"]:
            return Reply(status=503)
        return answer(request)

    broken = {**HOURS, "id": "broken", "turns": ["What are your broken opening hours?"]}
    wrong = {**HOURS, "id": "wrong", "checks": [{"kind": "answer_matches",
                                                 "pattern": "Ulaanbaatar"}]}
    with OpenAIServer(brain) as server:
        openai_env(monkeypatch, server)
        grid = write_grid(tmp_path, [HOURS, broken, wrong], models=["openai:gpt-test"],
                          max_retries=1, max_retry_wait_s=5)
        run_dir, _ = sweep(grid, tmp_path / "out")
        rows = {r["scenario"]: r for r in read_rows(run_dir / RESULTS_FILE)}
        assert {s: r["status"] for s, r in rows.items()} == {
            "hours": "ok", "broken": "error", "wrong": "failed"}
        assert rows["broken"]["error_type"] == "provider_error"
        assert rows["broken"]["http_attempts"] == "2" and float(rows["broken"][
            "retry_wait_s"]) > 0
        assert rows["hours"]["http_attempts"] == "2" and rows["hours"]["retry_wait_s"] == "0.0"
        assert 0 < float(rows["hours"]["ttft_s"]) <= float(rows["hours"]["latency_s"])
        assert rows["hours"]["usage_missing"] == "False"

        # A plain resume treats the errored case as done; --retry-errors runs it, alone.
        _, lines = sweep(None, tmp_path / "out", resume=run_dir)
        assert any("to run now: 0" in line for line in lines)
        healthy["now"] = True
        before = len(server.requests)
        _, lines = sweep(None, tmp_path / "out", resume=run_dir, retry_errors=True)
        assert any("to run now: 1, already done: 3 (1 errored)" in line for line in lines)
        assert len(server.requests) - before == 2  # the broken case's two model calls
    rows = read_rows(run_dir / RESULTS_FILE)
    assert sorted(r["scenario"] for r in rows[:3]) == ["broken", "hours", "wrong"]
    assert rows[3]["scenario"] == "broken"  # appended; readers take a case's latest row
    assert [r["status"] for r in rows if r["scenario"] == "broken"] == ["error", "ok"]
    with pytest.raises(SweepError, match="give it --resume"):
        sweep(grid, tmp_path / "out", retry_errors=True)


def test_missing_usage_is_estimated_and_flagged_not_zero(tmp_path, monkeypatch):
    def no_usage(request: dict) -> Reply:
        return Reply(body={"id": "c1", "object": "chat.completion", "created": 1,
                           "model": "m", "choices": [{"index": 0, "finish_reason": "stop",
                                                      "message": {"role": "assistant",
                                                                  "content": "Hello there"}}]})

    with OpenAIServer(no_usage) as server:
        openai_env(monkeypatch, server)
        grid = write_grid(tmp_path, [{**HOURS, "checks": []}], models=["openai:gpt-test"])
        run_dir, _ = sweep(grid, tmp_path / "out")
    (row,) = read_rows(run_dir / RESULTS_FILE)
    write_report(run_dir, charts=False)
    assert row["usage_missing"] == "True"
    assert int(row["input_tokens"]) > 100 and int(row["output_tokens"]) > 0
    assert "1 cases without provider token counts (estimated" in (
        run_dir / "report.md").read_text()


def test_streaming_grids_time_the_first_token(tmp_path, monkeypatch):
    def slow_words(request: dict) -> Reply:
        assert request.get("stream") is True
        return Reply(text="Our hours are Monday to Saturday " * 5)

    with OpenAIServer(slow_words) as server:
        openai_env(monkeypatch, server)
        grid = write_grid(tmp_path, [{**HOURS, "checks": []}], models=["openai:gpt-test"],
                          stream=True)
        run_dir, _ = sweep(grid, tmp_path / "out")
    (row,) = read_rows(run_dir / RESULTS_FILE)
    assert row["status"] == "ok" and float(row["ttft_s"]) < float(row["latency_s"])
    assert int(row["output_tokens"]) == 7  # the stream's own usage


def test_strategies_are_a_factor_and_react_keeps_todays_case_keys(tmp_path, monkeypatch):
    from experiments.run import runner
    from treadwise.agent import Agent

    plain = load_grid(write_grid(tmp_path, [HOURS]))
    grid = write_grid(tmp_path, [HOURS], strategies=["react", "plan-verify"])
    assert [c.key for c in load_grid(grid).cases()][0] == plain.cases()[0].key
    if not runner.strategies_supported():
        run_dir, lines = sweep(grid, tmp_path / "out")
        assert any("skipped strategy plan-verify" in line for line in lines)
        assert [r["strategy"] for r in read_rows(run_dir / RESULTS_FILE)] == ["react"]
        # Until the agent has strategies, stand in for one to see what reaches it.
        seen: list[str | None] = []
        original = Agent.run

        def run(self, message, strategy=None, **kwargs):
            seen.append(strategy)
            return original(self, message, **kwargs)

        monkeypatch.setattr(Agent, "run", run)
    run_dir, _ = sweep(grid, tmp_path / "out2")
    rows = read_rows(run_dir / RESULTS_FILE)
    assert sorted(r["strategy"] for r in rows) == ["plan-verify", "react"]
    assert len({r["config_hash"] for r in rows}) == 2
    if "seen" in locals():
        assert sorted(seen, key=str) == [None, "plan-verify"]


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
    from experiments.run.cluster_worker import resource

    assert resource("local:smollm2?decoding=free&routing=tool") == "local:smollm2"
    assert resource("local:/models/x.gguf") == "local:/models/x.gguf"
