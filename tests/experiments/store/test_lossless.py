"""Lossless case records: check names holding the old separators survive the record, the
results.csv export and the report; run folders made before records.jsonl still open."""

from __future__ import annotations

import csv
import json
import shutil
from pathlib import Path

import pytest

from experiments.analyse.report import write_report
from experiments.analyse.tables import check_failures, load_results
from experiments.store import open_run
from experiments.store.folder import FolderRun
from experiments.store.legacy import legacy_records
from experiments.store.records_file import RECORDS_FILE, read_records
from experiments.store.results_file import COLUMNS, RESULTS_FILE, read_rows
from tests.experiments.run.test_runner import HOURS, cli, sweep, write_grid

# A folder written by the harness before records.jsonl existed (results.csv, transcripts,
# meta.json and the run's files): 2 personas x 4 scenarios x 2 repeats of the offline model;
# "wrong" fails its checks expects_16 and wants_multiply, whose reasons hold ";".
LEGACY = next((Path(__file__).parent / "legacy").iterdir())
FAILED = ["sum; then | answer", "multiplies | adds; too"]
SEPARATED = {"id": "separated", "category": "math", "turns": ["What is 7 plus 8?"],
             "checks": [{"kind": "answer_number", "value": 16, "label": FAILED[0]},
                        {"kind": "tools_called", "tools": ["multiply"], "label": FAILED[1]},
                        {"kind": "answer_matches", "pattern": "15", "label": "says; 15"}]}


@pytest.mark.thorough
def test_check_names_with_separators_survive_the_record_the_export_and_the_report(tmp_path):
    grid = write_grid(tmp_path, [SEPARATED], personas=["friendly", "technical"], repeats=2)
    run_dir, _ = sweep(grid, tmp_path / "out")
    records = read_records(run_dir / RECORDS_FILE)
    assert len(records) == 4
    for record in records:
        assert record.failed_checks == FAILED
        assert list(record.check_details) == FAILED
        assert record.check_details[FAILED[0]].startswith("expected 16")
    exported = read_rows(run_dir / RESULTS_FILE)
    assert list(exported[0]) == list(COLUMNS)  # today's columns, the case key among them
    assert [json.loads(r["failed_checks"]) for r in exported] == [FAILED] * 4
    assert legacy_records(run_dir / RESULTS_FILE) == records  # nothing lost to the CSV
    table = check_failures(load_results(run_dir))
    assert table[["check", "failures", "cases"]].values.tolist() == [
        [FAILED[0], 4, 4], [FAILED[1], 4, 4]]
    report = write_report(run_dir, charts=False).read_text(encoding="utf-8")
    failures = report.split("Checks that failed", 1)[1].split("\n## ", 1)[0]
    rows = [line for line in failures.splitlines() if line.startswith("| separated |")]
    assert [row.split(" | ")[1:3] for row in rows] == [
        ["sum; then \\| answer", "0%"], ["multiplies \\| adds; too", "0%"]]
    with (run_dir / "effects.csv").open(encoding="utf-8") as handle:
        effects = list(csv.DictReader(handle))
    assert {e["factor"] for e in effects} == {"persona"}


def legacy_copy(folder: Path) -> Path:
    copy = folder / LEGACY.name
    shutil.copytree(LEGACY, copy)
    return copy


def test_an_old_csv_only_run_opens_in_report_compare_show_and_the_experiments_tab(
        repo, tmp_path, monkeypatch):
    monkeypatch.delenv("TREADWISE_DATABASE_URL", raising=False)
    old = legacy_copy(tmp_path / "results")
    assert not (old / RECORDS_FILE).exists()
    run = open_run(old)
    assert run.legacy and len(run.records()) == 16
    wrong = [r for r in run.records() if r.scenario == "wrong"]
    assert {tuple(r.failed_checks) for r in wrong} == {("expects_16", "wants_multiply")}
    assert wrong[0].check_details["expects_16"].startswith("expected 16 within 1e-06; ")
    greet = next(r for r in run.records() if r.scenario == "greet_then_math")
    assert (greet.turn_model_calls, greet.tool_sequence) == ([1, 2], [[], ["multiply"]])

    done = cli(repo, "report", str(old), "--no-charts")
    assert done.returncode == 0, done.stderr
    report = (old / "report.md").read_text(encoding="utf-8")
    assert "computed from `results.csv` (a run made before `records.jsonl`)" in report
    assert "| wrong | expects_16 | 0% |" in report and "| wrong | wants_multiply | 0% |" in report
    with (old / "summary.csv").open(encoding="utf-8") as handle:
        assert [float(r["success_rate"]) for r in csv.DictReader(handle)] == [0.75, 0.75]
    assert not (old / RECORDS_FILE).exists()  # reading an old run changes nothing in it

    key = wrong[0].case_key
    shown = cli(repo, "show", str(old), key)
    assert shown.returncode == 0 and "[FAIL] expects_16" in shown.stdout

    new, _ = sweep(old / "grid.yaml", tmp_path / "new")  # the same grid, run today
    compared = cli(repo, "compare", str(old), str(new), "--out", str(tmp_path / "cmp"))
    assert compared.returncode == 0, compared.stderr
    assert "Over 16 paired cases in 4 scenarios" in compared.stdout

    from experiments.web.runs_tab import run_choices, show_cases
    from experiments.web.runs_view import case_index

    assert [value for _, value in run_choices(tmp_path / "results")] == [old.name]
    index = case_index(old)
    assert sorted(len(entry["cases"]) for entry in index.values()) == [8, 8]
    _, cases, transcript = show_cases(old)
    assert "wrong" in cases.value and "expects_16" in transcript and "FAILED" in transcript


def old_format(run_dir: Path) -> None:
    """Turn a run folder into one made before records.jsonl: its records as the old
    results.csv (lists joined with separators), no records.jsonl."""
    joined = {"failed_checks": ";".join,
              "check_details": lambda v: " | ".join(f"{k}: {w}" for k, w in v.items()),
              "turn_iterations": lambda v: "|".join(map(str, v)),
              "turn_model_calls": lambda v: "|".join(map(str, v)),
              "tool_sequence": lambda v: " | ".join(">".join(t) or "(none)" for t in v),
              "judge_scores": lambda v: "|".join("-" if s is None else str(s) for s in v),
              "toolsets": lambda v: " | ".join("all" if t is None else "+".join(t) or "none"
                                               for t in v)}
    records = read_records(run_dir / RECORDS_FILE)
    with (run_dir / RESULTS_FILE).open("w", newline="", encoding="utf-8") as handle:
        writer = csv.writer(handle, lineterminator="\n")
        writer.writerow(COLUMNS)
        for record in records:
            writer.writerow(joined[c](v) if c in joined else "" if v is None else v
                            for c, v in dict(record).items())
    (run_dir / RECORDS_FILE).unlink()


def test_an_interrupted_old_csv_only_run_resumes_into_records(tmp_path, monkeypatch):
    monkeypatch.delenv("TREADWISE_DATABASE_URL", raising=False)
    grid = write_grid(tmp_path, [HOURS], personas=["friendly", "technical"], repeats=3)
    run_dir, _ = sweep(grid, tmp_path / "out", limit=4)
    before = FolderRun(run_dir).records()
    old_format(run_dir)
    assert FolderRun(run_dir).legacy and FolderRun(run_dir).records() == before
    _, lines = sweep(None, tmp_path / "out", resume=run_dir)
    assert any("to run now: 2, already done: 4" in line for line in lines)
    after = read_records(run_dir / RECORDS_FILE)
    assert after[:4] == before and len({r.case_key for r in after}) == 6
    assert [r["case_key"] for r in read_rows(run_dir / RESULTS_FILE)] == [
        r.case_key for r in after]
