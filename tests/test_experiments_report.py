"""Statistics against known values, and the report built from a results.csv alone."""

from __future__ import annotations

import csv
import math
from pathlib import Path

import pytest

from experiments.report import ReportError, compare_best, load_results, summarise, write_report
from experiments.results import COLUMNS, RESULTS_FILE, ResultsWriter, read_rows, repair
from experiments.runs import list_runs, write_meta
from experiments.stats import mcnemar_exact, mean_interval, percentile, wilson

PNG_SIGNATURE = b"\x89PNG\r\n\x1a\n"


@pytest.mark.parametrize(("k", "n", "low", "high"), [
    (0, 10, 0.0, 0.277533),
    (10, 10, 0.722467, 1.0),
    (8, 10, 0.490162, 0.943318),
    (1, 2, 0.094531, 0.905469),
])
def test_wilson_matches_published_values(k, n, low, high):
    got = wilson(k, n)
    assert got == pytest.approx((low, high), abs=1e-6)


def test_wilson_agrees_with_scipy():
    from scipy.stats import binomtest

    for k, n in [(3, 7), (49, 51), (0, 1), (120, 459)]:
        ci = binomtest(k, n).proportion_ci(confidence_level=0.95, method="wilson")
        assert wilson(k, n) == pytest.approx((ci.low, ci.high), abs=1e-9)
    assert wilson(0, 0) == (0.0, 1.0)


@pytest.mark.parametrize(("b", "c", "p"), [
    (0, 0, 1.0),
    (1, 9, 0.021484375),      # 2 * (C(10,0) + C(10,1)) / 2^10
    (5, 0, 0.0625),           # 2 / 2^5
    (3, 3, 1.0),
    (2, 8, 0.109375),         # 2 * (1 + 10 + 45) / 1024
])
def test_exact_mcnemar_known_values(b, c, p):
    assert mcnemar_exact(b, c) == pytest.approx(p, abs=1e-12)
    assert mcnemar_exact(c, b) == pytest.approx(p, abs=1e-12)


def test_exact_mcnemar_agrees_with_scipy_binomial_test():
    from scipy.stats import binomtest

    for b, c in [(7, 2), (12, 30), (0, 6), (40, 41)]:
        assert mcnemar_exact(b, c) == pytest.approx(binomtest(b, b + c, 0.5).pvalue, rel=1e-9)


def test_percentile_and_mean_interval():
    assert percentile([1, 2, 3, 4], 50) == 2.5
    assert percentile([10.0], 95) == 10.0
    assert math.isnan(percentile([], 50))
    mean, low, high = mean_interval([2.0, 4.0, 6.0])
    assert mean == 4.0 and low < 4.0 < high


def row(**values) -> dict:
    base = {column: "" for column in COLUMNS}
    base.update({"run_id": "r", "provider": "offline", "model": "rule-based",
                 "model_spec": "offline", "variation": "baseline", "category": "math",
                 "checks_total": 3, "latency_s": 0.05, "model_calls": 2, "iterations": 2,
                 "turn_iterations": "2", "stopped_by_cap": False, "tool_sequence": "add>square",
                 "tool_errors": 0, "artifacts": 0, "input_tokens": 2000, "output_tokens": 50,
                 "cost_usd": 0.0, "response_chars": 20, "response_words": 4, "answer": "81",
                 "seed": 1, "timestamp": "2026-01-01T00:00:00+00:00", "package_version": "0.1.0",
                 "git_commit": "unknown"})
    base.update(values)
    success = base.get("success", True)
    base["checks_passed"] = 3 if success else 2
    if not success:
        base.update(failed_checks="answer_number", check_details="answer_number: expected 81")
    base["case_key"] = f"{base['config_hash']}-{base['scenario']}-r{base['repeat']}"
    return base


def synthetic_run(run_dir: Path, *, priced: bool = False) -> None:
    """Config A passes all 10 pairs, B fails 5 of them, C (cautious) fails all."""
    run_dir.mkdir(parents=True, exist_ok=True)
    with ResultsWriter(run_dir / RESULTS_FILE) as writer:
        for persona, temperature, config, fails in [("friendly", 0.0, "aaaa", set()),
                                                    ("technical", 0.5, "bbbb", {0, 1, 2, 3, 4}),
                                                    ("cautious", 1.0, "cccc", set(range(10)))]:
            for i in range(10):
                scenario, repeat = f"s{i % 5}", i // 5 + 1
                writer.write(row(persona=persona, temperature=temperature, config_hash=config,
                                 scenario=scenario, repeat=repeat, success=i not in fails,
                                 cost_usd=0.002 * (1 + temperature) if priced else 0.0,
                                 latency_s=0.05 + i / 100, response_words=4 + i,
                                 turn_iterations="2|3" if i % 2 else "2"))
    write_meta(run_dir, {"grid_name": "synthetic", "status": "finished",
                         "created": "2026-01-01T00:00:00+00:00"})


def test_summary_per_cell_with_wilson_and_latency(tmp_path):
    synthetic_run(tmp_path)
    summary = summarise(load_results(tmp_path))
    assert list(summary["persona"]) == ["friendly", "technical", "cautious"]
    best = summary.iloc[0]
    assert best["n"] == 10 and best["success_rate"] == 1.0
    assert (best["ci_low"], best["ci_high"]) == pytest.approx(wilson(10, 10))
    assert summary.iloc[1]["success_rate"] == 0.5
    assert best["latency_p50_s"] == pytest.approx(percentile([0.05 + i / 100 for i in range(10)],
                                                             50))
    assert summary.iloc[0]["model"] == "offline (rule-based, not an LLM)"


def test_mcnemar_compares_the_two_best_on_paired_cases(tmp_path):
    synthetic_run(tmp_path)
    df = load_results(tmp_path)
    comparison = compare_best(df, summarise(df))
    assert comparison.pairs == 10
    assert (comparison.first_only, comparison.second_only) == (5, 0)
    assert comparison.p_value == pytest.approx(0.0625)
    assert comparison.first.startswith("friendly")


def valid_png(path: Path) -> bool:
    import matplotlib.image

    data = path.read_bytes()
    if not data.startswith(PNG_SIGNATURE) or len(data) < 10_000:
        return False
    pixels = matplotlib.image.imread(path)
    return pixels.ndim == 3 and float(pixels[..., :3].std()) > 0.02


@pytest.mark.parametrize("priced", [False, True])
def test_report_writes_summary_charts_and_markdown(tmp_path, priced):
    synthetic_run(tmp_path, priced=priced)
    report = write_report(tmp_path)
    text = report.read_text()
    charts = sorted((tmp_path / "charts").glob("*.png"))
    assert len(charts) >= 6
    assert all(valid_png(chart) for chart in charts)
    for chart in charts:
        assert f"](charts/{chart.name})" in text
    assert "could not be drawn" not in text
    assert "p = 0.0625" in text
    assert "offline (rule-based, not an LLM)" in text
    assert "Best configuration:** friendly" in text
    assert "Failed most (scenarios)" in text
    with (tmp_path / "summary.csv").open() as handle:
        cells = list(csv.DictReader(handle))
    assert len(cells) == 3
    assert {"n", "success_rate", "ci_low", "ci_high", "latency_p50_s", "latency_p95_s",
            "mean_input_tokens", "mean_output_tokens", "mean_cost_usd"} <= set(cells[0])
    assert (tmp_path / "effects.csv").exists()
    assert "**temperature**: 100.0 points" in text


def test_report_reads_only_complete_rows(tmp_path):
    synthetic_run(tmp_path)
    with (tmp_path / RESULTS_FILE).open("a") as handle:
        handle.write('r,half-a-row,"an answer cut off by a ki')
    assert len(load_results(tmp_path)) == 30
    assert write_report(tmp_path).exists()


def test_report_on_an_empty_run_says_so(tmp_path):
    with pytest.raises(ReportError, match="no results.csv"):
        write_report(tmp_path)
    ResultsWriter(tmp_path / RESULTS_FILE).close()
    with pytest.raises(ReportError, match="no finished cases"):
        write_report(tmp_path)


def test_repair_cuts_a_record_broken_inside_a_quoted_newline(tmp_path):
    path = tmp_path / RESULTS_FILE
    with ResultsWriter(path) as writer:
        writer.write(row(config_hash="aaaa", scenario="s1", repeat=1, answer="line one\nline two"))
    whole = path.read_bytes()
    path.write_bytes(whole + b'r,k2,h,s2,1,friendly,offline,x,offline,0,baseline,m,True,3,3,,,'
                     b'0.1,2,2,2,False,add,0,,0,1,1,0,5,1,"first line\n')
    assert len(read_rows(path)) == 1
    assert repair(path) > 0
    assert path.read_bytes() == whole
    with ResultsWriter(path) as writer:
        writer.write(row(config_hash="bbbb", scenario="s2", repeat=1))
    assert [r["config_hash"] for r in read_rows(path)] == ["aaaa", "bbbb"]
    assert read_rows(path)[0]["answer"] == "line one\nline two"


def test_list_runs_newest_first(tmp_path):
    older, newer = tmp_path / "20260101-000000-a-0001", tmp_path / "20260102-000000-b-0002"
    synthetic_run(older)
    synthetic_run(newer)
    write_meta(newer, {"grid_name": "b", "status": "finished",
                       "created": "2026-01-02T00:00:00+00:00"})
    write_report(older)
    (tmp_path / "not-a-run").mkdir()
    runs = list_runs(tmp_path)
    assert [r.id for r in runs] == [newer.name, older.name]
    assert [r.rows for r in runs] == [30, 30]
    assert [r.has_report for r in runs] == [False, True]
    assert list_runs(tmp_path / "missing") == []
