"""The response cache: re-running a grid with one more factor pays only for the new cases."""

from __future__ import annotations

from experiments.run.response_cache import cache_path, request_key
from experiments.store.results_file import RESULTS_FILE, read_rows
from tests.experiments.run.test_runner import HOURS, cli, openai_env, sweep, write_grid
from tests.support.loopback import OpenAIServer, tool_then_answer


def test_adding_a_factor_pays_only_for_the_new_cases(tmp_path, monkeypatch):
    answer = tool_then_answer("get_business_info", {"topic": "opening hours"})
    with OpenAIServer(answer) as server:
        openai_env(monkeypatch, server)
        out = tmp_path / "out"
        first, _ = sweep(write_grid(tmp_path, [HOURS], models=["openai:gpt-test"], repeats=2),
                         out, cache=True)
        assert len(server.requests) == 4 and cache_path(out).exists()
        wider = write_grid(tmp_path, [HOURS], models=["openai:gpt-test"], repeats=2,
                           temperatures=[0.0, 0.7])
        second, _ = sweep(wider, out, cache=True)
        assert len(server.requests) == 8  # only the four calls of the two T=0.7 cases
        third, _ = sweep(wider, out)  # without --cache every call goes out again
        assert len(server.requests) == 16
    rows = read_rows(second / RESULTS_FILE)
    old = [r for r in rows if r["temperature"] == "0.0"]
    new = [r for r in rows if r["temperature"] == "0.7"]
    assert [r["cache_hits"] for r in old] == ["2", "2"] and all(
        r["http_attempts"] == "0" and r["status"] == "ok" for r in old)
    assert [r["cache_hits"] for r in new] == ["0", "0"]
    assert {r["answer"] for r in old} == {r["answer"] for r in read_rows(first / RESULTS_FILE)}
    assert all(r["cache_hits"] == "0" for r in read_rows(third / RESULTS_FILE))


def test_the_key_ignores_random_ids_but_not_the_conversation():
    def prompt(call_id: str, text: str) -> str:
        import json

        return json.dumps([
            {"lc": 1, "type": "constructor", "id": ["x", "HumanMessage"],
             "kwargs": {"content": text, "id": "run-1"}},
            {"lc": 1, "type": "constructor", "id": ["x", "AIMessage"],
             "kwargs": {"content": "", "tool_calls": [{"name": "add", "args": {"a": 1},
                                                       "id": call_id}]}}])

    assert request_key(prompt("call_a", "hi"), "m") == request_key(prompt("call_b", "hi"), "m")
    assert request_key(prompt("call_a", "hi"), "m") != request_key(prompt("call_a", "yo"), "m")
    assert request_key(prompt("call_a", "hi"), "m") != request_key(prompt("call_a", "hi"), "n")
    assert request_key(prompt("call_a", "hi"), "m", "64") != request_key(
        prompt("call_a", "hi"), "m")


def test_the_cli_takes_a_cache_file(repo, tmp_path):
    grid = write_grid(tmp_path, [HOURS])
    done = cli(repo, "run", "--grid", str(grid), "--out", str(tmp_path / "out"), "--cache",
               str(tmp_path / "c.sqlite"), "--no-report")
    assert done.returncode == 0, done.stderr
    assert (tmp_path / "c.sqlite").exists() and "response cache" in done.stderr
