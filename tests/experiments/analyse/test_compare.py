"""Comparing two runs: cases paired on scenario, repeat and the factors both share, tested on
one difference per scenario; a factor the runs differ in is what is compared."""

from __future__ import annotations

import csv
from pathlib import Path

import pytest

from experiments.analyse.compare import compare_runs
from experiments.store.folder import write_meta
from experiments.store.records_file import RECORDS_FILE
from tests.experiments.analyse.test_report import RowsWriter, row
from treadwise.models.registry import OFFLINE_LABEL


def write_run(folder: Path, outcomes: dict[str, list[str]], temperature: float = 0.0) -> Path:
    """config hash -> statuses of its 20 cases (10 scenarios x 2 repeats)."""
    folder.mkdir(parents=True)
    with RowsWriter(folder) as writer:
        for config, statuses in outcomes.items():
            for i, status in enumerate(statuses):
                writer.write(row(persona="friendly" if config < "c" else "technical",
                                 temperature=temperature, config_hash=config,
                                 scenario=f"s{i % 10}", repeat=i // 10 + 1, status=status))
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


def test_runs_of_one_grid_are_paired_by_configuration_scenario_and_repeat(runs, tmp_path):
    run_a, run_b = runs
    result = compare_runs(run_a, run_b, tmp_path / "out")
    pairing = result.pairing
    assert pairing.differing == {} and pairing.keys[-1] == "config"
    table = pairing.table.set_index("configuration")
    assert len(table) == 2
    better = table.loc[next(n for n in table.index if n.endswith("[a]"))]
    assert better["pairs"] == 20 and better["scenarios"] == 10
    assert better["diff"] == pytest.approx(0.8) and better["ci_low"] > 0 and better["significant"]
    same = table.loc[next(n for n in table.index if n.endswith("[b]"))]
    assert same["pairs"] == 19 and not same["significant"]
    # c and d share every factor level, so the configuration key tells them apart
    assert pairing.only_a == [f"technical / {OFFLINE_LABEL} / T=0 / baseline / react [c]"]
    assert pairing.overall.pairs == 39 and pairing.overall.unmatched == 1
    report = result.report.read_text()
    assert "1 of 2 configurations changed significantly (at the report's one 5% error rate)" \
        in report
    assert "Only in A (not compared): technical" in report
    assert "left out because the other run errored" in report
    assert "![B - A per configuration](comparison.png)" in report
    assert (result.folder / "comparison.png").read_bytes().startswith(b"\x89PNG")
    with (result.folder / "comparison.csv").open() as handle:
        assert len(list(csv.DictReader(handle))) == 2
    assert result.folder == tmp_path / "out" / f"compare-{run_a.name}-vs-{run_b.name}"


def test_a_t0_run_and_a_t07_run_are_paired_on_everything_else(tmp_path):
    cold = write_run(tmp_path / "cold", {"a": ["ok"] * 20, "c": ["failed"] * 20})
    # b is friendly like a, d technical like c (write_run's persona rule); no hash shared
    warm = write_run(tmp_path / "warm", {"b": ["ok"] * 16 + ["failed"] * 4,
                                         "d": ["failed"] * 20}, temperature=0.7)
    result = compare_runs(cold, warm, tmp_path)
    pairing = result.pairing
    assert pairing.differing == {"temperature": ([0.0], [0.7])}
    assert pairing.overall.pairs == 40 and pairing.overall.scenarios == 10
    assert pairing.overall.value == pytest.approx(-0.1)
    report = result.report.read_text()
    assert "The runs differ in temperature: A 0, B 0.7." in report
    assert "paired on scenario, repeat and persona, model, variation, strategy" in report


def test_the_compare_command(runs, repo, tmp_path):
    from tests.experiments.run.test_runner import cli

    run_a, run_b = runs
    done = cli(repo, "compare", str(run_a), str(run_b), "--out", str(tmp_path / "cmp"))
    assert done.returncode == 0, done.stderr
    assert "Over 39 paired cases in 10 scenarios" in done.stdout
    folder = tmp_path / "cmp" / f"compare-{run_a.name}-vs-{run_b.name}"
    assert str(folder / "comparison.md") in done.stdout
    missing = cli(repo, "compare", str(run_a), str(tmp_path / "nowhere"))
    assert missing.returncode == 2 and "no records.jsonl" in missing.stderr
    other = write_run(tmp_path / "other", {"a": ["ok"] * 20})
    text = (other / RECORDS_FILE).read_text().replace('"scenario":"s', '"scenario":"t')
    (other / RECORDS_FILE).write_text(text)
    nothing = cli(repo, "compare", str(run_a), str(other), "--out", str(tmp_path / "cmp"))
    assert nothing.returncode == 1 and "Nothing to pair: the runs share no scenario" in \
        nothing.stderr
