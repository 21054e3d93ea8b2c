"""Transcripts: one JSON line per case with the whole conversation, and `experiments show`."""

from __future__ import annotations

import json

import pytest
import yaml

from experiments.analyse.transcript_text import render
from experiments.define.scenarios import DEFAULT_SCENARIOS
from experiments.store.results_file import RESULTS_FILE, read_rows
from experiments.store.transcripts_file import (
    TRANSCRIPTS_FILE,
    TranscriptError,
    find_transcript,
    read_transcripts,
)
from tests.experiments.run.test_runner import cli, sweep, write_grid


@pytest.fixture(scope="module")
def run(tmp_path_factory):
    """A small offline run: a two-turn lead, a plotted integral, and a check that fails."""
    folder = tmp_path_factory.mktemp("transcripts")
    scenarios = [s for s in yaml.safe_load(DEFAULT_SCENARIOS.read_text())["scenarios"]
                 if s["id"] in ("lead_two_turn", "math_integral_plot")]
    scenarios.append({"id": "impossible", "category": "information query",
                      "turns": ["What are your opening hours?"],
                      "checks": [{"kind": "answer_matches", "pattern": "Ulaanbaatar"}]})
    grid = write_grid(folder, scenarios, personas=["friendly", "technical"])
    run_dir, _ = sweep(grid, folder / "out")
    return run_dir


@pytest.mark.thorough
def test_every_case_writes_its_whole_conversation_on_one_line(run):
    lines = (run / TRANSCRIPTS_FILE).read_text().splitlines()
    rows = read_rows(run / RESULTS_FILE)
    assert len(lines) == len(rows) == 6
    transcripts = {t["case_key"]: t for t in read_transcripts(run)}
    assert set(transcripts) == {r["case_key"] for r in rows}
    lead = next(t for t in transcripts.values() if t["scenario"] == "lead_two_turn")
    assert lead["status"] == "ok" and lead["config"]["model"] == "offline"
    first, second = lead["turns"]
    assert first["user"].startswith("I'm interested") and "e-mail" in first["answer"]
    assert second["user"] == "Sure, it's ana@fleetco.com"
    call, result, answer = second["messages"]
    (recorded,) = call["calls"]
    assert recorded["name"] == "record_customer_interest"
    assert recorded["args"]["email"] == "ana@fleetco.com"
    assert "fleet" in recorded["args"]["message"]
    assert result["tool"] == "record_customer_interest" and "ana@fleetco.com" in result[
        "result"] and result["s"] >= 0
    assert answer["ai"] == second["answer"] and answer["usage"][0] > 0
    assert second["usage"]["input_tokens"] > 0 and second["model_calls"] == 2
    plot = next(t for t in transcripts.values() if t["scenario"] == "math_integral_plot")
    assert [c["name"] for m in plot["turns"][0]["messages"] for c in m.get("calls", [])] == [
        "integrate", "plot_area"]
    # Compact: about two kilobytes a case, so 10 000 cases stay around 20 MB.
    assert max(len(line) for line in lines) < 6000


def test_show_prints_a_case_with_failed_checks_marked(run, repo):
    failed = next(r for r in read_rows(run / RESULTS_FILE) if r["scenario"] == "impossible")
    done = cli(repo, "show", str(run), failed["case_key"])
    assert done.returncode == 0, done.stderr
    assert f"case {failed['case_key']}: FAILED" in done.stdout
    assert "[FAIL] answer_matches: answer does not match /Ulaanbaatar/" in done.stdout
    assert "[pass] no_error" in done.stdout
    assert "tool get_business_info" in done.stdout and "user: What are your opening hours?" \
        in done.stdout
    as_json = cli(repo, "show", str(run), failed["case_key"], "--json")
    assert json.loads(as_json.stdout)["case_key"] == failed["case_key"]
    ambiguous = cli(repo, "show", str(run), "impossible")
    assert ambiguous.returncode == 2 and "matches 2 cases" in ambiguous.stderr


def test_a_unique_part_of_a_key_finds_its_case_and_unknown_ones_say_so(run):
    key = read_rows(run / RESULTS_FILE)[0]["case_key"]
    assert find_transcript(run, key[:10] + "-" + key.split("-", 1)[1])["case_key"] == key
    assert "checks:" in render(find_transcript(run, key))
    with pytest.raises(TranscriptError, match="no case matches"):
        find_transcript(run, "no-such-case")


def test_a_half_written_line_is_skipped_and_cut_before_appending(tmp_path):
    from experiments.store.transcripts_file import TranscriptWriter

    path = tmp_path / TRANSCRIPTS_FILE
    path.write_text('{"case_key":"a","turns":[]}\n{"case_key":"b","tu')
    assert [t["case_key"] for t in read_transcripts(tmp_path)] == ["a"]
    writer = TranscriptWriter(path)
    writer.write({"case_key": "c", "turns": []})
    writer.close()
    assert [t["case_key"] for t in read_transcripts(tmp_path)] == ["a", "c"]
