"""Statistics against known values, and the report built from a run's records alone."""

from __future__ import annotations

import csv
import dataclasses
import math
import os
import re
import subprocess
import sys
from pathlib import Path

import pandas as pd
import pytest

from experiments.analyse import findings
from experiments.analyse.inference import RATE_METHOD, level_mean
from experiments.analyse.report import ReportError, write_report
from experiments.analyse.tables import load_results, percentile, summarise
from experiments.store import list_runs
from experiments.store.folder import write_meta
from experiments.store.record import KINDS, CaseRow
from experiments.store.records_file import RECORDS_FILE, RecordsWriter
from experiments.store.results_file import COLUMNS, RESULTS_FILE, read_rows

PNG_SIGNATURE = b"\x89PNG\r\n\x1a\n"


def test_percentiles():
    assert percentile([1, 2, 3, 4], 50) == 2.5 and math.isnan(percentile([], 50))


@pytest.mark.thorough
def test_rates_count_scenarios_not_cases():
    # Five scenarios x ten repeats: three always pass, two always fail. Fifty cases look
    # precise to a binomial interval, but there are only five independent scenarios.
    cases = pd.DataFrame({"scenario": [f"s{i // 10}" for i in range(50)],
                          "success": [1.0] * 30 + [0.0] * 20})
    found = level_mean(cases)
    assert found.value == pytest.approx(0.6) and found.method == RATE_METHOD
    naive = level_mean(pd.DataFrame({"scenario": range(50), "success": cases["success"]}))
    assert found.high - found.low > 1.5 * (naive.high - naive.low)
    everyone = level_mean(pd.DataFrame({"scenario": [i // 2 for i in range(34)],
                                        "success": [1.0] * 34}))
    assert everyone.value == 1.0 and everyone.low < 0.85  # 17 scenarios, not certainty


class RowsWriter:
    """Rows appended to a run folder's records.jsonl, as a sweep keeps them."""

    def __init__(self, run_dir: Path):
        run_dir.mkdir(parents=True, exist_ok=True)
        self._writer = RecordsWriter(run_dir / RECORDS_FILE)

    def write(self, values: dict) -> None:
        self._writer.write(CaseRow(**values))

    def __enter__(self) -> RowsWriter:
        return self

    def __exit__(self, *exc) -> None:
        self._writer.close()


def row(**values) -> dict:
    base = {column: {"text": "", "numeric": None, "data": []}.get(kind)
            for column, kind in KINDS.items() if CaseRow.model_fields[column].is_required()}
    base.update({"run_id": "r", "provider": "offline", "model": "rule-based",
                 "model_spec": "offline", "variation": "baseline", "strategy": "react",
                 "category": "math", "checks_total": 3, "latency_s": 0.05, "model_calls": 2,
                 "iterations": 2, "turn_iterations": [2], "turn_model_calls": [2],
                 "stopped_by_cap": False, "tool_sequence": [["add", "square"]], "tool_errors": 0,
                 "artifacts": 0, "input_tokens": 2000, "output_tokens": 50, "cost_usd": 0.0,
                 "http_attempts": 0, "retry_wait_s": 0.0, "ttft_s": 0.01, "usage_missing": False,
                 "cache_hits": 0, "response_chars": 20, "response_words": 4, "hedges": 0,
                 "questions": 0, "numbers": 1, "units": 0, "answer": "81", "seed": 1,
                 "timestamp": "2026-01-01T00:00:00+00:00", "package_version": "0.1.0",
                 "git_commit": "unknown", "check_details": {}, "error_message": "",
                 "error_type": "", "tool_error_detail": ""})
    base.update(values)
    status = base.get("status") or ("ok" if base.get("success", True) else "failed")
    base["status"], base["success"] = status, status == "ok"
    base["checks_passed"] = 3 if status == "ok" else 2
    if status == "failed":
        base.update(failed_checks=["answer_number"],
                    check_details={"answer_number": "expected 81"})
    if status == "error":
        base.setdefault("error_type", "provider_error")
        base["error_type"] = base["error_type"] or "provider_error"
    base["case_key"] = f"{base['config_hash']}-{base['scenario']}-r{base['repeat']}"
    return base


def synthetic_run(run_dir: Path, *, priced: bool = False, configs=None,
                  scenarios: int = 5) -> None:
    """By default config A passes all 10 pairs, B fails 5 of them, C (cautious) fails all;
    each config's cases are `scenarios` scenarios x 2 repeats (5 x 2 by default)."""
    run_dir.mkdir(parents=True, exist_ok=True)
    configs = configs or [("friendly", 0.0, "aaaa", set()),
                          ("technical", 0.5, "bbbb", {0, 1, 2, 3, 4}),
                          ("cautious", 1.0, "cccc", set(range(10)))]
    with RowsWriter(run_dir) as writer:
        for persona, temperature, config, fails, *errors in configs:
            for i in range(2 * scenarios):
                status = "error" if errors and i in errors[0] else (
                    "failed" if i in fails else "ok")
                writer.write(row(persona=persona, temperature=temperature, config_hash=config,
                                 scenario=f"s{i % scenarios}", repeat=i // scenarios + 1,
                                 status=status,
                                 cost_usd=0.002 * (1 + temperature) if priced else 0.0,
                                 latency_s=0.05 + i / 100, response_words=4 + i,
                                 hedges=i % 3 if persona == "cautious" else 0,
                                 turn_iterations=[2, 3] if i % 2 else [2]))
    write_meta(run_dir, {"grid_name": "synthetic", "status": "finished",
                         "created": "2026-01-01T00:00:00+00:00"})


def test_rates_count_ok_against_failed_and_show_errors_beside(tmp_path):
    synthetic_run(tmp_path, configs=[("friendly", 0.0, "aaaa", {0}, {1, 2, 3, 4}),
                                     ("technical", 0.0, "bbbb", {0})])
    summary = summarise(load_results(tmp_path)).set_index("config_hash")
    # Four provider errors are not four failures: 5 of 6 judged cases passed, and the rate is
    # the mean of the scenarios' rates (s0 passed 1 of 2, s1-s4 their one answered case).
    assert summary.loc["aaaa", "n"] == 6 and summary.loc["aaaa", "errors"] == 4
    assert summary.loc["aaaa", "success_rate"] == pytest.approx(0.9)
    assert summary.loc["bbbb", "success_rate"] == pytest.approx(0.9)
    text = write_report(tmp_path, charts=False).read_text()
    assert "4 errored (provider or harness failures" in text
    assert "--retry-errors" in text


def test_a_case_run_again_counts_once_with_its_latest_row(tmp_path):
    synthetic_run(tmp_path, configs=[("friendly", 0.0, "aaaa", set(), {0})])
    with RowsWriter(tmp_path) as writer:
        writer.write(row(persona="friendly", temperature=0.0, config_hash="aaaa",
                         scenario="s0", repeat=1, status="ok"))
    df = load_results(tmp_path)
    assert len(df) == 10 and set(df["status"]) == {"ok"}


@pytest.mark.thorough
def test_ties_are_reported_as_ties_not_picked_by_latency(tmp_path):
    synthetic_run(tmp_path, configs=[("friendly", 0.0, "aaaa", set()),
                                     ("technical", 0.0, "bbbb", set()),
                                     ("cautious", 0.0, "cccc", set()),
                                     ("friendly", 1.0, "dddd", {0, 1})])
    text = write_report(tmp_path, charts=False).read_text()
    assert "Best configuration: a tie.** 3 configurations share the top" in text
    assert "None is picked over the others" in text
    assert "fastest" not in text
    # 8/10 cannot be told apart from 10/10 over five scenarios.
    assert "the data cannot rank it above the other 1" in text


@pytest.mark.thorough
def test_the_best_is_compared_with_the_rest_allowing_for_picking_it(tmp_path):
    synthetic_run(tmp_path)
    df = load_results(tmp_path)
    summary = summarise(df)
    table = findings.winner_table(df, dict(zip(summary["config_hash"], summary["label"],
                                               strict=True))).set_index("other")
    assert len(table) == 2 and set(table["best"]) == {"friendly / offline (rule-based, not an "
                                                      "LLM) / T=0 / baseline"}
    always, half = table.iloc[1], table.iloc[0]  # C fails everything, B half its cases
    # Five scenarios all going one way happen 1 time in 16 by chance: not shown, even at
    # 100 points, once the best has been picked from three.
    assert always["effect"] == 1.0 and not always["significant"] and always["ci_low"] < 0
    assert half["effect"] == 0.5 and half["ci_low"] < 0 < 0.5 < half["ci_high"] <= 1
    assert half["p_adjusted"] > half["p_value"]  # picking the best from three costs something
    text = write_report(tmp_path, charts=False).read_text()
    assert "It beats 0 of the 2 others; the data cannot rank it above the other 2" in text
    assert (tmp_path / "best_vs_rest.csv").exists()


@pytest.mark.thorough
def test_the_best_beats_the_rest_when_enough_scenarios_say_so(tmp_path):
    configs = [("friendly", 0.0, "aaaa", set()), ("technical", 0.5, "bbbb", set(range(20))),
               ("cautious", 1.0, "cccc", set(range(20)))]
    synthetic_run(tmp_path, configs=configs, scenarios=20)
    text = write_report(tmp_path, charts=False).read_text()
    assert "It beats every other configuration (allowing for picking the best)" in text


def valid_png(path: Path) -> bool:
    import matplotlib.image

    data = path.read_bytes()
    if not data.startswith(PNG_SIGNATURE) or len(data) < 10_000:
        return False
    pixels = matplotlib.image.imread(path)
    return pixels.ndim == 3 and float(pixels[..., :3].std()) > 0.02


@pytest.mark.parametrize("priced", [False, True])
@pytest.mark.slow
def test_report_writes_tables_charts_with_captions_and_markdown(tmp_path, priced):
    synthetic_run(tmp_path, priced=priced)
    text = write_report(tmp_path).read_text()
    charts = sorted((tmp_path / "charts").glob("*.png"))
    assert {"success_heatmap.png", "config_scenario.png", "temperature_curves.png",
            "latency_per_call.png", "errors.png", "persona_style.png",
            "cost_vs_success.png"} <= {c.name for c in charts}
    assert all(valid_png(chart) for chart in charts)
    for chart in charts:
        # Every chart is followed by its one-line caption in italics.
        assert re.search(rf"\]\(charts/{re.escape(chart.name)}\)\n\n\*[A-Z][^\n]+\*\n", text)
    assert "could not be drawn" not in text
    assert "offline (rule-based, not an LLM)" in text
    assert "exact (Clopper-Pearson) with n = the scenarios" in text
    assert "Best configuration:** friendly" in text
    # Each persona ran at its own temperature: the report will not pretend to separate them.
    assert "persona, temperature changed together in this grid" in text
    assert "The unit is the scenario: 5 scenarios x 3 configuration(s)" in text
    with (tmp_path / "summary.csv").open() as handle:
        cells = list(csv.DictReader(handle))
    assert len(cells) == 3
    assert {"n", "errors", "success_rate", "ci_low", "ci_high", "latency_per_call_p50_s",
            "ttft_p50_s", "mean_http_attempts", "usage_missing", "cache_hits"} <= set(cells[0])
    for name in ("effects.csv", "style.csv", "best_vs_rest.csv"):
        assert (tmp_path / name).exists()


@pytest.mark.thorough
def test_every_table_in_the_report_shows_what_its_csv_file_holds(tmp_path, monkeypatch):
    """The style table's means sit on a digit's edge: the full value 0.12500000000000003 would
    show "0.13", the file's six digits (0.125) show "0.12"; the report shows the file's."""
    analyse = findings.analyse

    def on_the_edge(df, labels):
        found = analyse(df, labels)
        return dataclasses.replace(found, style=found.style.assign(mean=0.12500000000000003))

    monkeypatch.setattr(findings, "analyse", on_the_edge)
    synthetic_run(tmp_path)
    text = write_report(tmp_path, charts=False).read_text()
    written = pd.read_csv(tmp_path / "style.csv")
    assert set(written["mean"]) == {0.125}
    section = text.split("## Persona style", 1)[1].split("\n## ", 1)[0]
    rows = [line for line in section.splitlines() if line.startswith("| ")][1:len(written) + 1]
    means = {line.strip("| ").split(" | ")[4] for line in rows}
    assert means == {"0.12"}, rows


def test_charts_are_colour_blind_safe_and_show_temperature(tmp_path):
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    import seaborn as sns
    from matplotlib.colors import to_hex

    from experiments.analyse.charts import HEATMAP, OKABE_ITO
    from experiments.analyse.charts.costs import cost_vs_success
    from experiments.analyse.charts.outcomes import success_heatmap, temperature_curves

    with RowsWriter(tmp_path) as writer:
        for spec in ("offline", "openai:gpt-test"):
            for persona in ("friendly", "technical"):
                for t in (0.0, 1.0):
                    for i in range(6):
                        writer.write(row(persona=persona, temperature=t, model_spec=spec,
                                         config_hash=f"{spec[:3]}{persona[:2]}{t}",
                                         scenario=f"s{i % 3}", repeat=i // 3 + 1,
                                         status="failed" if t and i == 0 else "ok"))
    df = load_results(tmp_path)
    summary = summarise(df)
    curves = temperature_curves(df, summary, plt, sns)
    top = [ax for ax in curves.axes if ax.get_subplotspec().rowspan.start == 0]
    assert len(top) == 2 and top[0].get_shared_y_axes().joined(top[0], top[1])
    colours = {to_hex(line.get_color()) for ax in curves.axes for line in ax.get_lines()}
    assert colours and colours <= {c.lower() for c in OKABE_ITO}
    scatter = cost_vs_success(df, summary, plt, sns)
    shapes = {(line.get_marker(), line.get_markerfacecolor()) for ax in scatter.axes
              for line in ax.get_lines() if line.get_marker() not in (None, "None", "")}
    # Within a persona's panel both temperatures appear, each with its own marker.
    assert {m for m, _ in shapes} >= {"o", "s"}
    heat = success_heatmap(df, summary, plt, sns)
    assert heat.axes[0].collections[0].get_cmap().name == HEATMAP
    assert "1/1" not in heat.axes[0].texts[0].get_text() and "/" in heat.axes[0].texts[0].get_text()
    plt.close("all")


@pytest.mark.thorough
def test_report_reads_only_complete_rows(tmp_path):
    synthetic_run(tmp_path)
    with (tmp_path / RECORDS_FILE).open("a") as handle:
        handle.write('{"run_id":"r","case_key":"half-a-row","answer":"cut off by a ki')
    assert len(load_results(tmp_path)) == 30
    assert write_report(tmp_path, charts=False).exists()


def test_report_on_an_empty_run_says_so(tmp_path):
    with pytest.raises(ReportError, match="no records.jsonl"):
        write_report(tmp_path)
    RecordsWriter(tmp_path / RECORDS_FILE).close()
    with pytest.raises(ReportError, match="no finished cases"):
        write_report(tmp_path)


def old_results(path: Path, rows: list[dict], columns: list[str] | None = None) -> None:
    """results.csv as runs made before records.jsonl appended it: text cells, lists joined
    (failed checks with ";", reasons with " | ", per-turn counts with "|")."""
    joined = {"failed_checks": ";".join, "turn_iterations": lambda v: "|".join(map(str, v)),
              "turn_model_calls": lambda v: "|".join(map(str, v)),
              "check_details": lambda v: " | ".join(f"{k}: {w}" for k, w in v.items()),
              "tool_sequence": lambda v: " | ".join(">".join(t) or "(none)" for t in v)}
    with path.open("w", newline="", encoding="utf-8") as handle:
        writer = csv.DictWriter(handle, columns or list(COLUMNS), extrasaction="ignore",
                                lineterminator="\n")
        writer.writeheader()
        for values in rows:
            writer.writerow({k: joined[k](v) if k in joined else "" if v is None else v
                             for k, v in values.items()})


def test_an_older_runs_results_csv_without_newer_columns_reads(tmp_path):
    old = [c for c in COLUMNS if c not in ("status", "strategy", "http_attempts")]
    old_results(tmp_path / RESULTS_FILE, [row(config_hash="aaaa", scenario="s1", repeat=1,
                                              status="failed")], old)
    (got,) = read_rows(tmp_path / RESULTS_FILE)
    assert list(got) == old and got["success"] == "False"
    frame = load_results(tmp_path)
    assert frame["status"].tolist() == ["failed"] and frame["strategy"].tolist() == ["react"]
    assert frame["failed_checks"].tolist() == [["answer_number"]]


def test_an_older_results_csv_ignores_a_record_broken_inside_a_quoted_newline(tmp_path):
    path = tmp_path / RESULTS_FILE
    old_results(path, [row(config_hash="aaaa", scenario="s1", repeat=1,
                           answer="line one\nline two")])
    with path.open("ab") as handle:
        handle.write(b'r,k2,h,s2,1,friendly,offline,x,offline,0,baseline,react,m,ok,'
                     b'True,3,3,,,0.1,2,2,2,2,False,0,0,0,False,0,add,0,,0,1,1,0,5,1,"first\n')
    assert len(read_rows(path)) == 1
    (record,) = load_results(tmp_path).itertuples()
    assert record.answer == "line one\nline two"


def test_list_runs_newest_first(tmp_path):
    older, newer = tmp_path / "20260101-000000-a-0001", tmp_path / "20260102-000000-b-0002"
    synthetic_run(older)
    synthetic_run(newer)
    write_meta(newer, {"grid_name": "b", "status": "finished",
                       "created": "2026-01-02T00:00:00+00:00"})
    write_report(older, charts=False)
    (tmp_path / "not-a-run").mkdir()
    runs = list_runs(tmp_path)
    assert [r.id for r in runs] == [newer.name, older.name]
    assert [r.rows for r in runs] == [30, 30]
    assert [r.has_report for r in runs] == [False, True]
    assert list_runs(tmp_path / "missing") == []


def test_a_run_whose_process_is_gone_is_interrupted(tmp_path):
    gone = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"],
                          capture_output=True, text=True, check=True)
    dead, live = tmp_path / "20260101-000000-dead-0001", tmp_path / "20260101-000000-live-0002"
    for run, pid in ((dead, int(gone.stdout)), (live, os.getpid())):
        synthetic_run(run)
        write_meta(run, {"grid_name": "g", "status": "running", "pid": pid,
                         "created": "2026-01-01T00:00:00+00:00"})
    statuses = {r.id: r.status for r in list_runs(tmp_path)}
    assert statuses == {dead.name: "interrupted", live.name: "running"}
    assert "status is 'interrupted'" in write_report(dead, charts=False).read_text()


def test_strategies_are_compared_by_success_and_model_calls_per_turn(tmp_path):
    """A grid over strategies gets a table of each strategy's success and its cost in model
    calls per user turn, both with intervals, and a model-calls chart split by strategy."""
    with RowsWriter(tmp_path) as writer:
        for i in range(10):
            common = {"persona": "friendly", "temperature": 0.0, "scenario": f"s{i % 5}",
                      "repeat": i // 5 + 1}
            writer.write(row(strategy="react", config_hash="rrrr", turn_model_calls=[2],
                             status="ok", **common))
            writer.write(row(strategy="plan-verify", config_hash="pppp",
                             turn_model_calls=[5, 6] if i % 2 else [5], model_calls=11,
                             status="failed" if i == 0 else "ok", **common))
    write_meta(tmp_path, {"grid_name": "strategies", "status": "finished",
                          "created": "2026-01-01T00:00:00+00:00"})
    report = write_report(tmp_path).read_text()
    section = report.split("## Strategies", 1)[1].split("\n## ", 1)[0]
    lines = {line.split("|")[1].strip(): line for line in section.splitlines()
             if line.startswith("| ") and "strategy" not in line}
    assert set(lines) == {"react", "plan-verify"}
    assert "| 2.00 |" in lines["react"] and "| 100% |" in lines["react"]
    assert "| 5.25 |" in lines["plan-verify"] and "| 90% |" in lines["plan-verify"]
    assert (tmp_path / "charts" / "model_calls.png").read_bytes().startswith(PNG_SIGNATURE)
    one = tmp_path / "one"
    synthetic_run(one)
    assert "## Strategies" not in write_report(one, charts=False).read_text()
