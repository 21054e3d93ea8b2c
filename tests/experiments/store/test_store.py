"""The typed case record and the run store: one definition of a row, read back the same from
results.csv and from the database's values."""

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
from experiments.store.record import COLUMNS, KINDS, CaseRecord, CaseRow, rows_frame
from experiments.store.results_file import RESULTS_FILE, ResultsWriter, read_frame, read_rows
from tests.experiments.run.test_runner import HOURS, sweep, write_grid


def case_row(key: str, **values) -> CaseRow:
    """A row of a case that made two free model calls; `values` replace its fields."""
    base = {name: {"numeric": 0, "flag": False, "maybe": None}.get(kind, "")
            for name, kind in KINDS.items()}
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


def test_a_row_reads_back_the_same_from_results_csv_and_from_its_own_values(tmp_path):
    rows = [
        case_row("a-hours-r1", cost_usd=1 / 3, ttft_s=0.123456789123, seed=4_000_000_000,
                 answer='He said "hi", then\nleft', repeat=1),
        case_row("a-hours-r2", status="error", success=False, cost_usd=None,
                 error_type="timeout", error_message="took too long", repeat=2),
        case_row("b-hours-r1", judge_score=4, judge_reason="kind", judge_cached=True,
                 model_spec="openai:gpt-test", repeat=1),
        case_row("a-hours-r2", status="ok", repeat=2),  # --retry-errors: the later row wins
    ]
    with ResultsWriter(tmp_path / RESULTS_FILE) as writer:
        for row in rows:
            writer.write(vars(row))
    from_csv = read_frame(tmp_path / RESULTS_FILE)
    # What the database keeps: each row's own JSON, read back typed (never as CSV text).
    from_values = rows_frame([CaseRow.model_validate_json(r.model_dump_json()) for r in rows])
    pd.testing.assert_frame_equal(from_csv, from_values)
    assert from_csv["case_key"].tolist() == ["a-hours-r1", "b-hours-r1", "a-hours-r2"]
    assert from_csv["status"].tolist() == ["ok", "ok", "ok"]
    assert from_csv["cost_usd"].iloc[0] == pytest.approx(1 / 3, abs=1e-8)
    assert from_csv["seed"].iloc[0] == 4_000_000_000 and from_csv["repeat"].dtype.kind == "i"
    assert from_csv["judge_cached"].tolist() == [False, True, False]
    assert from_csv["answer"].iloc[0] == 'He said "hi", then\nleft'
    assert read_rows(tmp_path / RESULTS_FILE)[1]["cost_usd"] == ""  # unpriced stays empty


def test_an_older_file_without_the_newer_columns_reads_typed(tmp_path):
    old = [c for c in COLUMNS if c not in ("status", "strategy", "judge_score", "ttft_s")]
    path = tmp_path / RESULTS_FILE
    with ResultsWriter(path) as writer:  # a new file: today's header
        pass
    path.write_text(",".join(old) + "\n")
    with ResultsWriter(path) as writer:  # a resumed run keeps its own header
        assert writer.columns == tuple(old)
        writer.write(vars(case_row("k-x-r1", success=False, error_type="")))
        writer.write(vars(case_row("k-y-r1", success=False, error_type="provider")))
    frame = read_frame(path)
    assert frame["status"].tolist() == ["failed", "error"]
    assert frame["strategy"].tolist() == ["react", "react"]
    assert frame["judge_score"].isna().all() and frame["ttft_s"].isna().all()


def record(key: str, **values) -> CaseRecord:
    return CaseRecord(case_row(key, **values), {"case_key": key, "status": "ok", "turns": []})


def test_a_folder_run_is_written_and_read_through_one_face(tmp_path, monkeypatch):
    monkeypatch.delenv("TREADWISE_DATABASE_URL", raising=False)
    grid = load_grid(write_grid(tmp_path, [HOURS]))
    run = FolderRun.create(grid, tmp_path / "results")
    assert sorted(p.name for p in run.folder.iterdir()) == [
        "grid.yaml", "prices.yaml", "scenarios.yaml"]
    with pytest.raises(NoResults, match="no results.csv yet"):
        run.rows()
    run.start({"status": "running", "grid_name": grid.name})
    with run:
        assert run.append(record("c0ffee-hours-r1", repeat=1, run_id=run.name))
        assert run.append(record("c0ffee-hours-r2", repeat=2, status="error", success=False,
                                 error_type="timeout"))
    run.finish(status="finished")
    again = open_run(run.folder)  # a folder holding results.csv is always that folder
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
    folder = open_run(exported)  # now a folder holding results.csv: that folder
    assert isinstance(folder, FolderRun)
    pd.testing.assert_frame_equal(run.rows(), folder.rows())
    assert run.rows()["answer"].tolist() == ["", "", ""]
    assert main(["export", "typed", "--out", str(tmp_path / "cli")]) == 0  # the CLI's way
    assert capsys.readouterr().out.strip() == str(tmp_path / "cli" / "typed")
    pd.testing.assert_frame_equal(run.rows(), open_run(tmp_path / "cli" / "typed").rows())
    assert main(["export", "no-such-run", "--out", str(tmp_path / "cli")]) == 2
    assert "no shared run 'no-such-run'" in capsys.readouterr().err
    assert [r.id for r in list_runs(tmp_path / "none")] == ["typed"]
    assert list_runs(tmp_path / "none", database=False) == []


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
