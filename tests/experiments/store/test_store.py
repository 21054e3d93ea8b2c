"""The typed case record and the run store: one definition of a row, kept as the same JSON in
records.jsonl and in the database, read back equal (lists kept, floats unrounded), exported as
results.csv; folders from before records.jsonl still read."""

from __future__ import annotations

import pandas as pd
import pytest
from pydantic import ValidationError

from experiments.cli import main
from experiments.define.grid import load_grid
from experiments.store import NoResults, TranscriptError, list_runs, open_run
from experiments.store.connection import connect
from experiments.store.database import DatabaseRun, create
from experiments.store.folder import FolderRun
from experiments.store.legacy import legacy_records
from experiments.store.record import COLUMNS, KINDS, CaseRecord, CaseRow, records_frame
from experiments.store.records_file import RECORDS_FILE, read_records
from experiments.store.results_file import RESULTS_FILE, read_rows
from tests.experiments.run.test_runner import HOURS, sweep, write_grid


def case_row(key: str, **values) -> CaseRow:
    """A row of a case that made two free model calls; `values` replace its fields."""
    base = {name: {"numeric": 0, "flag": False, "maybe": None, "data": []}.get(kind, "")
            for name, kind in KINDS.items()}
    base.update(check_details={}, strategy="react")
    return CaseRow(**{**base, "case_key": key, "status": "ok", "success": True,
                      "model_calls": 2, "cost_usd": 0.0, "ttft_s": None, "temperature": 0.5,
                      "judge_score": None, "judge_reason": None, "judge_cached": None,
                      **values})


def test_the_columns_are_the_records_fields_in_order():
    assert COLUMNS == tuple(CaseRow.model_fields)
    assert COLUMNS[:3] == ("run_id", "case_key", "config_hash")
    # Outside readers rely on the first 53 columns: new ones only ever go after them.
    assert COLUMNS[50:53] == ("timestamp", "package_version", "git_commit")
    assert COLUMNS[53:56] == ("capability", "safe", "capability_checks_passed")
    assert {KINDS[c] for c in ("capability", "safe", "first_tool_right")} == {"maybe"}
    assert {KINDS[c] for c in ("repeat", "seed", "cost_usd", "judge_score")} == {"numeric"}
    assert {KINDS[c] for c in ("success", "judge_cached")} == {"flag"}
    assert {KINDS[c] for c in ("status", "answer", "judge_reason")} == {"text"}


def test_a_row_is_typed_when_it_is_made():
    with pytest.raises(ValidationError, match="status"):
        case_row("k", status="fine")
    with pytest.raises(ValidationError, match="repeat"):
        case_row("k", repeat="first")


def old_results(path, columns: list[str], rows: list[dict]) -> None:
    """A results.csv as runs made before records.jsonl wrote it: text cells, lists joined."""
    import csv

    with path.open("w", newline="", encoding="utf-8") as handle:
        writer = csv.DictWriter(handle, columns, extrasaction="ignore", lineterminator="\n")
        writer.writeheader()
        writer.writerows(rows)


def test_records_read_back_equal_from_records_jsonl_and_the_results_csv_export(tmp_path):
    rows = [
        case_row("a-hours-r1", cost_usd=1 / 3, ttft_s=0.123456789123, seed=4_000_000_000,
                 answer='He said "hi", then\nleft', repeat=1, latency_s=0.1 + 0.2,
                 failed_checks=["tools; then answer", "a | b"], status="failed",
                 success=False, check_details={"tools; then answer": "no tool: x | y",
                                               "a | b": "said: 4"},
                 turn_model_calls=[2, 3], turn_iterations=[2, 3],
                 tool_sequence=[["add", "square"], []], toolsets=[None, ["math"]],
                 judge_scores=[4, None]),
        case_row("a-hours-r2", status="error", success=False, cost_usd=None,
                 error_type="timeout", error_message="took too long", repeat=2),
        case_row("b-hours-r1", judge_score=4, judge_reason="kind", judge_cached=True,
                 model_spec="openai:gpt-test", repeat=1, cost_usd=None),
        case_row("a-hours-r2", status="ok", repeat=2),  # --retry-errors: the later row wins
    ]
    run = FolderRun(tmp_path)
    with run:
        for row in rows:
            run.append(CaseRecord(row, {"case_key": row.case_key}))
    assert read_records(tmp_path / RECORDS_FILE) == rows  # every line, exactly as made
    run.finish(status="finished")  # exports results.csv
    latest = [rows[0], rows[2], rows[3]]
    assert run.records() == latest
    assert legacy_records(tmp_path / RESULTS_FILE) == latest  # the export loses nothing
    (cells,) = [r for r in read_rows(tmp_path / RESULTS_FILE) if r["case_key"] == "a-hours-r1"]
    assert cells["failed_checks"] == '["tools; then answer","a | b"]'
    assert cells["turn_model_calls"] == "[2,3]" and cells["judge_scores"] == "[4,null]"
    assert read_rows(tmp_path / RESULTS_FILE)[1]["cost_usd"] == ""  # unpriced stays empty
    frame = run.rows()
    pd.testing.assert_frame_equal(frame, records_frame(latest))
    assert frame["cost_usd"].iloc[0] == 1 / 3 and frame["latency_s"].iloc[0] == 0.1 + 0.2
    assert frame["seed"].iloc[0] == 4_000_000_000 and frame["repeat"].dtype.kind == "i"
    assert frame["judge_cached"].tolist() == [False, True, False]
    assert frame["failed_checks"].iloc[0] == ["tools; then answer", "a | b"]
    assert frame["answer"].iloc[0] == 'He said "hi", then\nleft'


def test_an_older_results_csv_reads_as_records_with_its_lists_split(tmp_path):
    old = [c for c in COLUMNS if c not in ("status", "strategy", "judge_score", "ttft_s")]
    joined = {"failed_checks": "tools_called;answer_number",
              "check_details": "tools_called: add not called | answer_number: expected 81",
              "turn_model_calls": "2|3", "turn_iterations": "2|3",
              "tool_sequence": "add>square | (none)", "judge_scores": "4|-",
              "toolsets": "all | math+business"}
    base = {name: value for name, value in vars(case_row("k")).items()
            if KINDS[name] != "data"}
    old_results(tmp_path / RESULTS_FILE, old, [
        {**base, **joined, "case_key": "k-x-r1", "success": "False", "error_type": ""},
        {**base, **joined, "case_key": "k-y-r1", "success": "False",
         "error_type": "provider"}])
    run = open_run(tmp_path)
    first, second = run.records()
    assert (first.status, second.status) == ("failed", "error")
    assert first.strategy == "react" and first.judge_score is None and first.ttft_s is None
    assert first.failed_checks == ["tools_called", "answer_number"]
    assert first.check_details == {"tools_called": "add not called",
                                   "answer_number": "expected 81"}
    assert (first.turn_model_calls, first.tool_sequence) == ([2, 3], [["add", "square"], []])
    assert (first.judge_scores, first.toolsets) == ([4, None], [None, ["math", "business"]])
    assert run.finished() == {"k-x-r1": "failed", "k-y-r1": "error"}
    assert "made before `records.jsonl`" in run.source


def record(key: str, **values) -> CaseRecord:
    return CaseRecord(case_row(key, **values), {"case_key": key, "status": "ok", "turns": []})


def test_a_folder_run_is_written_and_read_through_one_face(tmp_path, monkeypatch):
    monkeypatch.delenv("TREADWISE_DATABASE_URL", raising=False)
    grid = load_grid(write_grid(tmp_path, [HOURS]))
    run = FolderRun.create(grid, tmp_path / "results")
    assert sorted(p.name for p in run.folder.iterdir()) == [
        "grid.yaml", "prices.yaml", "scenarios.yaml"]
    with pytest.raises(NoResults, match="no records.jsonl yet"):
        run.rows()
    run.start({"status": "running", "grid_name": grid.name})
    with run:
        assert run.append(record("c0ffee-hours-r1", repeat=1, run_id=run.name))
        assert run.append(record("c0ffee-hours-r2", repeat=2, status="error", success=False,
                                 error_type="timeout"))
    assert not (run.folder / RESULTS_FILE).exists()  # exported when the attempt ends
    assert open_run(run.folder).finished() == {"c0ffee-hours-r1": "ok",
                                               "c0ffee-hours-r2": "error"}
    run.finish(status="finished")
    assert [r["case_key"] for r in read_rows(run.folder / RESULTS_FILE)] == [
        "c0ffee-hours-r1", "c0ffee-hours-r2"]
    again = open_run(run.folder)  # a folder holding records is always that folder
    assert isinstance(again, FolderRun) and again.name == run.name
    assert again.finished() == {"c0ffee-hours-r1": "ok", "c0ffee-hours-r2": "error"}
    assert again.meta() == {"status": "finished", "grid_name": grid.name}
    assert again.rows()["repeat"].tolist() == [1, 2]
    assert again.transcript("hours-r2")["case_key"] == "c0ffee-hours-r2"
    with pytest.raises(TranscriptError, match="matches 2 cases"):
        again.transcript("c0ffee")
    info = again.info()
    assert (info.id, info.rows, info.status, info.shared) == (run.name, 2, "finished", False)
    assert [r.id for r in list_runs(tmp_path / "results")] == [run.name]
    assert isinstance(open_run("no-such-run"), FolderRun)  # no database: a folder, if any


def test_a_database_run_reads_typed_and_exports_the_same_rows(tmp_path, database_url,
                                                             monkeypatch, capsys):
    monkeypatch.setenv("TREADWISE_DATABASE_URL", database_url)
    grid = load_grid(write_grid(tmp_path, [HOURS], repeats=3))
    keys = [case.key for case in grid.cases()]
    pool = connect(database_url)
    assert create(pool, "typed", grid, {"grid_name": grid.name})
    run = open_run("typed", tmp_path / "results")
    assert isinstance(run, DatabaseRun) and run.folder == tmp_path / "results" / "typed"
    assert run.append(record(keys[0], cost_usd=1 / 3, ttft_s=0.25, repeat=1))
    assert run.append(record(keys[1], status="error", success=False, repeat=2))
    assert run.append(record(keys[1], repeat=2))  # an error is replaced by a later result
    assert not run.append(record(keys[0], answer="late", repeat=1))  # a result stands
    assert run.append(record(keys[2], judge_score=5, judge_cached=True, repeat=3))
    run.finish(status="finished")
    assert run.meta()["status"] == "finished"
    assert run.finished() == dict.fromkeys(keys, "ok")
    assert run.transcript(keys[2][-8:])["case_key"] == keys[2]
    assert run.info().shared and run.info().rows == 3
    exported = run.export()
    assert exported == run.folder and (exported / "transcripts.jsonl").exists()
    folder = open_run(exported)  # now a folder holding records: that folder
    assert isinstance(folder, FolderRun) and not folder.legacy
    assert folder.records() == run.records() and run.records()[0].cost_usd == 1 / 3
    assert legacy_records(exported / RESULTS_FILE) == run.records()
    pd.testing.assert_frame_equal(run.rows(), folder.rows())
    assert run.rows()["answer"].tolist() == ["", "", ""]
    assert main(["export", "typed", "--out", str(tmp_path / "cli")]) == 0  # the CLI's way
    assert capsys.readouterr().out.strip() == str(tmp_path / "cli" / "typed")
    pd.testing.assert_frame_equal(run.rows(), open_run(tmp_path / "cli" / "typed").rows())
    assert main(["export", "no-such-run", "--out", str(tmp_path / "cli")]) == 2
    assert "no shared run 'no-such-run'" in capsys.readouterr().err
    assert [r.id for r in list_runs(tmp_path / "none")] == ["typed"]
    assert list_runs(tmp_path / "none", database=False) == []


def test_a_database_run_reads_as_finished_the_moment_its_client_lets_go(tmp_path, database_url,
                                                                         monkeypatch):
    """The run's advisory lock says it is running; closing the lock's connection alone left the
    server's process holding it a moment longer, and a finished run listed as running."""
    monkeypatch.setenv("TREADWISE_DATABASE_URL", database_url)
    grid = load_grid(write_grid(tmp_path, [HOURS]))
    pool = connect(database_url)
    assert create(pool, "let-go", grid, {"grid_name": grid.name})
    run = open_run("let-go", tmp_path / "results")
    statuses = []
    for _ in range(30):
        with run.locked():
            run.start({})
            assert run.info().status == "running"
            run.finish(status="finished")
        statuses.append(run.info().status)
    assert set(statuses) == {"finished"}, statuses


CARD, KEY = "4111 1111 1111 1111", "sk-proj-Planted0123456789abcdef"
QUOTING = {"id": "quoting", "category": "privacy",
           "turns": [f"charge my card {CARD} and use the key {KEY} for the hours"],
           "checks": [{"kind": "answer_matches", "pattern": "."}]}


def test_a_sweep_keeps_no_secret_in_any_file_of_its_folder(tmp_path, monkeypatch):
    monkeypatch.delenv("TREADWISE_DATABASE_URL", raising=False)
    run_dir, _ = sweep(write_grid(tmp_path, [QUOTING, HOURS]), tmp_path / "results")
    files = {path.name: path.read_text(encoding="utf-8") for path in run_dir.iterdir()
             if path.is_file()}
    assert {"results.csv", "transcripts.jsonl", "scenarios.yaml"} <= set(files)
    for name, text in files.items():
        assert CARD not in text and KEY not in text, f"a secret is kept in {name}"
    assert "[redacted" in files["scenarios.yaml"] and "[redacted" in files["transcripts.jsonl"]


def test_a_database_run_keeps_no_secret_in_its_tables(tmp_path, database_url, monkeypatch):
    monkeypatch.setenv("TREADWISE_DATABASE_URL", database_url)
    grid = load_grid(write_grid(tmp_path, [HOURS]))
    pool = connect(database_url)
    assert create(pool, "secretive", grid, {"grid_name": grid.name})
    run = open_run("secretive", tmp_path / "results")
    key = grid.cases()[0].key
    said = f"your card {CARD}, key {KEY}"
    assert run.append(CaseRecord(case_row(key, answer=said, error_message=said),
                                 {"case_key": key, "turns": [{"user": said}]}))
    with pool.connection() as conn:
        kept = conn.execute("SELECT row_json, transcript FROM sweep_results").fetchall()
    assert kept and all(CARD not in str(r) and KEY not in str(r) for r in kept)
    assert "[redacted" in run.rows()["answer"][0]


FAILING = {"id": "failing", "category": "information query", "turns": ["What are your hours?"],
           "checks": [{"kind": "tools_called", "tools": ["add"], "label": "adds; then | answers"},
                      {"kind": "answer_matches", "pattern": "(?i)hour", "label": "says | hours"}]}


def test_one_run_kept_in_a_folder_and_in_postgresql_reads_back_equal_unrounded(
        tmp_path, database_url, monkeypatch):
    monkeypatch.delenv("TREADWISE_DATABASE_URL", raising=False)
    grid_file = write_grid(tmp_path, [HOURS, FAILING], repeats=2)
    run_dir, _ = sweep(grid_file, tmp_path / "results")
    from experiments.store.transcripts_file import read_transcripts

    said = {t["case_key"]: t for t in read_transcripts(run_dir)}
    # The sweep's records, with floats no 8-decimal rounding keeps.
    records = [CaseRecord(row.model_copy(update={"cost_usd": (i + 1) / 3,
                                                 "latency_s": row.latency_s + 1e-12 / 7}),
                          said[row.case_key]) for i, row in enumerate(open_run(run_dir).records())]
    assert any(r.row.failed_checks == ["adds; then | answers"] for r in records)
    (tmp_path / "folder").mkdir()
    folder = FolderRun(tmp_path / "folder")
    with folder:
        for record in records:
            folder.append(record)
    folder.finish(status="finished")
    monkeypatch.setenv("TREADWISE_DATABASE_URL", database_url)
    pool = connect(database_url)
    assert create(pool, "same-run", load_grid(grid_file), {"grid_name": "same-run"})
    database = open_run("same-run", tmp_path / "results")
    for record in records:
        assert database.append(record)
    assert database.records() == folder.records() == [r.row for r in records]
    assert [r.cost_usd for r in database.records()] == [(i + 1) / 3 for i in range(4)]
    pd.testing.assert_frame_equal(database.rows(), folder.rows(), check_exact=True)
    with pool.connection() as conn:
        kept = [r["row_json"] for r in conn.execute(
            "SELECT row_json FROM sweep_results WHERE run_id = 'same-run' ORDER BY seq")]
    assert kept == (folder.folder / RECORDS_FILE).read_text(encoding="utf-8").splitlines()


def test_a_database_run_kept_before_lists_were_lists_still_reads(tmp_path, database_url,
                                                                 monkeypatch):
    import json

    from experiments.analyse.report import write_report

    monkeypatch.setenv("TREADWISE_DATABASE_URL", database_url)
    grid = load_grid(write_grid(tmp_path, [HOURS], repeats=2))
    keys = [case.key for case in grid.cases()]
    pool = connect(database_url)
    assert create(pool, "joined", grid, {"grid_name": grid.name})
    run = open_run("joined", tmp_path / "results")
    failed = record(keys[0], status="failed", success=False, repeat=1, run_id="joined",
                    scenario="hours")
    assert run.append(failed)
    assert run.append(record(keys[1], repeat=2, run_id="joined", scenario="hours"))
    # The row as the database kept it before: the same JSON, its lists joined as text.
    joined = {**json.loads(failed.row.model_dump_json()),
              "failed_checks": "tools_called;answer_number",
              "check_details": "tools_called: add not called | answer_number: expected 81",
              "turn_iterations": "2|3", "turn_model_calls": "2|3",
              "tool_sequence": "add>square | (none)", "judge_scores": "", "toolsets": "all | math"}
    with pool.connection() as conn:
        conn.execute("UPDATE sweep_results SET row_json = %s WHERE run_id = 'joined'"
                     " AND case_key = %s", (json.dumps(joined), keys[0]))
    first = run.records()[0]
    assert first.failed_checks == ["tools_called", "answer_number"]
    assert first.check_details == {"tools_called": "add not called",
                                   "answer_number": "expected 81"}
    assert (first.turn_model_calls, first.tool_sequence) == ([2, 3], [["add", "square"], []])
    assert first.toolsets == [None, ["math"]] and first.judge_scores == []
    report = write_report(run, charts=False).read_text(encoding="utf-8")
    assert "| hours | answer_number | 50% |" in report
