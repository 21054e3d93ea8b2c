"""Sweeps against providers over loopback HTTP: retries, failures, timeouts, variations, rate
limits, errors apart from failures, estimated usage, first-token timing, strategies."""

from __future__ import annotations

import time

import pytest

from experiments.analyse.report import write_report
from experiments.define.grid import load_grid
from experiments.run.runner import SweepError
from experiments.store.folder import read_meta
from experiments.store.records_file import RECORDS_FILE, read_records
from experiments.store.results_file import RESULTS_FILE, read_rows
from tests.experiments.run.test_runner import HOURS, openai_env, sweep, write_grid
from tests.support.loopback import OpenAIServer, Reply, scripted, tool_then_answer


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


@pytest.mark.slow
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
    rows = read_records(run_dir / RECORDS_FILE)
    assert sorted(r.scenario for r in rows[:3]) == ["broken", "hours", "wrong"]
    assert rows[3].scenario == "broken"  # appended; readers take a case's latest record
    assert [r.status for r in rows if r.scenario == "broken"] == ["error", "ok"]
    exported = read_rows(run_dir / RESULTS_FILE)  # one row per case, its latest
    assert sorted((r["scenario"], r["status"]) for r in exported) == [
        ("broken", "ok"), ("hours", "ok"), ("wrong", "failed")]
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


def test_a_grids_temperature_and_seed_reach_the_provider(tmp_path, monkeypatch):
    with OpenAIServer(tool_then_answer("get_business_info", {"topic": "hours"})) as server:
        openai_env(monkeypatch, server)
        grid = write_grid(tmp_path, [HOURS], models=["openai:gpt-4o-mini"],
                          temperatures=[0.35], repeats=2)
        run_dir, _ = sweep(grid, tmp_path / "out")
        sent = list(server.requests)
    rows = read_rows(run_dir / RESULTS_FILE)
    assert [r["status"] for r in rows] == ["ok", "ok"]
    assert {r["temperature"] for r in sent} == {0.35} and len(sent) == 4
    # Each case's own seed: the two repeats ask with different ones, each turn with its case's.
    assert len({r["seed"] for r in sent}) == 2 and all(isinstance(r["seed"], int) for r in sent)


def test_a_case_whose_request_cannot_be_made_is_an_error_row(tmp_path):
    import dataclasses

    from experiments.run.prepare import prepare

    grid = load_grid(write_grid(tmp_path, [HOURS]))
    run_dir = tmp_path / "run"
    run_dir.mkdir()
    runner = prepare(grid, run_dir).runner(grid, run_dir, package_version="t", git_commit="t")
    case = grid.cases()[0]
    pirate = dataclasses.replace(case, cell=dataclasses.replace(case.cell, persona="pirate"))
    record = runner.run(pirate)
    assert record.row.status == "error"
    assert "There is no persona 'pirate'; pick one of friendly" in record.row.error_message
    assert runner.run(case).row.status == "ok"
