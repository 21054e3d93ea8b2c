"""Comparing two runs: cases paired by configuration, scenario and repeat, Holm-corrected."""

from __future__ import annotations

import csv
from pathlib import Path

import pytest

from experiments.analyse.compare import compare_runs
from experiments.store.folder import write_meta
from experiments.store.results_file import RESULTS_FILE, ResultsWriter
from tests.test_experiments_report import row


def write_run(folder: Path, outcomes: dict[str, list[str]]) -> Path:
    """config hash -> statuses of its 20 cases (4 scenarios x 5 repeats)."""
    folder.mkdir(parents=True)
    with ResultsWriter(folder / RESULTS_FILE) as writer:
        for config, statuses in outcomes.items():
            for i, status in enumerate(statuses):
                writer.write(row(persona="friendly" if config < "c" else "technical",
                                 temperature=0.0, config_hash=config, scenario=f"s{i % 4}",
                                 repeat=i // 4 + 1, status=status))
    write_meta(folder, {"grid_name": "g", "status": "finished",
                        "created": "2026-01-01T00:00:00+00:00"})
    return folder


@pytest.fixture
def runs(tmp_path: Path) -> tuple[Path, Path]:
    # Config a gets much better in B; b stays the same; c is in A only; d in B only. One case
    # of b errored in B: its pair is left out, not counted as a failure.
    a = write_run(tmp_path / "A", {"a": ["failed"] * 16 + ["ok"] * 4,
                                   "b": ["ok", "failed"] * 10, "c": ["ok"] * 20})
    b = write_run(tmp_path / "B", {"a": ["ok"] * 20, "b": ["error"] + ["ok", "failed"] * 9
                                   + ["ok"], "d": ["ok"] * 20})
    return a, b


def test_runs_are_paired_case_by_case_with_tests_and_intervals(runs):
    run_a, run_b = runs
    result = compare_runs(run_a, run_b)
    table = result.table.set_index("config_hash")
    assert list(table.index) == ["b", "a"]  # sorted by change, smallest first
    better = table.loc["a"]
    assert (better["pairs"], better["a_only"], better["b_only"]) == (20, 0, 16)
    assert better["rate_a"] == pytest.approx(0.2) and better["rate_b"] == 1.0
    assert better["diff"] == pytest.approx(0.8) and better["ci_low"] > 0
    assert better["p_value"] == pytest.approx(2 / 2 ** 16)
    assert better["p_holm"] == pytest.approx(2 * 2 / 2 ** 16)
    assert better["verdict"] == "B better"
    same = table.loc["b"]
    assert same["pairs"] == 19 and same["verdict"] == "no significant difference"
    assert result.only_a and result.only_b and result.overall["pairs"] == 39
    report = result.report.read_text()
    assert "1 of 2 configurations changed significantly" in report
    assert "Only in A (not compared): technical" in report
    assert "![B - A per configuration](comparison.png)" in report
    assert (result.folder / "comparison.png").read_bytes().startswith(b"\x89PNG")
    with (result.folder / "comparison.csv").open() as handle:
        assert len(list(csv.DictReader(handle))) == 2
    assert result.folder == run_b / f"compare-{run_a.name}"


def test_the_compare_command(runs, repo, tmp_path):
    from tests.test_experiments_runner import cli

    run_a, run_b = runs
    done = cli(repo, "compare", str(run_a), str(run_b), "--out", str(tmp_path / "cmp"))
    assert done.returncode == 0, done.stderr
    assert "Over all 39 paired cases" in done.stdout
    # Like run --out: the folder receives one folder per comparison.
    assert str(tmp_path / "cmp" / f"compare-{run_a.name}-vs-{run_b.name}" / "comparison.md") \
        in done.stdout
    missing = cli(repo, "compare", str(run_a), str(tmp_path / "nowhere"))
    assert missing.returncode == 2 and "no results.csv" in missing.stderr
